package notebook

import (
	"encoding/binary"
	"math/bits"
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

// appendString appends the string whose contents start at s[0] (just
// past its opening quote) decoded. It finds the closing quote as it goes
// (end, its index in s) and checks the UTF-8 of the text it passes
// (plainEnd), so Parse need not check the whole upload in a pass of its
// own. ok is false where unquoteFast's would be — a control byte, a
// surrogate, a malformed escape or bytes that are not UTF-8, left to
// encoding/json and the caller — and where no quote ends the string.
func appendString(dst, s []byte) (out []byte, end int, ok bool) {
	i, run := 0, 0 // run: where the text not yet appended starts
	for {
		k, valid := plainEnd(s, i)
		if !valid || k >= len(s) {
			return dst, 0, false
		}
		dst = append(dst, s[run:k]...)
		i = k
		switch s[i] {
		case '"':
			return dst, i, true
		case '\\':
		default:
			return dst, 0, false // a control byte
		}
		if i+1 >= len(s) {
			return dst, 0, false
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hexRune(s[i+2:])
			if !ok || (r >= 0xD800 && r < 0xE000) {
				return dst, 0, false // surrogates: encoding/json's rules
			}
			dst = utf8.AppendRune(dst, r)
			i += 4
		default:
			return dst, 0, false
		}
		i += 2
		run = i
	}
}

// stringFast is appendString without the decoded text: whether it
// decodes the string starting at s[0], and where its closing quote is.
func stringFast(s []byte) (end int, ok bool) {
	i := 0
	for {
		k, valid := plainEnd(s, i)
		if !valid || k >= len(s) {
			return 0, false
		}
		i = k
		switch s[i] {
		case '"':
			return i, true
		case '\\':
		default:
			return 0, false
		}
		if i+1 >= len(s) {
			return 0, false
		}
		switch s[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			r, ok := hexRune(s[i+2:])
			if !ok || (r >= 0xD800 && r < 0xE000) {
				return 0, false
			}
			i += 6
		default:
			return 0, false
		}
	}
}

// plainEnd is the index of the first quote, backslash or control byte
// of s at or after i (len(s) if none), and whether the text before it
// is valid UTF-8 (when not, the index is where the check failed). Most
// of an upload's bytes are the text of strings, ASCII with some Chinese:
// it tests eight bytes at a time for any of those bytes or a non-ASCII
// one, checks the runes it stops at, and goes back to eight at a time.
func plainEnd(s []byte, i int) (int, bool) {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i < len(s) {
		for ; i+8 <= len(s); i += 8 {
			x := binary.LittleEndian.Uint64(s[i:])
			// The high bit of a byte below 0x20, of a quote or backslash
			// (x^c-1 borrows), or of a non-ASCII byte. A borrow reaches
			// only bytes after a flagged one: the first flagged is exact.
			m := ((x - 0x20*ones) | ((x ^ '"'*ones) - ones) | ((x ^ '\\'*ones) - ones) | x) & highs
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '"' || c == '\\' || c < 0x20 {
				return i, true
			}
			i++
			continue
		}
		for i < len(s) && s[i] >= utf8.RuneSelf {
			// The leads that take any continuation bytes, checked here
			// (a call per rune was most of the time of Chinese text):
			// C2–DF one, E1–EC, EE, EF two.
			c := s[i]
			if c-0xE1 < 0x0C || c-0xEE < 2 {
				if i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 {
					i += 3
					continue
				}
			} else if c-0xC2 < 0x1E && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
				i += 2
				continue
			}
			n := runeLen(s, i)
			if n == 0 {
				return i, false
			}
			i += n
		}
	}
	return len(s), true
}

// runeLen is the length of the valid UTF-8 rune s[i] starts (not
// ASCII), or 0 if it is not one. Three-byte runes (Chinese) are checked
// here, the others by utf8.DecodeRune.
func runeLen(s []byte, i int) int {
	if c := s[i]; c >= 0xE0 && c < 0xF0 && i+2 < len(s) {
		lo, hi := byte(0x80), byte(0xBF)
		switch c {
		case 0xE0:
			lo = 0xA0 // no overlong forms
		case 0xED:
			hi = 0x9F // no surrogates
		}
		if c1, c2 := s[i+1], s[i+2]; c1 < lo || c1 > hi || c2&0xC0 != 0x80 {
			return 0
		}
		return 3
	}
	r, size := utf8.DecodeRune(s[i:])
	if r == utf8.RuneError && size == 1 {
		return 0
	}
	return size
}

// validUTF8 is utf8.Valid(p). utf8.Valid tests eight ASCII bytes at a
// time only until the first other byte, then goes byte by byte to the
// end; the course's notebooks are code and English with Chinese here
// and there, so this one goes back to eight at a time after each rune,
// jumps straight to the first non-ASCII byte of a word, and checks the
// three-byte runes of Chinese text itself (runeLen).
func validUTF8(p []byte) bool {
	const highs = 0x8080808080808080
	for i := 0; i < len(p); {
		if i+8 <= len(p) {
			w := binary.LittleEndian.Uint64(p[i:]) & highs
			if w == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(w) >> 3
		}
		if p[i] < utf8.RuneSelf {
			i++
			continue
		}
		n := runeLen(p, i)
		if n == 0 {
			return false
		}
		i += n
	}
	return true
}
