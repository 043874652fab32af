package notebook

import (
	"strings"
	"unicode/utf8"
)

// The typed decode hands every source and text field to
// MultilineString.UnmarshalJSON after encoding/json has already checked
// its syntax; going back through json.Unmarshal there would check and
// scan the same bytes twice more. These read the common forms directly
// and leave anything unusual (a surrogate escape, bytes that are not
// UTF-8) to encoding/json, so the result is always what it gives.

// unquoteFast decodes one JSON string token. ok is false when the token
// needs encoding/json.
func unquoteFast(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	in := b[1 : len(b)-1]
	esc := -1
	for i, c := range in {
		if c == '\\' {
			esc = i
			break
		}
		if c == '"' || c < 0x20 {
			return "", false
		}
	}
	if esc < 0 {
		if !utf8.Valid(in) {
			return "", false
		}
		return string(in), true
	}
	if !utf8.Valid(in[:esc]) {
		return "", false
	}
	var sb strings.Builder
	sb.Grow(len(in))
	sb.Write(in[:esc])
	for i := esc; i < len(in); {
		c := in[i]
		switch {
		case c == '\\':
			if i+1 >= len(in) {
				return "", false
			}
			switch in[i+1] {
			case '"', '\\', '/':
				sb.WriteByte(in[i+1])
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, ok := hexRune(in[i+2:])
				if !ok || (r >= 0xD800 && r < 0xE000) {
					return "", false // surrogates: encoding/json's rules
				}
				sb.WriteRune(r)
				i += 6
				continue
			default:
				return "", false
			}
			i += 2
		case c == '"' || c < 0x20:
			return "", false
		default:
			j := i
			for j < len(in) && in[j] != '\\' && in[j] != '"' && in[j] >= 0x20 {
				j++
			}
			if !utf8.Valid(in[i:j]) {
				return "", false
			}
			sb.Write(in[i:j])
			i = j
		}
	}
	return sb.String(), true
}

func hexRune(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// joinLinesFast decodes a JSON list of strings into their concatenation
// (nbformat's multi-line string). ok is false when the list needs
// encoding/json.
func joinLinesFast(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return "", false
	}
	var sb strings.Builder
	i, n := 1, len(b)-1
	skip := func() {
		for i < n && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
			i++
		}
	}
	skip()
	for first := true; i < n; first = false {
		if !first {
			if b[i] != ',' {
				return "", false
			}
			i++
			skip()
		}
		if i >= n || b[i] != '"' {
			return "", false
		}
		// The token ends at the first quote not escaped.
		j := i + 1
		for j < n && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		if j >= n {
			return "", false
		}
		part, ok := unquoteFast(b[i : j+1])
		if !ok {
			return "", false
		}
		sb.WriteString(part)
		i = j + 1
		skip()
	}
	return sb.String(), true
}
