package domain

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Printable is s as a reader is shown it: NUL, other control characters
// (but newline, tab and carriage return) and bytes that are not UTF-8
// appear as \xNN escapes instead of being dropped or replaced, so what a
// learner's program printed is visible as it was. For free text from
// runners (failure reasons) it is also what is stored.
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, isHiddenControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isHiddenControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func isHiddenControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t' && r != '\r') || r == 0x7f
}
