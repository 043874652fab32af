package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Encode writes the notebook as Jupyter does (indented JSON, trailing
// newline). A notebook whose cells carry ids is declared nbformat 4.5 (and
// every cell gets one), so a starter or a rebuilt notebook made from a
// 4.0–4.4 answer is valid nbformat.
//
// Every upload is encoded once (its rebuilt notebook), so the cells are
// written directly instead of through encoding/json's reflection, which
// validates and compacts each cell's MarshalJSON output again. The bytes
// are those json.Encoder gives with SetEscapeHTML(false) and a one-space
// indent (TestEncodeMatchesEncodingJSON).
func Encode(nb *Notebook) ([]byte, error) {
	var scratch []byte
	return encode(nb, func(dst []byte, c *Cell) ([]byte, error) {
		return appendCellIndented(dst, c, &scratch)
	})
}

// encode writes nb indented, each cell with cell (at depth 2: what
// appendCellIndented writes).
func encode(nb *Notebook, cell func(dst []byte, c *Cell) ([]byte, error)) ([]byte, error) {
	nb.declareMinor()
	size := 4096
	for _, c := range nb.Cells {
		if c != nil {
			size += len(c.Source) + len(c.Source)/8 + 256
		}
	}
	dst := noZero(size) // every byte is appended before it is read
	dst = append(dst, "{\n \"cells\": "...)
	switch {
	case nb.Cells == nil:
		dst = append(dst, "null"...)
	case len(nb.Cells) == 0:
		dst = append(dst, "[]"...)
	default:
		dst = append(dst, '[')
		for i, c := range nb.Cells {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, "\n  "...)
			var err error
			if dst, err = cell(dst, c); err != nil {
				return nil, fmt.Errorf("encode notebook: cell %d: %w", i+1, err)
			}
		}
		dst = append(dst, "\n ]"...)
	}
	dst = append(dst, ",\n \"metadata\": "...)
	// The notebook's own metadata is written as json.Encoder writes a
	// map with SetEscapeHTML(false); cells' as json.Marshal does.
	meta, err := appendRawMap(nil, nb.Metadata, false, false)
	if err != nil {
		return nil, fmt.Errorf("encode notebook metadata: %w", err)
	}
	dst = indentCompact(dst, meta, 1)
	dst = append(dst, ",\n \"nbformat\": "...)
	dst = strconv.AppendInt(dst, int64(nb.NBFormat), 10)
	dst = append(dst, ",\n \"nbformat_minor\": "...)
	dst = strconv.AppendInt(dst, int64(nb.NBFormatMinor), 10)
	return append(dst, "\n}\n"...), nil
}

// appendCellIndented writes c as it stands in an indented notebook (at
// depth 2): its head and tail compact, then indented, and its source
// lines indented as they are written. scratch is reused for the
// compact parts.
func appendCellIndented(dst []byte, c *Cell, scratch *[]byte) ([]byte, error) {
	if c == nil {
		return append(dst, "null"...), nil
	}
	head, err := appendCellHead((*scratch)[:0], c)
	if err != nil {
		return nil, err
	}
	dst = indentCompact(dst, head, 2)
	dst = appendLinesIndented(dst, string(c.Source))
	tail, err := appendCellTail(head[:0], c)
	if err != nil {
		return nil, err
	}
	*scratch = tail
	return indentCompact(dst, tail, 3), nil
}

// indentCompact appends src, compact JSON that this file wrote, indented
// by one space per level as json.Indent(dst, src, "", " ") does: an empty
// object or array stays "{}" or "[]". It skips string contents with
// IndexByte instead of stepping json's scanner through every byte.
// depth is the level src starts at: a part of a document (a cell's head
// or tail) is indented as it is in the whole.
func indentCompact(dst, src []byte, depth int) []byte {
	newline := func() {
		dst = append(dst, '\n')
		for i := 0; i < depth; i++ {
			dst = append(dst, ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexAny(src[j:], `"\`)
				if k < 0 {
					j = len(src)
					break
				}
				j += k
				if src[j] == '"' {
					break
				}
				j += 2 // an escape: the escaped byte is never the end
			}
			if j >= len(src) {
				return append(dst, src[i:]...)
			}
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendCell writes c as (*Cell).MarshalJSON does.
func appendCell(dst []byte, c *Cell) ([]byte, error) {
	if c == nil {
		return append(dst, "null"...), nil
	}
	dst, err := appendCellHead(dst, c)
	if err != nil {
		return nil, err
	}
	dst = appendLines(dst, string(c.Source))
	return appendCellTail(dst, c)
}

// appendCellHead writes what appendCell writes before the source's
// lines: every key before it (the source is the last key but for a
// markdown or raw cell's attachments), up to `"source":`.
func appendCellHead(dst []byte, c *Cell) ([]byte, error) {
	var err error
	dst = append(dst, '{')
	if c.ID != "" {
		dst = append(dst, `"id":`...)
		dst = appendJSONString(dst, c.ID, true)
		dst = append(dst, ',')
	}
	dst = append(dst, `"cell_type":`...)
	dst = appendJSONString(dst, c.CellType, true)
	if c.CellType == "code" {
		dst = append(dst, `,"execution_count":`...)
		if c.ExecutionCount == nil {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendInt(dst, int64(*c.ExecutionCount), 10)
		}
	}
	dst = append(dst, `,"metadata":`...)
	if dst, err = appendRawMap(dst, c.Metadata, true, true); err != nil {
		return nil, err
	}
	if c.CellType == "code" {
		dst = append(dst, `,"outputs":[`...)
		for i, o := range c.Outputs {
			if i > 0 {
				dst = append(dst, ',')
			}
			// Outputs are rare where speed matters (rebuilt notebooks
			// have none): encoding/json writes them.
			b, err := json.Marshal(o)
			if err != nil {
				return nil, err
			}
			dst = append(dst, b...)
		}
		dst = append(dst, ']')
	}
	return append(dst, `,"source":`...), nil
}

// appendCellTail writes what appendCell writes after the source's lines.
func appendCellTail(dst []byte, c *Cell) ([]byte, error) {
	if c.CellType != "code" && len(c.Attachments) > 0 {
		b, err := json.Marshal(c.Attachments)
		if err != nil {
			return nil, err
		}
		dst = append(dst, `,"attachments":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

// appendLines writes a multi-line string as MultilineString.MarshalJSON does.
func appendLines(dst []byte, s string) []byte {
	dst = append(dst, '[')
	for first := true; s != ""; first = false {
		if !first {
			dst = append(dst, ',')
		}
		line := s
		if i := indexNewline(s); i >= 0 {
			line = s[:i+1]
		}
		dst = appendJSONString(dst, line, true)
		s = s[len(line):]
	}
	return append(dst, ']')
}

// appendLinesIndented writes a cell's source as appendLines does, then
// indented where it stands in a notebook (its list at depth 3), in one
// step: the lines are most of a notebook's bytes.
func appendLinesIndented(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, "[]"...)
	}
	dst = append(dst, '[')
	for first := true; s != ""; first = false {
		if !first {
			dst = append(dst, ',')
		}
		dst = append(dst, "\n    "...)
		line := s
		if i := indexNewline(s); i >= 0 {
			line = s[:i+1]
		}
		dst = appendJSONString(dst, line, true)
		s = s[len(line):]
	}
	return append(dst, "\n   ]"...)
}

func indexNewline(s string) int { return strings.IndexByte(s, '\n') }

// appendRawMap writes a metadata map with its keys sorted; nil is null
// unless nilAsEmpty. Each value is compacted (escaping <, > and & when
// escapeHTML), as encoding/json writes a json.RawMessage.
func appendRawMap(dst []byte, m map[string]json.RawMessage, nilAsEmpty, escapeHTML bool) ([]byte, error) {
	if m == nil && !nilAsEmpty {
		return append(dst, "null"...), nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k, escapeHTML)
		dst = append(dst, ':')
		v := m[k]
		if len(v) == 0 {
			dst = append(dst, "null"...)
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("metadata %q: %w", k, err)
		}
		b := buf.Bytes()
		if escapeHTML && bytes.ContainsAny(b, "<>&\u2028\u2029") {
			var esc bytes.Buffer
			json.HTMLEscape(&esc, b)
			b = esc.Bytes()
		}
		dst = append(dst, b...)
	}
	return append(dst, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does.
func appendJSONString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || (b != '<' && b != '>' && b != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
