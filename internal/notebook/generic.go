package notebook

import (
	"bytes"
	"encoding/json"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// decodeGeneric reads data into the generic form the schema is checked
// against (objects as map[string]any, arrays as []any, numbers as
// json.Number), as jsonschema.UnmarshalJSON does, in one pass over the
// bytes: encoding/json's Decoder scans each value once to find its end
// and again to decode it. Anything it does not accept — a syntax error
// above all — goes to jsonschema.UnmarshalJSON, whose error is the one
// reported.
func decodeGeneric(data []byte) (any, error) {
	p := genericParser{data: data}
	p.space()
	v, ok := p.value()
	if ok {
		p.space()
		if p.i == len(p.data) {
			return v, nil
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}

type genericParser struct {
	data []byte
	i    int
}

func (p *genericParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *genericParser) value() (any, bool) {
	if p.i >= len(p.data) {
		return nil, false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, true
	case p.literal("false"):
		return false, true
	case p.literal("null"):
		return nil, true
	}
	return nil, false
}

func (p *genericParser) literal(word string) bool {
	if bytes.HasPrefix(p.data[p.i:], []byte(word)) {
		p.i += len(word)
		return true
	}
	return false
}

func (p *genericParser) object() (any, bool) {
	p.i++ // '{'
	m := map[string]any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		m[k.(string)] = v // the last of duplicate keys wins, as in encoding/json
		done, ok := p.separator('}')
		if !ok {
			return nil, false
		}
		if done {
			return m, true
		}
	}
}

func (p *genericParser) array() (any, bool) {
	p.i++ // '['
	a := []any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		p.space()
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		a = append(a, v)
		done, ok := p.separator(']')
		if !ok {
			return nil, false
		}
		if done {
			return a, true
		}
	}
}

// separator reads what follows a member or element: ',' (more to come)
// or the closing byte (done); anything else is malformed (!ok).
func (p *genericParser) separator(closing byte) (done, ok bool) {
	p.space()
	if p.i >= len(p.data) {
		return false, false
	}
	switch p.data[p.i] {
	case ',':
		p.i++
		return false, true
	case closing:
		p.i++
		return true, true
	}
	return false, false
}

// str reads a string token; escapes and bytes unquoteFast leaves alone
// (surrogates, invalid UTF-8) are decoded by encoding/json.
func (p *genericParser) str() (any, bool) {
	start := p.i
	// The end is the first quote not escaped; control bytes before it
	// are refused by unquoteFast and encoding/json alike.
	j := stringEnd(p.data, p.i+1)
	if j < 0 {
		return nil, false
	}
	p.i = j + 1
	tok := p.data[start:p.i]
	if s, ok := unquoteFast(tok); ok {
		return s, true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return nil, false
	}
	return s, true
}

// number reads a number token with JSON's grammar, kept as its text.
func (p *genericParser) number() (any, bool) {
	d, start := p.data, p.i
	i := p.i
	if d[i] == '-' {
		i++
	}
	digits := func() bool {
		s := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i > s
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	p.i = i
	return json.Number(d[start:i]), true
}
