// Package importer turns the grading metadata of other tools into npugrade's
// metadata.grader, so that existing notebooks can be graded without being
// rewritten by hand:
//
//   - nbgrader v3 (metadata.nbgrader: grade, solution, locked, task,
//     grade_id, points, checksum, cell_type): autograded answers become
//     solution cells, autograder test cells graded cells that pass when they
//     raise nothing (compare no-error, as nbgrader scores them; stderr too
//     with Options.NbgraderStderr), ### AUTOTEST lines compared values,
//     hidden tests probe cells, manually graded answers and tasks manual
//     cells, and every checksum is verified with nbgrader's own recipe so
//     an edited release is caught;
//   - Otter-Grader's assign notebooks (otter.go);
//   - nbval (comments # NBVAL_* and tags nbval-*, or none): every code cell
//     with recorded outputs is graded on its outputs (exact), or only the
//     NBVAL_CHECK_OUTPUT cells when a notebook marks any (nbval's lax mode);
//     IGNORE_OUTPUT runs without comparing, SKIP is not run,
//     RAISES_EXCEPTION expects an error;
//   - nbclient tags raises-exception and skip-execution;
//   - papermill's parameters cell (kept locked under the id "parameters");
//   - quiz cells that only assign q1..qN: a solution cell followed by a
//     graded check cell per variable;
//   - the learning hub's notebooks with their answer texts (ImportHub):
//     each quiz item gets a solution cell and a check cell graded with
//     compare "choice", each lab task an ungraded NPU cell.
//
// Import never guesses silently: Report lists what each cell became.
package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/npugrade/npugrade/internal/notebook"
)

// Report says what Import did.
type Report struct {
	// Formats found: nbgrader, otter, nbval, nbclient, papermill, quiz.
	Formats []string
	// Notes, one per converted cell, in English.
	Notes []string
	// notes are the Notes to word for a reader (NotesIn).
	notes []Note
}

func (r *Report) format(f string) {
	for _, x := range r.Formats {
		if x == f {
			return
		}
	}
	r.Formats = append(r.Formats, f)
}

// HasGraderMetadata reports whether any cell already carries metadata.grader.
func HasGraderMetadata(nb *notebook.Notebook) bool {
	for _, c := range nb.Cells {
		if _, ok := c.Metadata["grader"]; ok {
			return true
		}
	}
	return false
}

// ImportBytes parses a notebook, imports it and encodes the result.
func ImportBytes(data []byte) ([]byte, Report, error) {
	nb, err := notebook.Parse(data, notebook.Limits{})
	if err != nil {
		return nil, Report{}, err
	}
	out, rep, err := Import(nb)
	if err != nil {
		return nil, rep, err
	}
	b, err := notebook.Encode(out)
	return b, rep, err
}

var (
	quizLine       = regexp.MustCompile(`^(q[0-9]+)\s*=\s*(.+)$`)
	idPattern      = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	hiddenTests    = "### BEGIN HIDDEN TESTS"
	endHiddenTests = "### END HIDDEN TESTS"
)

// Options tune how other tools' meaning is kept.
type Options struct {
	// NbgraderStderr: an nbgrader test cell that writes to stderr fails,
	// as nbgrader scores it (off by default: a warning on stderr would
	// fail a correct answer).
	NbgraderStderr bool
}

// Import is ImportWith with the default options.
func Import(in *notebook.Notebook) (*notebook.Notebook, Report, error) {
	return ImportWith(in, Options{})
}

// ImportWith returns a copy of nb with metadata.grader written from the
// other tools' metadata. Cells without an id get one. Every problem (a bad
// checksum, hidden tests, duplicate ids) is reported at once.
func ImportWith(in *notebook.Notebook, opt Options) (*notebook.Notebook, Report, error) {
	nb := in.Clone()
	var rep Report
	var errs *multierror.Error
	if HasGraderMetadata(nb) {
		return nb, rep, nil
	}
	lax, nbval := false, defaultNbval(nb)
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		if nbvalMarks(c)["check-output"] {
			lax = true
		}
		if strings.Contains(string(c.Source), "# NBVAL_") {
			nbval = true
		}
		for _, t := range c.Tags() {
			if strings.HasPrefix(t, "nbval-") {
				nbval = true
			}
		}
	}
	if nbval {
		rep.format("nbval")
	}
	used := map[string]bool{}
	for _, c := range nb.Cells {
		used[c.ID] = c.ID != ""
	}
	if isOtter(nb) {
		rep.Formats = nil
		rep.format("otter")
		for i, c := range nb.Cells {
			if c.ID == "" {
				c.ID = uniqueID(used, fmt.Sprintf("cell-%d", i+1))
			}
		}
		cells, err := fromOtter(nb, used, &rep)
		if err != nil {
			return nb, rep, err
		}
		nb.Cells = cells
		return nb, rep, nil
	}
	var cells []*notebook.Cell
	for i, c := range nb.Cells {
		if c.ID == "" {
			c.ID = uniqueID(used, fmt.Sprintf("cell-%d", i+1))
		}
		g := map[string]any{}
		var extra *notebook.Cell
		if raw, ok := c.Metadata["nbgrader"]; ok {
			rep.format("nbgrader")
			probe, err := fromNbgrader(c, raw, g, opt, used, &rep)
			if err != nil {
				errs = multierror.Append(errs, fmt.Errorf("cell %d (%s): %w", i+1, c.ID, err))
			}
			extra = probe
		} else if c.CellType == "code" {
			if qs := quizVars(string(c.Source)); len(qs) > 0 {
				rep.format("quiz")
				cells = append(cells, quizCells(c, qs, used, &rep)...)
				continue
			}
			fromMarkers(c, g, nbval, lax, &rep)
		}
		if len(g) > 0 {
			if _, ok := g["id"]; !ok {
				g["id"] = c.ID
			}
			b, _ := json.Marshal(g)
			if c.Metadata == nil {
				c.Metadata = map[string]json.RawMessage{}
			}
			c.Metadata["grader"] = b
		}
		cells = append(cells, c)
		if extra != nil {
			cells = append(cells, extra)
		}
	}
	nb.Cells = cells
	seen := map[string]bool{}
	for _, c := range nb.Cells {
		if id := c.MustGrader().ID; id != "" {
			if seen[id] {
				errs = multierror.Append(errs, fmt.Errorf("grader id %q is used by two cells", id))
			}
			seen[id] = true
		}
	}
	return nb, rep, errs.ErrorOrNil()
}

func uniqueID(used map[string]bool, base string) string {
	id := base
	for n := 2; used[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	used[id] = true
	return id
}

// fromNbgrader writes g from a cell's metadata.nbgrader; it returns the
// probe cell that holds the cell's hidden tests, if it has any.
func fromNbgrader(c *notebook.Cell, raw json.RawMessage, g map[string]any, opt Options, used map[string]bool, rep *Report) (*notebook.Cell, error) {
	var m notebook.NbgraderMeta
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields() // nbgrader's schema has additionalProperties: false
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("metadata.nbgrader: %w", err)
	}
	if m.SchemaVersion != 3 {
		return nil, fmt.Errorf("metadata.nbgrader.schema_version %d: only version 3 is supported", m.SchemaVersion)
	}
	var problems *multierror.Error
	switch {
	case m.GradeID == "" && (m.Grade || m.Solution || m.Locked || m.Task):
		// nbgrader refuses it too; an invented id would not match the
		// learners' notebooks nor nbgrader's gradebook.
		problems = multierror.Append(problems, errors.New("nbgrader cell has no grade_id: give it a unique id in nbgrader's Create Assignment toolbar (nbgrader itself refuses the notebook) and import again"))
	case m.GradeID != "" && !idPattern.MatchString(m.GradeID):
		problems = multierror.Append(problems, fmt.Errorf("grade_id %q is not a valid id (letters, digits, '-' and '_')", m.GradeID))
	}
	if m.Sum != "" {
		if sum := m.Checksum(c); sum != m.Sum {
			problems = multierror.Append(problems, fmt.Errorf("nbgrader checksum %s does not match the cell (%s): the cell was edited after nbgrader generated it", m.Sum, sum))
		}
	}
	if m.CellType != "" && m.CellType != c.CellType {
		problems = multierror.Append(problems, fmt.Errorf("nbgrader generated this cell as %s, but it is %s now", m.CellType, c.CellType))
	}
	if err := problems.ErrorOrNil(); err != nil {
		return nil, err
	}
	points := 0.0
	if m.Points != nil {
		points = *m.Points
	}
	id := m.GradeID
	if id == "" {
		id = c.ID // an nbgrader cell that is nothing (all flags false)
	}
	g["id"] = id
	switch {
	case m.Task || m.Grade && m.Solution:
		// nbgrader's "manually graded answer" or "task": a person grades it.
		what := "task"
		if m.Solution {
			g["solution"] = true
			what = "answer"
			if c.CellType == "markdown" {
				g["starter"] = markdownStarter(string(c.Source))
			}
		}
		if points > 0 {
			g["manual"] = map[string]any{"points": points}
			if what == "task" {
				rep.note("%s: manually graded task in nbgrader -> manual cell, %g points", id, points)
			} else {
				rep.note("%s: manually graded answer in nbgrader -> manual cell, %g points", id, points)
			}
		} else if what == "task" {
			rep.note("%s: manually graded task in nbgrader with no points -> kept ungraded", id)
		} else {
			rep.note("%s: manually graded answer in nbgrader with no points -> kept ungraded", id)
		}
	case m.Solution:
		g["solution"] = true
		rep.note("%s: nbgrader autograded answer -> solution cell", id)
	case m.Grade && c.CellType == "code":
		probe := hiddenTestsProbe(c, id, used)
		g["points"], g["compare"] = points, "no-error"
		note := noted("passes when it raises nothing")
		if opt.NbgraderStderr {
			g["targets"] = []string{"stderr"}
			note = noted("passes when it raises nothing and writes nothing to stderr")
		}
		if autotest(c, g) {
			note = noted("### AUTOTEST values compared with the answer's, asserts run")
		}
		if probe != nil {
			pg := map[string]any{"id": probe.ID, "probe": true, "for": id, "group": id, "compare": "no-error"}
			if opt.NbgraderStderr {
				pg["targets"] = []string{"stderr"}
			}
			autotest(probe, pg)
			if points > 0 {
				// nbgrader gives the points when the visible and the hidden
				// tests all pass: half each, all or nothing.
				g["points"], pg["points"], g["group"] = points/2, points/2, id
			}
			b, _ := json.Marshal(pg)
			probe.Metadata = map[string]json.RawMessage{"grader": b}
			note = noted("%s; its hidden tests -> probe %s (run after every cell, never shown to learners; all or nothing with the visible tests)", note, probe.ID)
		}
		rep.note("%s: nbgrader autograder tests -> graded cell, %s", id, note)
		return probe, nil
	default:
		rep.note("%s: nbgrader locked cell", id)
	}
	return nil, nil
}

// markdownStarter is what nbgrader's release makes of a written answer:
// its solution regions, or the whole cell when it has none, replaced with
// "YOUR ANSWER HERE".
func markdownStarter(src string) string {
	const stub = "YOUR ANSWER HERE"
	var out []string
	in, found := false, false
	for _, ln := range strings.Split(src, "\n") {
		switch t := strings.TrimSpace(ln); {
		case strings.HasPrefix(t, notebook.BeginSolution):
			in, found = true, true
			out = append(out, stub)
		case strings.HasPrefix(t, notebook.EndSolution):
			in = false
		case !in:
			out = append(out, ln)
		}
	}
	if !found {
		return stub
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// hiddenTestsProbe cuts the ### BEGIN/END HIDDEN TESTS regions out of an
// nbgrader test cell (nbgrader's release strips them) and returns them as
// a probe cell, or nil when the cell has none.
func hiddenTestsProbe(c *notebook.Cell, id string, used map[string]bool) *notebook.Cell {
	if !strings.Contains(string(c.Source), hiddenTests) {
		return nil
	}
	var visible, hidden []string
	in := false
	for _, ln := range strings.Split(string(c.Source), "\n") {
		switch strings.TrimSpace(ln) {
		case hiddenTests:
			in = true
			continue
		case endHiddenTests:
			in = false
			continue
		}
		if in {
			hidden = append(hidden, ln)
		} else {
			visible = append(visible, ln)
		}
	}
	c.Source = notebook.MultilineString(strings.TrimRight(strings.Join(visible, "\n"), "\n"))
	pid := uniqueID(used, id+"-hidden")
	return &notebook.Cell{ID: pid, CellType: "code", Source: notebook.MultilineString(strings.Join(hidden, "\n")), Outputs: []*notebook.Output{}}
}

// nbvalMarks reads a code cell's nbval comments, nbval tags and nbclient tags.
func nbvalMarks(c *notebook.Cell) map[string]bool {
	marks := map[string]bool{}
	for _, t := range c.Tags() {
		switch t {
		case "nbval-ignore-output":
			marks["ignore-output"] = true
		case "nbval-check-output":
			marks["check-output"] = true
		case "nbval-raises-exception", "raises-exception":
			marks["raises-exception"] = true
		case "nbval-skip", "skip-execution":
			marks["skip"] = true
		case "parameters":
			marks["parameters"] = true
		}
	}
	// Comments beat tags (nbval).
	for _, ln := range strings.Split(string(c.Source), "\n") {
		switch strings.TrimSpace(ln) {
		case "# NBVAL_IGNORE_OUTPUT", "# PYTEST_VALIDATE_IGNORE_OUTPUT":
			marks["ignore-output"], marks["check-output"] = true, false
		case "# NBVAL_CHECK_OUTPUT":
			marks["check-output"], marks["ignore-output"] = true, false
		case "# NBVAL_RAISES_EXCEPTION":
			marks["raises-exception"] = true
		case "# NBVAL_SKIP":
			marks["skip"] = true
		}
	}
	return marks
}

// fromMarkers converts nbval/nbclient/papermill marks of a code cell.
// In an nbval notebook every code cell with recorded outputs is graded on
// them, or with lax set only the NBVAL_CHECK_OUTPUT ones.
func fromMarkers(c *notebook.Cell, g map[string]any, nbval, lax bool, rep *Report) {
	marks := nbvalMarks(c)
	src := string(c.Source)
	if strings.Contains(src, notebook.BeginSolution) {
		g["solution"] = true
		if nbval && len(c.Outputs) > 0 && !marks["ignore-output"] && !marks["skip"] && (!lax || marks["check-output"]) {
			// The learner writes it, and nbval checks what it prints.
			g["compare"], g["points"] = "exact", 1.0
			rep.note("%s: solution region with outputs (nbval) -> solution cell graded on its outputs, exact, 1 point", c.ID)
			return
		}
		rep.note("%s: solution region -> solution cell", c.ID)
		return
	}
	switch {
	case marks["parameters"]:
		rep.format("papermill")
		g["id"] = "parameters"
		rep.note("parameters: papermill parameters cell -> locked")
	case marks["skip"]:
		if !nbval {
			rep.format("nbclient")
		}
		g["compare"] = "skip"
		rep.note("%s: skipped -> compare skip, not run", c.ID)
	case marks["raises-exception"]:
		if !nbval {
			rep.format("nbclient")
		}
		g["compare"], g["points"] = "error", 1.0
		if e := firstError(c); e != nil {
			g["ename"] = e.Ename
		}
		rep.note("%s: raises an exception -> compare error", c.ID)
	case marks["ignore-output"]:
		g["compare"] = "ignore"
		rep.note("%s: output ignored -> compare ignore, not graded", c.ID)
	case len(c.Outputs) == 0:
		// nbval does not compare cells the reference never ran.
	case nbval && (!lax || marks["check-output"]):
		g["compare"], g["points"] = "exact", 1.0
		rep.note("%s: outputs checked (nbval) -> compare exact, 1 point", c.ID)
	}
}

func firstError(c *notebook.Cell) *notebook.Output {
	for _, o := range c.Outputs {
		if o.OutputType == notebook.OutputError {
			return o
		}
	}
	return nil
}

// quizVars returns the q-variables of a cell that does nothing but assign
// them (comments and blank lines aside), in order.
func quizVars(src string) []string {
	var qs []string
	for _, ln := range strings.Split(src, "\n") {
		t := strings.TrimSpace(ln)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		m := quizLine.FindStringSubmatch(ln)
		if m == nil {
			return nil
		}
		qs = append(qs, m[1])
	}
	return qs
}

// quizCells makes the answer cell a solution cell (the starter shows
// "qN = None") and adds a locked check cell per variable.
func quizCells(c *notebook.Cell, qs []string, used map[string]bool, rep *Report) []*notebook.Cell {
	var starter, body strings.Builder
	for _, q := range qs {
		starter.WriteString(q + " = None\n")
	}
	body.WriteString(notebook.BeginSolution + "\n" + strings.TrimRight(string(c.Source), "\n") + "\n" + notebook.EndSolution)
	c.Source = notebook.MultilineString(body.String())
	implID := uniqueID(used, qs[0]+"-impl")
	g, _ := json.Marshal(map[string]any{"id": implID, "solution": true, "starter": strings.TrimRight(starter.String(), "\n")})
	if c.Metadata == nil {
		c.Metadata = map[string]json.RawMessage{}
	}
	c.Metadata["grader"] = g
	out := []*notebook.Cell{c}
	for _, q := range qs {
		id := uniqueID(used, q)
		cg, _ := json.Marshal(map[string]any{"id": id, "points": 1.0, "compare": "tokens"})
		out = append(out, &notebook.Cell{ID: id, CellType: "code", Source: notebook.MultilineString(fmt.Sprintf("print(%q, %s)", q+":", q)),
			Metadata: map[string]json.RawMessage{"grader": cg}, Outputs: []*notebook.Output{}})
		rep.note("%s: quiz variable -> graded check cell printing it", id)
	}
	return out
}
