package notebook

import "bytes"

// keepLoneSurrogates rewrites the JSON escapes of lone UTF-16 surrogates
// (\ud800 with no low half after it, or a low half alone) into the
// escaped text of the escape (\\ud800). Python's json writes a lone
// surrogate a learner's program printed that way, and Go's decoder would
// turn it into U+FFFD, losing which one it was; as text it survives
// decoding, storing and display, and reads as what was printed.
func keepLoneSurrogates(data []byte) []byte {
	if !bytes.Contains(data, []byte(`\u`)) && !bytes.Contains(data, []byte(`\U`)) {
		return data
	}
	var out []byte // allocated on the first rewrite only
	last := 0
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !inString {
			if c == '"' {
				inString = true
			}
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if i+1 >= len(data) {
				break
			}
			if data[i+1] != 'u' {
				i++ // skip the escaped character (\\, \", …)
				break
			}
			v, ok := hex4(data, i+2)
			if !ok {
				break
			}
			isHigh, isLow := v >= 0xd800 && v <= 0xdbff, v >= 0xdc00 && v <= 0xdfff
			if isHigh {
				if w, ok := hex4(data, i+8); ok && i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' && w >= 0xdc00 && w <= 0xdfff {
					i += 11 // a valid pair
					break
				}
			}
			if isHigh || isLow {
				out = append(append(out, data[last:i]...), '\\', '\\')
				last = i + 1
			}
			i += 5
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

func hex4(data []byte, at int) (int, bool) {
	if at+4 > len(data) {
		return 0, false
	}
	v := 0
	for _, c := range data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			v = v*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v*16 + int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v*16 + int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
