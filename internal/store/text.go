package store

import (
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// textMark starts a stored string that was escaped. Postgres TEXT holds
// neither NUL nor invalid UTF-8, and learner programs print both: such a
// string is stored as textMark + strconv.Quote(s), which is ASCII and
// reverses exactly. A string that happens to start with textMark is
// escaped too, so reading back is never ambiguous.
const textMark = "\x1bnpugrade-quoted:"

// lossless is a TEXT column that round-trips any Go string, whatever
// bytes it holds, on both databases.
type lossless string

// Value implements driver.Valuer.
func (t lossless) Value() (driver.Value, error) { return escapeText(string(t)), nil }

// Scan implements sql.Scanner.
func (t *lossless) Scan(v any) error {
	var s string
	switch x := v.(type) {
	case nil:
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		return fmt.Errorf("scan %T into a text column", v)
	}
	u, err := unescapeText(s)
	*t = lossless(u)
	return err
}

func escapeText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) && !strings.HasPrefix(s, textMark) {
		return s
	}
	return textMark + strconv.Quote(s)
}

func unescapeText(s string) (string, error) {
	q, ok := strings.CutPrefix(s, textMark)
	if !ok {
		return s, nil
	}
	u, err := strconv.Unquote(q)
	if err != nil {
		return s, fmt.Errorf("stored text %.40q is not a quoted string: %w", s, err)
	}
	return u, nil
}

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
