package notebook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Limits bound what Parse accepts, so that no upload can make the server
// allocate without bound. Zero fields take the defaults.
type Limits struct {
	MaxBytes    int64 // whole document
	MaxDepth    int   // JSON nesting
	MaxCells    int
	MaxOutputs  int // per cell
	MaxAttach   int64
	MaxValues   int // JSON values of the whole document (bounds.go)
	MinMinor    int
	MaxMinor    int
	RequireIDs  bool // nbformat 4.5 ids present and unique
	AllowOutput bool // outputs may be present (uploads may carry them; they are discarded later)
}

// DefaultLimits fit learner uploads of the tutorial's exercises with room to spare.
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:    8 << 20,
		MaxDepth:    64,
		MaxCells:    2000,
		MaxOutputs:  1000,
		MaxAttach:   2 << 20,
		MinMinor:    0,
		MaxMinor:    5,
		AllowOutput: true,
	}
}

// ErrTooLarge is returned (wrapped) when the document exceeds MaxBytes.
var ErrTooLarge = errors.New("notebook too large")

var errNotUTF8 = errors.New("notebook is not valid UTF-8")

// validCellID is nbformat 4.5's pattern for a cell id,
// ^[a-zA-Z0-9-_]+$ of 1–64 characters, checked without a regexp: it runs
// for every cell of every upload.
func validCellID(id string) bool {
	if len(id) < 1 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Parse decodes and validates a notebook. A notebook with several problems
// returns a *multierror.Error listing all of them.
func Parse(data []byte, lim Limits) (*Notebook, error) {
	return parse(data, lim, true)
}

// parse is Parse; without native, every cell goes to the schema's
// validator (nativeValid and rootNative vouch for nothing), as the
// tests compare.
func parse(data []byte, lim Limits, native bool) (*Notebook, error) {
	lim = lim.withDefaults()
	if int64(len(data)) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), lim.MaxBytes)
	}
	d, err := decode(data, lim)
	if err != nil {
		return nil, err
	}
	nb := d.nb
	var errs problems
	if nb.NBFormat != 4 {
		errs.add(fmt.Errorf("nbformat %d is not supported (only 4.%d–4.%d)", nb.NBFormat, lim.MinMinor, lim.MaxMinor))
	} else if nb.NBFormatMinor < lim.MinMinor || nb.NBFormatMinor > lim.MaxMinor {
		errs.add(fmt.Errorf("nbformat 4.%d is not supported (only 4.%d–4.%d)", nb.NBFormatMinor, lim.MinMinor, lim.MaxMinor))
	}
	if nb.Cells == nil {
		errs.add(errors.New("notebook has no \"cells\" list"))
	}
	if len(nb.Cells) > lim.MaxCells {
		errs.add(fmt.Errorf("notebook has %d cells, the limit is %d", len(nb.Cells), lim.MaxCells))
	}
	seen := make(map[string]int, len(nb.Cells))
	// Cells with a problem of our own are not checked against the schema
	// too, so each problem is named once, in our words.
	badCells := map[int]bool{}
	prev, prevLen := -1, 0
	for i, c := range nb.Cells {
		if prev >= 0 && errs.count() > prevLen {
			badCells[prev] = true
		}
		prev, prevLen = i, errs.count()
		if c == nil {
			errs.add(fmt.Errorf("cell %d is null", i+1))
			continue
		}
		switch c.CellType {
		case "code", "markdown", "raw":
		default:
			errs.add(fmt.Errorf("cell %d has unknown cell_type %q", i+1, c.CellType))
		}
		if c.ID != "" {
			if !validCellID(c.ID) {
				errs.add(fmt.Errorf("cell %d has an invalid id %q (1–64 letters, digits, '-' or '_')", i+1, c.ID))
			} else if j, dup := seen[c.ID]; dup {
				errs.add(fmt.Errorf("cells %d and %d have the same id %q", j+1, i+1, c.ID))
			}
			seen[c.ID] = i
		} else if lim.RequireIDs {
			errs.add(fmt.Errorf("cell %d has no id (required from nbformat 4.5)", i+1))
		}
		if len(c.Outputs) > lim.MaxOutputs {
			errs.add(fmt.Errorf("cell %d has %d outputs, the limit is %d", i+1, len(c.Outputs), lim.MaxOutputs))
		}
		if len(c.Outputs) > 0 && c.CellType != "code" {
			errs.add(fmt.Errorf("cell %d is %s but has outputs", i+1, c.CellType))
		}
		for k, o := range c.Outputs {
			if o == nil {
				errs.add(fmt.Errorf("cell %d output %d is null", i+1, k+1))
				continue
			}
			for _, p := range outputProblems(o) {
				errs.add(fmt.Errorf("cell %d output %d %s", i+1, k+1, p))
			}
		}
		if c.CellType == "code" && len(c.Attachments) > 0 {
			errs.add(fmt.Errorf("cell %d is code but has attachments (only markdown and raw cells may)", i+1))
		}
		for _, p := range attachmentProblems(c.Attachments, lim.MaxAttach) {
			errs.add(fmt.Errorf("cell %d %s", i+1, p))
		}
		if err := c.graderErr(); err != nil {
			errs.add(fmt.Errorf("cell %d: %w", i+1, err))
		}
	}
	if prev >= 0 && errs.count() > prevLen {
		badCells[prev] = true
	}
	if nb.NBFormat == 4 && len(nb.Cells) <= lim.MaxCells {
		for _, p := range schemaProblems(d.doc, d.minor, badCells, d.cellRaw, nb.Cells, d.shapes, native) {
			errs.add(errors.New(p))
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return nb, nil
}

// withDefaults fills the zero fields of lim with the defaults.
func (lim Limits) withDefaults() Limits {
	def := DefaultLimits()
	for _, f := range []struct{ v, d *int }{{&lim.MaxDepth, &def.MaxDepth}, {&lim.MaxCells, &def.MaxCells},
		{&lim.MaxOutputs, &def.MaxOutputs}, {&lim.MaxMinor, &def.MaxMinor}} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if lim.MaxBytes == 0 {
		lim.MaxBytes = def.MaxBytes
	}
	if lim.MaxAttach == 0 {
		lim.MaxAttach = def.MaxAttach
	}
	if lim.MaxValues == 0 {
		lim.MaxValues = DefaultMaxValues
	}
	return lim
}

// decode reads the notebook typed and in the generic form the official
// schema is checked against, in one pass where it can (decodeOnePass). Like nbformat, it fills in missing
// cell ids of a 4.5 notebook (the generic form gets the same ids) and
// returns the minor version whose schema applies, and each cell's bytes
// when it read them in one pass; then the generic form leaves the cells
// out (nil), for schemaProblems to make as it needs them (cellDoc).
//
// The one-pass decode enforces lim's bounds on nesting, values and cells
// itself; anything it leaves to the two-pass one is first walked by
// prescan, which refuses what would make decoding it expensive (and
// names the bound an upload passed). A document large enough to hold
// more values than allowed (each takes two bytes or more, with its
// separator) is walked by prescan first all the same: the one-pass
// decode would build every value up to the bound before failing, and a
// hostile upload of many megabytes would cost that much more than its
// refusal did. Below that size no bound can make it build more than an
// upload within them.
//
// Bytes that are not UTF-8 are refused as such before any other problem
// is named. The one-pass decode checks them as it reads its strings
// (outside strings, any such byte is a syntax error): the upload is
// checked in a pass of its own only when that decode fails, or prescan
// does.
func decode(data []byte, lim Limits) (decoded, error) {
	scanned := int64(len(data)) >= 2*int64(lim.MaxValues)
	if scanned {
		if err := prescan(data, lim); err != nil {
			if !validUTF8(data) {
				return decoded{}, errNotUTF8
			}
			return decoded{}, err
		}
	}
	b := bounds{maxDepth: lim.MaxDepth, maxValues: lim.MaxValues, maxCells: lim.MaxCells}
	doc, nb, cellRaw, shapes, ok := decodeShapes(data, true, true, b)
	if !ok {
		if !validUTF8(data) {
			return decoded{}, errNotUTF8
		}
		if !scanned {
			if err := prescan(data, lim); err != nil {
				return decoded{}, err
			}
		}
		var err error
		if doc, nb, err = decodeTwoPass(data); err != nil {
			return decoded{}, err
		}
	}
	minor := nb.NBFormatMinor
	if nb.NBFormat == 4 && nb.hasIDs() {
		minor = 5
		for i, id := range nb.AssignIDs() {
			setDocID(doc, i, id)
		}
	}
	fillDocDefaults(doc, minor)
	return decoded{nb: nb, doc: doc, minor: minor, cellRaw: cellRaw, shapes: shapes}, nil
}

// decoded is what decode returns: the typed and generic forms, the
// minor version whose schema applies, and, from the one-pass decode,
// each cell's bytes and shape.
type decoded struct {
	nb      *Notebook
	doc     any
	minor   int
	cellRaw [][]byte
	shapes  []cellShape
}

// decodeTwoPass is decode for what decodeOnePass leaves alone: the
// generic form, then the typed one with encoding/json.
func decodeTwoPass(data []byte) (any, *Notebook, error) {
	doc, err := decodeGeneric(data)
	if err != nil {
		return nil, nil, fmt.Errorf("notebook is not valid JSON: %w", err)
	}
	var nb Notebook
	if err := json.Unmarshal(data, &nb); err != nil {
		// A field of the wrong type: the schema names every such problem.
		if probs := docSchemaProblems(doc); len(probs) > 0 {
			var all problems
			for _, p := range probs {
				all.add(errors.New(p))
			}
			return nil, nil, all.err()
		}
		return nil, nil, fmt.Errorf("notebook is not valid nbformat JSON: %w", err)
	}
	return doc, &nb, nil
}

// outputProblems checks one output against the nbformat 4 schema: the
// fields each output_type requires.
func outputProblems(o *Output) []string {
	var p []string
	switch o.OutputType {
	case OutputStream:
		// JupyterLab records input() prompts as a stdin stream.
		if o.Name != "stdout" && o.Name != "stderr" && o.Name != "stdin" {
			p = append(p, fmt.Sprintf("is a stream named %q (want stdout, stderr or stdin)", o.Name))
		}
	case OutputExecuteResult, OutputDisplayData:
		if o.Data == nil {
			p = append(p, fmt.Sprintf("(%s) has no \"data\" bundle", o.OutputType))
		}
	case OutputError:
		if o.Ename == "" {
			p = append(p, "(error) has no \"ename\"")
		}
	default:
		p = append(p, fmt.Sprintf("has unknown output_type %q", o.OutputType))
	}
	if len(o.Metadata) > 0 && o.Metadata[0] != '{' {
		p = append(p, "has \"metadata\" that is not an object")
	}
	return p
}

// attachmentProblems checks a cell's attachments: {name: {mime: base64}},
// each value valid base64, together no more than max decoded bytes.
func attachmentProblems(raw json.RawMessage, max int64) []string {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if int64(len(raw)) > max*4/3+4096 {
		return []string{fmt.Sprintf("attachments are %d bytes, the limit is %d", len(raw), max)}
	}
	var att map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &att); err != nil {
		return []string{"has \"attachments\" that are not {name: {mime-type: base64 data}}"}
	}
	var p []string
	var total int64
	names := make([]string, 0, len(att))
	for name := range att {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for mime, v := range att[name] {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				var parts []string
				if err := json.Unmarshal(v, &parts); err != nil {
					p = append(p, fmt.Sprintf("attachment %q (%s) is not a base64 string", name, mime))
					continue
				}
				s = strings.Join(parts, "")
			}
			if strings.HasPrefix(mime, "text/") || strings.HasSuffix(mime, "json") || strings.HasSuffix(mime, "+xml") {
				total += int64(len(s))
				continue
			}
			n, err := base64.StdEncoding.DecodeString(strings.Map(dropSpace, s))
			if err != nil {
				p = append(p, fmt.Sprintf("attachment %q (%s) is not valid base64", name, mime))
				continue
			}
			total += int64(len(n))
		}
	}
	if total > max {
		p = append(p, fmt.Sprintf("attachments are %d bytes decoded, the limit is %d", total, max))
	}
	return p
}

func dropSpace(r rune) rune {
	if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
		return -1
	}
	return r
}

// Clone returns a deep copy.
func (nb *Notebook) Clone() *Notebook {
	b, err := json.Marshal(nb)
	if err != nil {
		panic(fmt.Sprintf("notebook: clone: %v", err)) // a decoded notebook always re-encodes
	}
	var out Notebook
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("notebook: clone: %v", err))
	}
	return &out
}

// ParseExecuted reads a notebook that a runner executed: it may be large
// (outputs are bounded by the runner's limits, not by the upload limits),
// so only its total size and output count are capped here.
func ParseExecuted(data []byte) (*Notebook, error) {
	// Lone surrogates in learner output stay visible (surrogates.go).
	return Parse(keepLoneSurrogates(data), Limits{MaxBytes: 64 << 20, MaxOutputs: 1 << 20, MaxValues: 8 << 20})
}

// ParseStored re-reads a notebook the server itself stored after
// validating it (an accepted upload), so no size limit applies again.
func ParseStored(data []byte) (*Notebook, error) {
	return Parse(data, Limits{MaxBytes: int64(len(data)) + 1, MaxValues: 8 << 20})
}
