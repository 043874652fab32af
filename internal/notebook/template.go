package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// Solution region markers, as nbgrader spells them.
const (
	BeginSolution = "### BEGIN SOLUTION"
	EndSolution   = "### END SOLUTION"
)

// DefaultStarterCode replaces a solution region in the starter.
const DefaultStarterCode = "# YOUR CODE HERE\nraise NotImplementedError()"

// StarterSource returns what the starter shows for a solution cell.
func StarterSource(c *Cell) string {
	g := c.MustGrader()
	if g.Starter != nil {
		return *g.Starter
	}
	src := string(c.Source)
	lines := strings.SplitAfter(src, "\n")
	var out strings.Builder
	in, found := false, false
	for _, ln := range lines {
		trimmed := strings.TrimSpace(ln)
		switch {
		case strings.HasPrefix(trimmed, BeginSolution):
			in, found = true, true
			indent := ln[:len(ln)-len(strings.TrimLeft(ln, " \t"))]
			for _, s := range strings.Split(DefaultStarterCode, "\n") {
				out.WriteString(indent + s + "\n")
			}
		case strings.HasPrefix(trimmed, EndSolution):
			in = false
		case !in:
			out.WriteString(ln)
		}
	}
	if !found {
		return DefaultStarterCode
	}
	return strings.TrimRight(out.String(), "\n")
}

// starterMetaKeys are the grader keys a learner may see: enough to match
// cells and show points, none of the comparison rules.
var starterMetaKeys = []string{"id", "points", "solution", "requires"}

// learnerGrader cuts c's grader metadata down to starterMetaKeys: the one
// redaction of grading rules, explanations and expected answers for every
// notebook a learner receives (the starter and their own executed copy).
func learnerGrader(c *Cell) error {
	raw, ok := c.Metadata["grader"]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var full map[string]json.RawMessage
	if err := json.Unmarshal(raw, &full); err != nil {
		return fmt.Errorf("grader metadata: %w", err)
	}
	kept := map[string]json.RawMessage{}
	for _, k := range starterMetaKeys {
		if v, ok := full[k]; ok {
			kept[k] = v
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return fmt.Errorf("grader metadata: %w", err)
	}
	c.Metadata["grader"] = b
	return nil
}

// Starter derives the notebook learners download from the answer: solution
// regions replaced, probe cells dropped, outputs cleared, and the grader
// metadata cut down to ids, points and requirements.
func Starter(answer *Notebook) (*Notebook, error) {
	nb := answer.Clone()
	nb.ClearOutputs()
	delete(nb.Metadata, "grader")
	cells := nb.Cells[:0]
	for i, c := range nb.Cells {
		g, err := c.Grader()
		if err != nil {
			return nil, fmt.Errorf("answer cell %d: %w", i+1, err)
		}
		if g.Probe {
			continue
		}
		if g.Solution {
			c.Source = MultilineString(StarterSource(c))
		}
		if err := learnerGrader(c); err != nil {
			return nil, fmt.Errorf("answer cell %d: %w", i+1, err)
		}
		cells = append(cells, c)
	}
	nb.Cells = cells
	return nb, nil
}

// Integrity is what Rebuild found wrong with an upload, per graded cell id.
type Integrity struct {
	// Verdicts maps a graded cell id to tampered or missing.
	Verdicts map[string]string
	// Messages explains each verdict.
	Messages map[string]string
	// MissingSolutions lists solution cells absent from the upload; the
	// starter's code stands in for them.
	MissingSolutions []string
}

// Rebuild builds the notebook the runner executes from the answer (the
// template) and a learner's upload. Only the learner's solution cells are
// taken; every other cell comes from the template, so an edited locked cell
// changes nothing (it is reported as tampered when it is graded), a deleted
// graded cell is restored (and graded missing), and outputs in the upload
// are never executed or counted.
//
// Probe cells (metadata.grader.probe) are moved after every other cell, so
// they run after all of the learner's code and after every visible graded
// output has been produced; Rebuild gives them seed 0 (RebuildSeeded sets
// the job's seed).
func Rebuild(answer, upload *Notebook) (*Notebook, Integrity, error) {
	return RebuildSeeded(answer, upload, 0)
}

// SeedVariable is the Python variable a probe cell reads its seed from.
// RebuildSeeded prepends "NPUGRADE_SEED = <seed>" to each probe cell, so the
// seed exists in the kernel only once the learner's cells have run.
const SeedVariable = "NPUGRADE_SEED"

// SeedMetaKey is the notebook-level metadata key under which the rebuilt
// notebook records its probe seed (metadata.npugrade.probe_seed), so that
// scoring compares the probes with the reference outputs of that seed.
const SeedMetaKey = "npugrade"

// ProbeSeed returns the probe seed a rebuilt (or executed) notebook records.
func (nb *Notebook) ProbeSeed() (int64, bool) {
	raw, ok := nb.Metadata[SeedMetaKey]
	if !ok {
		return 0, false
	}
	var m struct {
		ProbeSeed *int64 `json:"probe_seed"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ProbeSeed == nil {
		return 0, false
	}
	return *m.ProbeSeed, true
}

// RebuildSeeded is Rebuild with the probe seed of one job. Callers that
// rebuild many uploads of one exercise prepare the answer once with
// NewTemplate instead.
func RebuildSeeded(answer, upload *Notebook, seed int64) (*Notebook, Integrity, error) {
	t, err := NewTemplate(answer)
	if err != nil {
		return nil, Integrity{Verdicts: map[string]string{}, Messages: map[string]string{}}, err
	}
	return t.Rebuild(upload, seed)
}

// Template is an answer prepared for rebuilding uploads: its outputs
// cleared and every cell's grader metadata and starter code worked out
// once, so that a rebuild copies cells instead of re-encoding the whole
// answer. A Template is never changed after NewTemplate: any number of
// goroutines may rebuild from it at once.
type Template struct {
	answer   *Notebook // the answer NewTemplate was given (Answer)
	nb       *Notebook // outputs cleared, never handed out
	graders  []GraderMeta
	starters []string // per cell: the starter code of a solution cell
	probes   bool     // some cell is a probe
	// gradeIDs holds each cell's nbgrader grade_id ("" for none), read
	// once; nbgrader says some cell has one.
	gradeIDs []string
	nbgrader bool
	// otter: some solution cell answers an Otter question (otter.go).
	otter bool
	// heads and tails hold each cell as Encode writes it (indented),
	// before and after its source's lines: a rebuild changes nothing of
	// a template cell but its source. nil where Encode could write a
	// cell differently (see NewTemplate), or where a cell could not be
	// written (Encode reports it).
	heads, tails [][]byte
	// whole holds each cell as Encode writes it (indented), for a
	// rebuild that keeps the template's source (every cell but the
	// learner's solutions and the probes).
	whole [][]byte
}

// NewTemplate prepares answer for Rebuild. answer itself is not kept
// beyond a pointer to tell which answer the template is of: later changes
// to it do not reach the template.
func NewTemplate(answer *Notebook) (*Template, error) {
	nb := answer.Clone()
	nb.ClearOutputs()
	t := &Template{answer: answer, nb: nb, graders: make([]GraderMeta, len(nb.Cells)), starters: make([]string, len(nb.Cells)),
		gradeIDs: make([]string, len(nb.Cells))}
	for i, c := range nb.Cells {
		g, err := c.Grader()
		if err != nil {
			return nil, fmt.Errorf("template cell %d: %w", i+1, err)
		}
		t.graders[i] = g
		t.probes = t.probes || g.Probe
		t.otter = t.otter || g.Otter != ""
		if m, ok := c.Nbgrader(); ok && m.GradeID != "" {
			t.gradeIDs[i], t.nbgrader = m.GradeID, true
		}
		if g.Solution {
			t.starters[i] = StarterSource(c)
		}
	}
	// Encode gives cells ids first when a 4.0–4.4 notebook has some:
	// then a cell's bytes depend on the rebuild, and none are kept.
	if !(nb.NBFormat == 4 && nb.NBFormatMinor < 5 && nb.hasIDs()) {
		n := len(nb.Cells)
		t.heads, t.tails, t.whole = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		for i, c := range t.copyCells().Cells {
			head, err1 := appendCellHead(nil, c)
			tail, err2 := appendCellTail(nil, c)
			if err1 != nil || err2 != nil {
				t.heads, t.tails, t.whole = nil, nil, nil
				break
			}
			t.heads[i], t.tails[i] = indentCompact(nil, head, 2), indentCompact(nil, tail, 3)
			t.whole[i] = append(appendLinesIndented(bytes.Clone(t.heads[i]), string(c.Source)), t.tails[i]...)
		}
	}
	return t, nil
}

// Check is what Rebuild would find in upload (tampered and missing
// cells, missing solutions) without building the notebook.
func (t *Template) Check(upload *Notebook) Integrity {
	_, integ := t.plan(upload, 0)
	return integ
}

// Answer is the notebook the template was prepared from.
func (t *Template) Answer() *Notebook { return t.answer }

// copyCells returns the template's notebook with each cell and every map
// copied; the strings and raw JSON they hold are shared (nothing changes
// those in place).
func (t *Template) copyCells() *Notebook {
	nb := &Notebook{Cells: make([]*Cell, len(t.nb.Cells)), Metadata: copyRaw(t.nb.Metadata),
		NBFormat: t.nb.NBFormat, NBFormatMinor: t.nb.NBFormatMinor}
	for i, c := range t.nb.Cells {
		cc := *c
		cc.Metadata = copyRaw(c.Metadata)
		if c.Outputs != nil {
			cc.Outputs = []*Output{}
		}
		nb.Cells[i] = &cc
	}
	return nb
}

func copyRaw(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Rebuild is RebuildSeeded from a prepared template.
func (t *Template) Rebuild(upload *Notebook, seed int64) (*Notebook, Integrity, error) {
	plan, integ := t.plan(upload, seed)
	nb := t.copyCells()
	cells := make([]*Cell, len(plan))
	for k, pc := range plan {
		c := nb.Cells[pc.from]
		c.Source = pc.source
		cells[k] = c
	}
	nb.Cells = cells
	nb.Metadata = t.metadata(nb.Metadata, seed)
	return nb, integ, nil
}

// RebuildEncoded is Encode(Rebuild(upload, seed)), written from the
// template's encoded cells: each cell of the result is a template cell
// with perhaps another source, so only the sources are encoded for
// every upload, and no cell is copied.
func (t *Template) RebuildEncoded(upload *Notebook, seed int64) ([]byte, Integrity, error) {
	if t.heads == nil {
		nb, integ, _ := t.Rebuild(upload, seed)
		b, err := Encode(nb)
		return b, integ, err
	}
	plan, integ := t.plan(upload, seed)
	// A shell for encode: the template's cells in the order of the
	// plan (encode reads only their number), its own metadata. encode's
	// declareMinor changes nothing here: NewTemplate kept no heads where
	// it would.
	shell := &Notebook{Cells: make([]*Cell, len(plan)), Metadata: t.metadata(t.nb.Metadata, seed),
		NBFormat: t.nb.NBFormat, NBFormatMinor: t.nb.NBFormatMinor}
	for k, pc := range plan {
		shell.Cells[k] = t.nb.Cells[pc.from]
	}
	k := 0
	b, err := encode(shell, func(dst []byte, c *Cell) ([]byte, error) {
		pc := plan[k]
		k++
		if pc.source == c.Source {
			return append(dst, t.whole[pc.from]...), nil
		}
		dst = append(dst, t.heads[pc.from]...)
		dst = appendLinesIndented(dst, string(pc.source))
		return append(dst, t.tails[pc.from]...), nil
	})
	return b, integ, err
}

// metadata is the rebuilt notebook's metadata: the template's (meta, not
// changed), with the probe seed when there are probes.
func (t *Template) metadata(meta map[string]json.RawMessage, seed int64) map[string]json.RawMessage {
	if !t.probes {
		return meta
	}
	meta = copyRaw(meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	b, _ := json.Marshal(map[string]int64{"probe_seed": seed})
	meta[SeedMetaKey] = b
	return meta
}

// planCell is one cell of a rebuilt notebook: template cell from, with
// source.
type planCell struct {
	from   int
	source MultilineString
}

// plan is the rebuild of upload: per cell of the result, the template
// cell it is and its source (the learner's, for a solution cell).
func (t *Template) plan(upload *Notebook, seed int64) ([]planCell, Integrity) {
	integ := Integrity{Verdicts: map[string]string{}, Messages: map[string]string{}}
	idx := indexUpload(upload, t.nbgrader)
	idx.otter, idx.viaOtter = t.otterAnswers(upload)
	plan := make([]planCell, 0, len(t.nb.Cells))
	var probes []planCell
	for i, c := range t.nb.Cells {
		g := t.graders[i]
		pc := planCell{from: i, source: c.Source}
		if g.Probe {
			pc.source = MultilineString(fmt.Sprintf("%s = %d  # set by the grader\n", SeedVariable, seed) + string(c.Source))
			probes = append(probes, pc)
			continue
		}
		if g.ID != "" {
			pc.source = t.learnerSource(i, c, idx, &integ)
		}
		plan = append(plan, pc)
	}
	return append(plan, probes...), integ
}

// learnerSource is what a graded or solution cell (template cell i, c)
// runs: the learner's source of a solution cell, else the template's;
// it records what it finds in integ.
func (t *Template) learnerSource(i int, c *Cell, idx uploadIndex, integ *Integrity) MultilineString {
	g := t.graders[i]
	learner, viaNbgrader := idx.find(c, g.ID, t.gradeIDs[i])
	if idx.viaOtter {
		learner = idx.otter[i]
		if !g.Solution {
			// Otter's student notebook holds no tests; the template's run.
			return c.Source
		}
	}
	switch {
	case g.Solution:
		if learner == nil {
			integ.MissingSolutions = append(integ.MissingSolutions, g.ID)
			if g.Graded() {
				integ.Verdicts[g.ID] = domain.VerdictMissing
				integ.Messages[g.ID] = "this cell was deleted from the notebook; it was restored from the template and not graded"
			}
			return MultilineString(t.starters[i])
		}
		if learner.CellType != "code" && c.CellType == "code" {
			return MultilineString(t.starters[i])
		}
		return learner.Source
	case g.Graded():
		if learner == nil {
			integ.Verdicts[g.ID] = domain.VerdictMissing
			integ.Messages[g.ID] = "this graded cell was deleted from the notebook; it was restored from the template and not graded"
		} else if edited(learner, c, viaNbgrader) {
			integ.Verdicts[g.ID] = domain.VerdictTampered
			integ.Messages[g.ID] = "this cell is locked but its code was changed; the original code was run and the cell earns no points"
		}
	}
	return c.Source
}

// normalizeSource ignores trailing whitespace and line-ending differences,
// which editors introduce without the learner meaning to change a cell.
func normalizeSource(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// edited reports whether the learner changed a locked graded cell, which
// then earns nothing. A cell matched by nbgrader grade_id never is: nbgrader
// restores locked cells from the release and grades them as usual (its
// OverwriteCells step), and so do we, so such a notebook scores what
// nbgrader gives it. The template's cell runs either way.
func edited(learner, template *Cell, viaNbgrader bool) bool {
	if viaNbgrader || learner.Source == template.Source {
		return false
	}
	return normalizeSource(string(learner.Source)) != normalizeSource(string(template.Source))
}

// uploadIndex finds the learner's cell for a template cell.
type uploadIndex struct {
	byGrader, byID, byGradeID map[string]*Cell
	// otter holds the answers of an upload laid out as Otter's student
	// notebook (viaOtter), by template cell index.
	otter    map[int]*Cell
	viaOtter bool
}

func indexUpload(upload *Notebook, withNbgrader bool) uploadIndex {
	n := len(upload.Cells)
	idx := uploadIndex{byGrader: make(map[string]*Cell, n), byID: make(map[string]*Cell, n)}
	if withNbgrader {
		idx.byGradeID = make(map[string]*Cell, n)
	}
	first := func(m map[string]*Cell, k string, c *Cell) {
		if _, dup := m[k]; k != "" && !dup {
			m[k] = c
		}
	}
	for _, c := range upload.Cells {
		first(idx.byGrader, c.MustGrader().ID, c)
		if c.ID != "" {
			idx.byID[c.ID] = c
		}
		if !withNbgrader {
			continue // no template cell is matched by grade_id
		}
		if m, ok := c.Nbgrader(); ok {
			first(idx.byGradeID, m.GradeID, c)
		}
	}
	return idx
}

// find matches template cell c (grader id id, nbgrader grade_id gradeID)
// by grader id; for an exercise imported from nbgrader,
// submitted as nbgrader released it (no metadata.grader, ids of its own),
// by grade_id as nbgrader matches it (viaNbgrader); and last by cell id,
// since Jupyter front-ends that drop custom metadata keep the cell id.
func (idx uploadIndex) find(c *Cell, id, gradeID string) (learner *Cell, viaNbgrader bool) {
	if learner = idx.byGrader[id]; learner != nil {
		return learner, false
	}
	if gradeID != "" {
		if learner = idx.byGradeID[gradeID]; learner != nil {
			return learner, true
		}
	}
	if lc := idx.byID[c.ID]; c.ID != "" && lc != nil && lc.MustGrader().ID == "" {
		return lc, false
	}
	return nil, false
}
