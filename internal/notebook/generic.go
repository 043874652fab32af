package notebook

import (
	"bytes"
	"encoding/json"
	"strings"
	"unsafe"

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
	if validUTF8(data) {
		p.arena = noZero(len(data))
	}
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
	// arena, when not nil, holds every string decoded so far, back to
	// back, and data is known to be valid UTF-8 (see text). Its bytes are
	// never changed once written: strings are views of them.
	arena []byte
	// bounds, when set, are prescan's, enforced as the values are read
	// (decodeOnePass); depth and values count as prescan does.
	bounds        bounds
	depth, values int
}

// bounds are the limits of prescan a decode enforces itself (zero: no
// limit). It counts every string (keys included), number, literal and
// container as prescan does, and nesting likewise, so it fails wherever
// prescan would, at the latest; Parse then runs prescan for its error.
type bounds struct {
	maxDepth, maxValues, maxCells int
}

// count counts one value (a string, number, literal or container) and
// says whether the bound on values still holds.
func (p *genericParser) count() bool {
	p.values++
	return p.bounds.maxValues == 0 || p.values <= p.bounds.maxValues
}

// open counts a container whose opening byte p is at and steps past it;
// false: a bound is passed.
func (p *genericParser) open() bool {
	p.i++
	p.depth++
	return p.count() && (p.bounds.maxDepth == 0 || p.depth <= p.bounds.maxDepth)
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
		return p.count()
	}
	return false
}

func (p *genericParser) object() (any, bool) {
	if !p.open() { // '{'
		return nil, false
	}
	m := map[string]any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		p.depth--
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, false
		}
		k, ok := p.text()
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
		m[k] = v // the last of duplicate keys wins, as in encoding/json
		done, ok := p.separator('}')
		if !ok {
			return nil, false
		}
		if done {
			p.depth--
			return m, true
		}
	}
}

func (p *genericParser) array() (any, bool) {
	if !p.open() { // '['
		return nil, false
	}
	a := []any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		p.depth--
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
			p.depth--
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

// str reads a string token as a generic value.
func (p *genericParser) str() (any, bool) {
	s, ok := p.text()
	if !ok {
		return nil, false
	}
	return s, true
}

// text reads a string token; escapes and bytes the fast readers leave
// alone (surrogates, invalid UTF-8) are decoded by encoding/json.
//
// With an arena, data is valid UTF-8 or refused: each string is checked
// as it is decoded (appendString), one that is not UTF-8 fails the
// decode (the caller names the problem), and each string is decoded into the arena
// right after the previous one, as a view of it instead of an allocation
// of its own: the strings of a JSON list read one after another are
// then one run of the arena (multiline joins them for free). Made as
// large as data, the arena never grows (no string decodes to more bytes
// than its token has); were it to, append copies it, views already made
// keep the old bytes, and a run still reads the same.
func (p *genericParser) text() (string, bool) {
	if !p.count() {
		return "", false
	}
	if p.arena != nil {
		a := len(p.arena)
		var end int
		var ok bool
		if p.arena, end, ok = appendString(p.arena, p.data[p.i+1:]); ok {
			p.i += end + 2
			return p.arenaString(a), true
		}
		p.arena = p.arena[:a] // nothing views what it wrote
	}
	start := p.i
	// The end is the first quote not escaped; control bytes before it
	// are refused by the fast readers and encoding/json alike.
	j := stringEnd(p.data, p.i+1)
	if j < 0 {
		return "", false
	}
	p.i = j + 1
	tok := p.data[start:p.i]
	if p.arena == nil {
		if s, ok := unquoteFast(tok); ok {
			return s, true
		}
	} else if !validUTF8(tok) {
		return "", false // with an arena, data is UTF-8 or refused
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", false
	}
	if p.arena == nil {
		return s, true
	}
	a := len(p.arena)
	p.arena = append(p.arena, s...)
	return p.arenaString(a), true
}

// noZero is an empty slice with room for n bytes, allocated without
// zeroing them first (strings.Builder's Grow does that): make zeroed the
// arena, as large as the upload, only for every byte to be overwritten.
// Its bytes past its length are old memory: they are only ever written
// (append) before being read.
func noZero(n int) []byte {
	var sb strings.Builder
	sb.Grow(n)
	sb.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(sb.String()), n)[:0]
}

// arenaString is the arena from offset a on, as a string.
func (p *genericParser) arenaString(a int) string {
	if a == len(p.arena) {
		return ""
	}
	return unsafe.String(&p.arena[a], len(p.arena)-a)
}

// number reads a number token with JSON's grammar, kept as its text.
func (p *genericParser) number() (any, bool) {
	start := p.i
	if !p.skipNumber() {
		return nil, false
	}
	return json.Number(p.data[start:p.i]), true
}

// skipNumber reads a number token with JSON's grammar.
func (p *genericParser) skipNumber() bool {
	if !p.count() {
		return false
	}
	d := p.data
	i := p.i
	if i < len(d) && d[i] == '-' {
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
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	p.i = i
	return true
}

// skipValue reads a value as value does, accepting and refusing exactly
// what it does, but builds nothing: for the parts of a notebook whose
// generic form is not needed (lazyCells).
func (p *genericParser) skipValue() bool {
	if p.i >= len(p.data) {
		return false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.skipContainer('}', true)
	case c == '[':
		return p.skipContainer(']', false)
	case c == '"':
		return p.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.skipNumber()
	}
	return p.literal("true") || p.literal("false") || p.literal("null")
}

// skipString reads a string token as text does, refusing one that does
// not decode, but keeping nothing.
func (p *genericParser) skipString() bool {
	if p.arena != nil {
		if end, ok := stringFast(p.data[p.i+1:]); ok {
			p.i += end + 2
			return p.count()
		}
	}
	a := len(p.arena)
	_, ok := p.text()
	if p.arena != nil {
		p.arena = p.arena[:a] // nothing views what text wrote
	}
	return ok
}

// skipContainer reads an object (members: key, ':', value) or an array
// as object and array do.
func (p *genericParser) skipContainer(closing byte, members bool) bool {
	if !p.open() { // '{' or '['
		return false
	}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == closing {
		p.i++
		p.depth--
		return true
	}
	for {
		p.space()
		if members {
			if p.i >= len(p.data) || p.data[p.i] != '"' || !p.skipString() {
				return false
			}
			p.space()
			if p.i >= len(p.data) || p.data[p.i] != ':' {
				return false
			}
			p.i++
			p.space()
		}
		if !p.skipValue() {
			return false
		}
		done, ok := p.separator(closing)
		if !ok {
			return false
		}
		if done {
			p.depth--
			return true
		}
	}
}
