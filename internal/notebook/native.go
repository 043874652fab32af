package notebook

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The official schema's validator is most of what checking a cell costs
// once the cell is decoded: it walks a generic copy of the cell, which
// the decode must build for it. Most cells of an upload have one of a
// few plain shapes, which the decode can vouch for as it reads them:
// nativeValid passes those without the validator, and leaves every
// other cell to it, so an unusual notebook gets exactly the problems it
// got before (TestNativeMatchesSchema, FuzzNativeMatchesSchema).

// cellShape is what the decode saw of a cell that the typed form does
// not keep: the keys it had, and whether every value had a form that
// nativeValid knows to be valid whatever the nbformat minor version.
type cellShape struct {
	keys  uint8
	plain bool
}

// Bits of cellShape.keys.
const (
	keyID = 1 << iota
	keyCellType
	keySource
	keyMetadata
	keyOutputs
	keyExecCount
	keyAttachments
)

// Bits of an output's keys (outputNative).
const (
	outType = 1 << iota
	outName
	outText
	outData
	outMetadata
	outExecCount
	outEname
	outEvalue
	outTraceback
)

// nativeValid says that cell c, decoded with shape sh, is valid against
// the nbformat 4.minor schema of its cell_type as schemaProblems checks
// it (its id as decode completed it, its defaults filled in). false is
// "not known", never "invalid": the validator decides then.
func nativeValid(sh cellShape, c *Cell, minor int) bool {
	if !sh.plain || sh.keys&keySource == 0 || c == nil {
		return false
	}
	if minor < 5 {
		if sh.keys&keyID != 0 {
			return false // an id, even empty, is an extra key before 4.5
		}
	} else if !validCellID(c.ID) {
		return false
	}
	switch c.CellType {
	case "code":
		if sh.keys&keyAttachments != 0 {
			return false
		}
	case "markdown", "raw":
		if sh.keys&(keyOutputs|keyExecCount|keyAttachments) != 0 {
			return false
		}
	default:
		return false
	}
	return metadataNative(c.Metadata)
}

// outputNative says that output o, read with the keys given and plain
// values (plain: text and data values of the types the schema wants,
// metadata an object, execution_count not negative), is valid against
// its output_type's definition. An output_type the schema does not
// know is not checked by schemaProblems, so it is no problem here.
func outputNative(o *Output, keys uint16, plain bool) bool {
	// Each output type's keys are all required and none other allowed.
	var want uint16
	switch o.OutputType {
	case OutputStream:
		want = outType | outName | outText
	case OutputExecuteResult:
		want = outType | outExecCount | outData | outMetadata
	case OutputDisplayData:
		want = outType | outData | outMetadata
	case OutputError:
		want = outType | outEname | outEvalue | outTraceback
	default:
		return true
	}
	return plain && keys == want
}

// metadataNative says a cell's metadata passes the properties the
// schema defines for some cell type (others may be anything). It asks
// of each the plainest form, for every cell type and minor version
// alike: name a non-empty string without escapes, tags a short list of
// such strings without commas, each once, jupyter an object, collapsed
// a boolean, scrolled a boolean or "auto", format a string; execution
// (strings only, from 4.4) is left to the validator.
func metadataNative(meta map[string]json.RawMessage) bool {
	for k, v := range meta {
		switch k {
		case "name":
			if !plainJSONString(v) || len(v) == 2 {
				return false
			}
		case "tags":
			if !tagsNative(v) {
				return false
			}
		case "jupyter":
			if len(v) == 0 || v[0] != '{' {
				return false
			}
		case "collapsed":
			if s := string(v); s != "true" && s != "false" {
				return false
			}
		case "scrolled":
			if s := string(v); s != "true" && s != "false" && s != `"auto"` {
				return false
			}
		case "format":
			if len(v) == 0 || v[0] != '"' {
				return false
			}
		case "execution":
			return false
		}
	}
	return true
}

// plainJSONString says v is one JSON string token without escapes or
// line and paragraph separators (U+2028, U+2029: lead byte 0xE2), so
// that no regexp dialect's '.' can refuse one of its characters.
func plainJSONString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	in := v[1 : len(v)-1]
	return bytes.IndexByte(in, '"') < 0 && bytes.IndexByte(in, '\\') < 0 && bytes.IndexByte(in, 0xE2) < 0
}

// tagsNative says v is a list of at most 16 plain, non-empty strings
// without commas, none twice (metadata_tags).
func tagsNative(v []byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return false
	}
	var seen [16]string
	n := 0
	for rest := bytes.TrimSpace(v[1 : len(v)-1]); len(rest) > 0; {
		if rest[0] != '"' {
			return false
		}
		end := bytes.IndexByte(rest[1:], '"')
		if end < 0 {
			return false
		}
		tok := rest[:end+2]
		if !plainJSONString(tok) || len(tok) == 2 || bytes.IndexByte(tok, ',') >= 0 || n == len(seen) {
			return false
		}
		for _, s := range seen[:n] {
			if s == string(tok) {
				return false
			}
		}
		seen[n] = string(tok)
		n++
		rest = bytes.TrimSpace(rest[end+2:])
		if len(rest) > 0 {
			if rest[0] != ',' {
				return false
			}
			if rest = bytes.TrimSpace(rest[1:]); len(rest) == 0 {
				return false
			}
		}
	}
	return true
}

// jsonMime says a MIME bundle key matches the schema's
// ^application/(.*\+)?json$, whose values may be any JSON; it asks for
// the plain form (letters, digits, '.', '-', '+' before "+json") so
// that no regexp dialect disagrees.
func jsonMime(k string) bool {
	rest, ok := strings.CutPrefix(k, "application/")
	if !ok || !strings.HasSuffix(rest, "json") {
		return false
	}
	if rest == "json" {
		return true
	}
	mid, ok := strings.CutSuffix(rest, "+json")
	if !ok {
		return false
	}
	for i := 0; i < len(mid); i++ {
		switch c := mid[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '+':
		default:
			return false
		}
	}
	return true
}

// rootNative says the notebook around its cells (top, its generic form
// with the cells left out) is valid against the schema of minor: the
// four keys and no others, nbformat 4, nbformat_minor an integer no
// less than minor, and metadata whose kernelspec and language_info
// have their required strings; title a string, authors a list; an
// orig_nbformat is left to the validator.
func rootNative(top map[string]any, minor int) bool {
	if len(top) != 4 {
		return false
	}
	if _, ok := top["cells"].([]any); !ok {
		return false
	}
	if n, ok := top["nbformat"].(json.Number); !ok || n != "4" {
		return false
	}
	switch n := top["nbformat_minor"].(type) {
	case json.Number:
		if len(n) != 1 || n[0] < byte('0'+minor) || n[0] > '9' {
			return false
		}
	case int:
		if n < minor || n > 9 {
			return false
		}
	default:
		return false
	}
	meta, ok := top["metadata"].(map[string]any)
	if !ok {
		return false
	}
	for k, v := range meta {
		switch k {
		case "kernelspec":
			if !stringFields(v, []string{"name", "display_name"}, nil) {
				return false
			}
		case "language_info":
			if !stringFields(v, []string{"name"}, []string{"file_extension", "mimetype", "pygments_lexer"}) {
				return false
			}
			if cm, ok := v.(map[string]any)["codemirror_mode"]; ok {
				switch cm.(type) {
				case string, map[string]any:
				default:
					return false
				}
			}
		case "title":
			if _, ok := v.(string); !ok {
				return false
			}
		case "authors":
			if _, ok := v.([]any); !ok {
				return false
			}
		case "orig_nbformat":
			return false
		}
	}
	return true
}

// stringFields says v is an object whose required fields are present
// and strings, and whose optional fields are strings where present.
func stringFields(v any, required, optional []string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	for _, f := range required {
		if _, ok := m[f].(string); !ok {
			return false
		}
	}
	for _, f := range optional {
		if x, ok := m[f]; ok {
			if _, ok := x.(string); !ok {
				return false
			}
		}
	}
	return true
}
