package notebook

import (
	"bytes"
	"embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The official nbformat 4.0–4.5 JSON schemas (jupyter/nbformat 5.11.1,
// nbformat/v4/nbformat.v4.N.schema.json, BSD-3-Clause: schema/LICENSE).
//
//go:embed schema/nbformat.v4.*.schema.json
var schemaFS embed.FS

// maxSchemaProblems bounds what one notebook's schema check reports, so a
// hostile upload with a million bad cells costs a bounded message.
const maxSchemaProblems = 20

type nbSchemas struct {
	root  *jsonschema.Schema
	cells map[string]*jsonschema.Schema // by cell_type
	outs  map[string]*jsonschema.Schema // by output_type
}

var (
	schemaPrinter = message.NewPrinter(language.English)
	compiled      = map[int]func() (*nbSchemas, error){}
)

func init() {
	for minor := 0; minor <= 5; minor++ {
		compiled[minor] = sync.OnceValues(func() (*nbSchemas, error) { return compileSchemas(minor) })
	}
}

func compileSchemas(minor int) (*nbSchemas, error) {
	name := fmt.Sprintf("nbformat.v4.%d.schema.json", minor)
	raw, err := schemaFS.ReadFile("schema/" + name)
	if err != nil {
		return nil, fmt.Errorf("embedded schema %s: %w", name, err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("embedded schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "https://jupyter.org/schema/" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("embedded schema %s: %w", name, err)
	}
	s := &nbSchemas{cells: map[string]*jsonschema.Schema{}, outs: map[string]*jsonschema.Schema{}}
	if s.root, err = c.Compile(url); err != nil {
		return nil, fmt.Errorf("compile %s: %w", name, err)
	}
	for _, t := range []string{"code", "markdown", "raw"} {
		if s.cells[t], err = c.Compile(url + "#/definitions/" + t + "_cell"); err != nil {
			return nil, fmt.Errorf("compile %s %s_cell: %w", name, t, err)
		}
	}
	for _, t := range []string{OutputStream, OutputExecuteResult, OutputDisplayData, OutputError} {
		if s.outs[t], err = c.Compile(url + "#/definitions/" + t); err != nil {
			return nil, fmt.Errorf("compile %s %s: %w", name, t, err)
		}
	}
	return s, nil
}

// schemaProblems validates a decoded notebook (jsonschema.UnmarshalJSON
// form) against the official schema of minor. The notebook, each cell and
// each output are validated against their own definitions, so that a
// problem is named where it is ("cell 3 output 1: at /name: ...") instead
// of as nbformat's oneOf over every cell type. Cells and outputs of a type
// the schema does not know are left to Parse's own messages, as are cells
// listed in skip (they already have a clearer problem). At most
// maxSchemaProblems are returned, the last saying how many were left out.
//
// cellRaw, when given, holds each cell's bytes as uploaded: a cell whose
// bytes, id and minor version were already found valid is not validated
// again (cleanCells). Learners' uploads of one exercise share most of
// their cells (the instructions, the locked code), and the validator
// costs far more than hashing the bytes. A cell that is nil in doc but
// has its bytes there and its typed form in typed was left out by the
// decode (decodeOnePass's lazyCells): it is made from its bytes
// (cellDoc) only when it is validated.
//
// With native, the notebook around its cells is not validated where
// rootNative vouches for it, nor is a cell that nativeValid vouches for
// (nor remembered); shapes are the cells' shapes as the decode saw them.
func schemaProblems(doc any, minor int, skip map[int]bool, cellRaw [][]byte, typed []*Cell, shapes []cellShape, native bool) []string {
	get, ok := compiled[minor]
	if !ok {
		return nil // Parse reports the unsupported version itself
	}
	s, err := get()
	if err != nil {
		return []string{err.Error()} // an embedded schema is broken: never on a release
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return []string{"notebook is not a JSON object"}
	}
	var probs []string
	add := func(where string, err error) {
		for _, p := range leafProblems(err) {
			probs = append(probs, strings.TrimSpace(where+" "+p))
		}
	}
	cells, _ := top["cells"].([]any)
	shell := shallow(top)
	shell["cells"] = []any{}
	if !native || !rootNative(shell, minor) {
		add("notebook", s.root.Validate(shell))
	}
	for i, raw := range cells {
		if len(probs) > maxSchemaProblems || skip[i] {
			continue
		}
		cell, ok := raw.(map[string]any)
		lazy := raw == nil && i < len(cellRaw) && i < len(typed) && typed[i] != nil
		if !ok && !lazy {
			continue
		}
		var t, id string
		if lazy {
			t, id = typed[i].CellType, typed[i].ID
		} else {
			t, _ = cell["cell_type"].(string)
			id, _ = cell["id"].(string)
		}
		sch := s.cells[t]
		if sch == nil {
			continue
		}
		if native && i < len(shapes) && i < len(typed) && nativeValid(shapes[i], typed[i], minor) {
			continue
		}
		var key cleanKey
		if i < len(cellRaw) {
			if key = cleanCells.key(minor, id, cellRaw[i]); cleanCells.has(key) {
				continue
			}
		}
		if lazy {
			if cell = cellDoc(cellRaw[i], typed[i]); cell == nil {
				continue
			}
		}
		before := len(probs)
		outs, _ := cell["outputs"].([]any)
		cell = shallow(cell)
		if t == "code" && outs != nil {
			cell["outputs"] = []any{}
		}
		lighten(cell, "source")
		add(fmt.Sprintf("cell %d", i+1), sch.Validate(cell))
		for k, o := range outs {
			om, _ := o.(map[string]any)
			ot, _ := om["output_type"].(string)
			if osch := s.outs[ot]; osch != nil {
				if ot == OutputStream {
					om = shallow(om)
					lighten(om, "text")
				}
				add(fmt.Sprintf("cell %d output %d", i+1, k+1), osch.Validate(om))
			}
		}
		if len(probs) == before {
			cleanCells.add(key)
		}
	}
	if len(probs) > maxSchemaProblems {
		n := len(probs) - maxSchemaProblems
		probs = append(probs[:maxSchemaProblems], fmt.Sprintf("… and %d more problems against the nbformat 4.%d schema", n, minor))
	}
	return probs
}

// leafProblems flattens a validation error to its innermost causes, each
// as "at /json/pointer: message".
func leafProblems(err error) []string {
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []string{err.Error()}
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			// The validator lists extra properties in map order: sorted,
			// the same upload always gets the same text.
			if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
				slices.Sort(k.Properties)
			}
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at %s: %s (nbformat schema)", loc, e.ErrorKind.LocalizedString(schemaPrinter)))
			return
		}
		for _, c := range e.Causes {
			// Bounded, but well past what is reported, so that the
			// sorted problems reported are the same on every run.
			if len(out) > 50*maxSchemaProblems {
				return
			}
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out) // causes come in no fixed order either
	return out
}

// lighten replaces the text of m[key], an nbformat multiline_string
// (a cell's source, a stream's text: any string, or a list of strings, is
// valid), with empty strings before m is validated: the validator copies
// every string it checks, and an upload's text is most of its bytes.
// What is not a string stays, so a problem is still named where it is.
func lighten(m map[string]any, key string) {
	switch v := m[key].(type) {
	case string:
		m[key] = ""
	case []any:
		lines := make([]any, len(v))
		for i, l := range v {
			if _, ok := l.(string); ok {
				l = ""
			}
			lines[i] = l
		}
		m[key] = lines
	}
}

func shallow(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// docSchemaProblems checks a notebook that could not be decoded at all
// against the schema of the minor version it declares.
func docSchemaProblems(doc any) []string {
	top, _ := doc.(map[string]any)
	if top == nil {
		return nil
	}
	minor := 5
	if n, ok := top["nbformat_minor"].(json.Number); ok {
		if v, err := n.Int64(); err == nil && v >= 0 && v < 5 {
			minor = int(v)
		}
	}
	fillDocDefaults(doc, minor)
	return schemaProblems(doc, minor, nil, nil, nil, nil, false)
}

// cleanCells remembers cells that passed the schema check.
var cleanCells = &cellMemo{seed: maphash.MakeSeed(), seen: map[uint64]cleanCell{}}

// cleanKey names a cell by its minor version, id and bytes: all its
// generic form, and so its verdict, depends on (fillDocDefaults adds
// only what the bytes decide; lighten likewise). hash only finds the
// entry: has compares the entry's minor, id and bytes with the cell's,
// so a hash collision, found or crafted, is a miss, never a cell passed
// unchecked. The zero key (no raw) is none.
type cleanKey struct {
	hash  uint64
	minor int
	id    string
	raw   []byte
}

// cleanCell is a remembered cell: its own copy of the bytes, not a view
// of an upload the memo would keep alive.
type cleanCell struct {
	minor   int
	id, raw string
}

// cellMemo is a bounded set of clean cells: when full (in cells or in
// bytes) it starts over, so a flood of distinct cells costs a bounded
// map and only the memo's use. It was keyed by each cell's SHA-256,
// which cost as much as the rest of the decode's string handling; a
// seeded maphash and one comparison of the bytes cost a tenth of it.
type cellMemo struct {
	mu    sync.Mutex
	seed  maphash.Seed
	seen  map[uint64]cleanCell
	bytes int // of the remembered cells' raw and id
}

const (
	maxMemoCells     = 4096
	maxMemoBytes     = 2 << 20  // the course's cells come to well under 1 MiB; a flood of others keeps no more
	maxMemoCellBytes = 16 << 10 // a larger cell is checked each time: remembering it costs about what checking it does
)

// key is the key of a cell with bytes raw and id (as decode gives it:
// its own or the one AssignIDs gave it) at minor. It views id and raw.
func (m *cellMemo) key(minor int, id string, raw []byte) cleanKey {
	if len(raw) == 0 || len(raw) > maxMemoCellBytes {
		return cleanKey{}
	}
	var h maphash.Hash
	h.SetSeed(m.seed)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(minor)<<32|uint64(len(id)))
	h.Write(n[:])
	h.WriteString(id)
	h.Write(raw)
	return cleanKey{hash: h.Sum64(), minor: minor, id: id, raw: raw}
}

func (m *cellMemo) has(k cleanKey) bool {
	if k.raw == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.seen[k.hash]
	return ok && c.minor == k.minor && c.id == k.id && c.raw == string(k.raw)
}

func (m *cellMemo) add(k cleanKey) {
	if k.raw == nil {
		return
	}
	c := cleanCell{minor: k.minor, id: strings.Clone(k.id), raw: string(k.raw)}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.seen) >= maxMemoCells || m.bytes+len(c.raw)+len(c.id) > maxMemoBytes {
		clear(m.seen)
		m.bytes = 0
	}
	if old, ok := m.seen[k.hash]; ok {
		m.bytes -= len(old.raw) + len(old.id)
	}
	m.seen[k.hash] = c
	m.bytes += len(c.raw) + len(c.id)
}
