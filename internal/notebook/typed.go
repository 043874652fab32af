package notebook

import (
	"encoding/json"
	"strconv"
	"strings"
)

// decodeOnePass reads data once into both forms Parse needs: the generic
// one the schema is checked against (as decodeGeneric gives it, but with
// the strings of each cell's source empty, as schemaProblems lightens
// them anyway) and the
// typed Notebook (as json.Unmarshal gives it). The typed fields are taken
// from the generic values as they are read — raw JSON fields are the
// value's own bytes — instead of a second decode with encoding/json's
// reflection, which was most of an upload's parse.
//
// ok is false for anything outside the shapes it builds exactly as
// encoding/json would (a null where an object belongs, a number that is
// not an int, a key that differs from a field's name only in case, a
// repeated field, a syntax error, ...): decode then takes the two-pass
// way, whose results and errors are the reference (TestDecodeOnePass).
// cellRaw holds each cell's own bytes (for schemaProblems' memo).
//
// b are prescan's bounds, enforced as the decode goes (!ok past one),
// so that an upload within them is walked once, not also by prescan.
//
// validUTF8 says data must be valid UTF-8: its strings are then checked
// as they are decoded into one arena (genericParser.text), and one that
// is not UTF-8 fails the decode (!ok), for decode to say so; without
// it, such bytes decode as encoding/json decodes them.
//
// With lazyCells, the generic form of each cell is left out (a nil in
// the cells list): a cell's is needed only where the schema check does
// not remember the cell (cellMemo), and cellDoc makes it from cellRaw
// then. Most cells of an upload are remembered: building theirs was
// most of what the decode allocated.
func decodeOnePass(data []byte, validUTF8, lazyCells bool, b bounds) (doc any, nb *Notebook, cellRaw [][]byte, ok bool) {
	doc, nb, cellRaw, _, ok = decodeShapes(data, validUTF8, lazyCells, b)
	return doc, nb, cellRaw, ok
}

// decodeShapes is decodeOnePass that also returns each cell's shape,
// for nativeValid.
func decodeShapes(data []byte, validUTF8, lazyCells bool, b bounds) (doc any, nb *Notebook, cellRaw [][]byte, shapes []cellShape, ok bool) {
	p := typedParser{genericParser: genericParser{data: data, bounds: b}, lazyCells: lazyCells}
	if validUTF8 {
		p.arena = noZero(len(data))
	}
	p.space()
	nb = &Notebook{}
	top, ok := p.members(func(key string) (any, bool) {
		switch key {
		case "cells":
			var cv []any
			cv, nb.Cells, ok = p.cells()
			return cv, ok
		case "metadata":
			var mv map[string]any
			mv, nb.Metadata, ok = p.rawMap()
			return mv, ok
		case "nbformat":
			return p.int(&nb.NBFormat)
		case "nbformat_minor":
			return p.int(&nb.NBFormatMinor)
		}
		return p.unknown(key, notebookFields)
	})
	if !ok {
		return nil, nil, nil, nil, false
	}
	p.space()
	if p.i != len(p.data) {
		return nil, nil, nil, nil, false
	}
	return top, nb, p.cellRaw, p.shapes, true
}

// The JSON names of Notebook's, Cell's and Output's fields:
// encoding/json also fills a field from a key that matches it in another
// case, which the one-pass decode leaves to it.
var (
	notebookFields = []string{"cells", "metadata", "nbformat", "nbformat_minor"}
	cellFields     = []string{"id", "cell_type", "source", "metadata", "outputs", "execution_count", "attachments"}
	outputFields   = []string{"output_type", "name", "text", "data", "metadata", "execution_count", "ename", "evalue", "traceback"}
)

type typedParser struct {
	genericParser
	cellRaw   [][]byte // each cell's bytes, in order (the last "cells" read)
	shapes    []cellShape
	shape     cellShape // of the cell being read
	lazyCells bool      // cells are read without their generic form (decodeOnePass)
	// skip is set while a value's generic form is not wanted: the
	// readers then return nil for it and build nothing.
	skip bool
	// genericOnly says the typed form is not wanted (cellDoc): a cell's
	// source, whose generic form is empty strings, is only skipped (the
	// decode that took the cell's bytes decoded it already).
	genericOnly bool
	slab        []byte // where raw copies small values' bytes (keep)
}

// peek is the next byte after white space (0 at the end).
func (p *typedParser) peek() byte {
	p.space()
	if p.i >= len(p.data) {
		return 0
	}
	return p.data[p.i]
}

// members reads an object, handing each key to value, which reads that
// key's value and returns its generic form. A key seen twice fails: the
// two decodes would merge it differently.
func (p *typedParser) members(value func(key string) (any, bool)) (map[string]any, bool) {
	if p.peek() != '{' || !p.open() {
		return nil, false
	}
	var m map[string]any
	var seen keySet // the keys, when m is not built
	if !p.skip {
		m = map[string]any{}
	}
	if p.peek() == '}' {
		p.i++
		p.depth--
		return m, true
	}
	for {
		if p.peek() != '"' {
			return nil, false
		}
		key, ok := p.text()
		if !ok {
			return nil, false
		}
		if m != nil {
			if _, dup := m[key]; dup {
				return nil, false
			}
		} else if seen.dup(key) {
			return nil, false
		}
		if p.peek() != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := value(key)
		if !ok {
			return nil, false
		}
		if m != nil {
			m[key] = v
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			p.depth--
			return m, true
		default:
			return nil, false
		}
	}
}

// elements reads an array, each element with value.
func (p *typedParser) elements(value func() (any, bool)) ([]any, bool) {
	if p.peek() != '[' || !p.open() {
		return nil, false
	}
	var a []any
	if !p.skip {
		a = []any{}
	}
	if p.peek() == ']' {
		p.i++
		p.depth--
		return a, true
	}
	for {
		p.space()
		v, ok := value()
		if !ok {
			return nil, false
		}
		if !p.skip {
			a = append(a, v)
		}
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			p.depth--
			return a, true
		default:
			return nil, false
		}
	}
}

// unknown reads the value of a key the typed form has no field for.
func (p *typedParser) unknown(key string, fields []string) (any, bool) {
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return nil, false // Unicode case folding: leave it to encoding/json
		}
	}
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return nil, false
		}
	}
	return p.anyValue()
}

// anyValue reads any value: its generic form, or none when p.skip.
func (p *typedParser) anyValue() (any, bool) {
	if p.skip {
		return nil, p.skipValue()
	}
	return p.value()
}

// raw reads any value and returns it with a copy of its bytes.
func (p *typedParser) raw() (any, json.RawMessage, bool) {
	start := p.i
	v, ok := p.anyValue()
	if !ok {
		return nil, nil, false
	}
	return v, p.keep(p.data[start:p.i]), true
}

// keep copies b, a small one into a slab shared with others (a
// metadata value is a few bytes: one allocation each was most of
// them). The copy's capacity is its length, so an append to it never
// reaches the next.
func (p *typedParser) keep(b []byte) json.RawMessage {
	const slabSize = 8 << 10
	if len(b) > slabSize/8 {
		return append(json.RawMessage(nil), b...)
	}
	if cap(p.slab)-len(p.slab) < len(b) {
		p.slab = make([]byte, 0, slabSize)
	}
	start := len(p.slab)
	p.slab = append(p.slab, b...)
	return p.slab[start:len(p.slab):len(p.slab)]
}

// keySet tells whether a key was seen before in an object, without a
// map for the few keys most objects have.
type keySet struct {
	few  [16]string
	n    int
	many map[string]struct{}
}

func (s *keySet) dup(k string) bool {
	if s.many != nil {
		if _, ok := s.many[k]; ok {
			return true
		}
		s.many[k] = struct{}{}
		return false
	}
	for _, f := range s.few[:s.n] {
		if f == k {
			return true
		}
	}
	if s.n < len(s.few) {
		s.few[s.n] = k
		s.n++
		return false
	}
	s.many = make(map[string]struct{}, 2*len(s.few))
	for _, f := range s.few {
		s.many[f] = struct{}{}
	}
	s.many[k] = struct{}{}
	return false
}

// rawMap reads an object into map[string]json.RawMessage.
func (p *typedParser) rawMap() (map[string]any, map[string]json.RawMessage, bool) {
	out := map[string]json.RawMessage{}
	m, ok := p.members(func(key string) (any, bool) {
		v, raw, ok := p.raw()
		out[key] = raw
		return v, ok
	})
	return m, out, ok
}

// string reads a JSON string into *dst.
func (p *typedParser) string(dst *string) (any, bool) {
	if p.peek() != '"' {
		return nil, false
	}
	v, ok := p.text()
	if !ok {
		return nil, false
	}
	*dst = v
	if p.skip {
		return nil, true
	}
	return v, true
}

// int reads a JSON integer into *dst.
func (p *typedParser) int(dst *int) (any, bool) {
	start := p.i
	if p.i >= len(p.data) || (p.data[p.i] != '-' && (p.data[p.i] < '0' || p.data[p.i] > '9')) || !p.skipNumber() {
		return nil, false // not a number (value would read it, but no int comes of it)
	}
	n := string(p.data[start:p.i])
	i, err := strconv.ParseInt(n, 10, strconv.IntSize)
	if err != nil {
		return nil, false
	}
	*dst = int(i)
	if p.skip {
		return nil, true
	}
	return json.Number(n), true
}

// intPtr reads a JSON integer or null into *dst.
func (p *typedParser) intPtr(dst **int) (any, bool) {
	if p.peek() == 'n' {
		*dst = nil
		return p.value()
	}
	var i int
	v, ok := p.int(&i)
	if ok {
		*dst = &i
	}
	return v, ok
}

// multiline reads nbformat's string or list of strings; an object (a
// MIME bundle's JSON data) is kept as its text, as
// MultilineString.UnmarshalJSON does.
//
// light gives the generic form of the text as schemaProblems checks a
// cell's source (lighten): each string empty. Only its type matters to
// the schema, and an empty string costs no allocation of its own.
func (p *typedParser) multiline(dst *MultilineString, light bool) (any, bool) {
	str := func() (any, bool) {
		if p.peek() != '"' {
			return nil, false
		}
		if light && p.genericOnly {
			// cellDoc reads bytes the decode already read as this cell:
			// the string decodes, only its end is wanted.
			j := stringEnd(p.data, p.i+1)
			if j < 0 {
				return nil, false
			}
			p.i = j + 1
			return "", true
		}
		s, ok := p.text()
		if !ok {
			return nil, false
		}
		*dst = MultilineString(s)
		if light || p.skip {
			return "", true
		}
		return s, true
	}
	switch p.peek() {
	case '"':
		return str()
	case '[':
		if p.arena != nil {
			// The lines are decoded back to back into the arena: their
			// concatenation is the run they fill.
			a := len(p.arena)
			v, ok := p.elements(str)
			*dst = MultilineString(p.arenaString(a))
			return v, ok
		}
		var sb strings.Builder
		v, ok := p.elements(func() (any, bool) {
			v, ok := str()
			sb.WriteString(string(*dst))
			return v, ok
		})
		*dst = MultilineString(sb.String())
		return v, ok
	case '{':
		start := p.i
		v, ok := p.anyValue()
		*dst = MultilineString(p.data[start:p.i])
		return v, ok
	}
	return nil, false
}

func (p *typedParser) cells() ([]any, []*Cell, bool) {
	cells := []*Cell{}
	p.cellRaw, p.shapes = nil, nil
	var slab []Cell // cells are allocated a few at a time: one each was a fifth of the allocations
	v, ok := p.elements(func() (any, bool) {
		if len(slab) == 0 {
			slab = make([]Cell, min(max(len(cells), 4), 64))
		}
		c := &slab[0]
		slab = slab[1:]
		if cells = append(cells, c); p.bounds.maxCells > 0 && len(cells) > p.bounds.maxCells {
			return nil, false
		}
		start := p.i
		p.skip = p.lazyCells
		p.shape = cellShape{plain: true}
		v, ok := p.cell(c)
		p.skip = false
		p.cellRaw = append(p.cellRaw, p.data[start:p.i])
		p.shapes = append(p.shapes, p.shape)
		if p.lazyCells {
			return nil, ok // not a nil map: cellDoc makes it
		}
		return v, ok
	})
	return v, cells, ok
}

func (p *typedParser) cell(c *Cell) (any, bool) {
	sh := &p.shape
	m, ok := p.members(func(key string) (any, bool) {
		switch key {
		case "id":
			sh.keys |= keyID
			return p.string(&c.ID)
		case "cell_type":
			sh.keys |= keyCellType
			return p.string(&c.CellType)
		case "source":
			sh.keys |= keySource
			sh.plain = sh.plain && p.peek() != '{'
			return p.multiline(&c.Source, true)
		case "metadata":
			sh.keys |= keyMetadata
			m, raw, ok := p.rawMap()
			c.Metadata = raw
			return m, ok
		case "outputs":
			sh.keys |= keyOutputs
			v, outs, ok := p.outputs()
			c.Outputs = outs
			return v, ok
		case "execution_count":
			sh.keys |= keyExecCount
			v, ok := p.intPtr(&c.ExecutionCount)
			sh.plain = sh.plain && (c.ExecutionCount == nil || *c.ExecutionCount >= 0)
			return v, ok
		case "attachments":
			sh.keys |= keyAttachments
			if p.peek() == 'n' {
				return nil, false // a RawMessage of null: encoding/json's business
			}
			v, raw, ok := p.raw()
			c.Attachments = raw
			return v, ok
		}
		sh.plain = false
		return p.unknown(key, cellFields)
	})
	return m, ok
}

// cellDoc is the generic form of cell c, as decodeOnePass gives it
// without lazyCells and decode completes it (the id c has, the defaults
// of fillDocDefaults), made from the cell's bytes raw, which the
// decode took: decodeOnePass with lazyCells left it out.
func cellDoc(raw []byte, c *Cell) map[string]any {
	// raw is part of a document found valid UTF-8 (decode refuses any
	// other before it keeps cells' bytes), cut at ASCII bytes: with an
	// arena, a string that is not UTF-8 would fail the decode. The
	// arena need not hold the source: it is only skipped.
	p := typedParser{genericParser: genericParser{data: raw, arena: make([]byte, 0, min(len(raw), 4<<10))}, genericOnly: true}
	v, ok := p.cell(&Cell{})
	m, _ := v.(map[string]any)
	if !ok || m == nil {
		return nil // never: the same bytes were read as this cell
	}
	if c.ID != "" {
		m["id"] = c.ID
	}
	fillCellDefaults(m)
	return m
}

func (p *typedParser) outputs() ([]any, []*Output, bool) {
	outs := []*Output{}
	v, ok := p.elements(func() (any, bool) {
		o := &Output{}
		outs = append(outs, o)
		return p.output(o)
	})
	return v, outs, ok
}

// output reads one output, and clears the cell's shape's plain unless
// outputNative vouches for it.
func (p *typedParser) output(o *Output) (any, bool) {
	var keys uint16
	plain := true
	v, ok := p.members(func(key string) (any, bool) {
		switch key {
		case "output_type":
			keys |= outType
			return p.string(&o.OutputType)
		case "name":
			keys |= outName
			return p.string(&o.Name)
		case "text":
			keys |= outText
			plain = plain && p.peek() != '{'
			return p.multiline(&o.Text, false)
		case "data":
			keys |= outData
			o.Data = MimeBundle{}
			return p.members(func(mime string) (any, bool) {
				if jsonMime(mime) {
					// Any JSON value: kept as its JSON.
					v, raw, ok := p.raw()
					o.Data[mime] = MultilineString(raw)
					return v, ok
				}
				plain = plain && p.peek() != '{'
				var m MultilineString
				v, ok := p.multiline(&m, false)
				o.Data[mime] = m
				return v, ok
			})
		case "metadata":
			keys |= outMetadata
			if p.peek() == 'n' {
				return nil, false
			}
			plain = plain && p.peek() == '{'
			v, raw, ok := p.raw()
			o.Metadata = raw
			return v, ok
		case "execution_count":
			keys |= outExecCount
			v, ok := p.intPtr(&o.ExecutionCount)
			plain = plain && (o.ExecutionCount == nil || *o.ExecutionCount >= 0)
			return v, ok
		case "ename":
			keys |= outEname
			return p.string(&o.Ename)
		case "evalue":
			keys |= outEvalue
			return p.string(&o.Evalue)
		case "traceback":
			keys |= outTraceback
			o.Traceback = []string{}
			return p.elements(func() (any, bool) {
				var s string
				v, ok := p.string(&s)
				o.Traceback = append(o.Traceback, s)
				return v, ok
			})
		}
		plain = false
		return p.unknown(key, outputFields)
	})
	if ok && !outputNative(o, keys, plain) {
		p.shape.plain = false
	}
	return v, ok
}
