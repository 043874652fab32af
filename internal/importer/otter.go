package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"

	"github.com/hashicorp/go-multierror"
	"go.yaml.in/yaml/v4"

	"github.com/npugrade/npugrade/internal/notebook"
)

// Otter-Grader's assign format (v1, Python): raw cells "# BEGIN QUESTION"
// (with a YAML config), "# BEGIN SOLUTION", "# BEGIN TESTS", "# BEGIN
// PROMPT" and their ends, or the same in a Markdown cell fenced as
// ```otter, and an optional "# ASSIGNMENT CONFIG" cell. Otter builds a
// student notebook (solutions replaced, hidden tests left out) and an
// autograder; import builds the one answer both come from here:
//
//   - a solution cell per solution cell, its starter what Otter's student
//     notebook shows (a PROMPT block, else "..." for each solution line or
//     block, else Otter's response text for written answers), keeping the
//     Otter question's name (metadata.grader.otter) so that a notebook a
//     student filled in from Otter's own student notebook can be graded;
//   - a locked graded cell per public test, compared with the answer's
//     output as Otter compares a doctest (exact), and a probe cell (never in
//     the starter, run after every cell) per hidden test; each earns its
//     share of the question's points, as Otter resolves them;
//   - a manual question's first solution cell a manual cell with the
//     question's points (1 when none are given, Otter's default).
var (
	otterBoundary = regexp.MustCompile(`(?i)^#\s+(begin|end)\s+(question|solution|tests|prompt)\b`)
	otterConfig   = regexp.MustCompile(`(?i)^#\s+assignment\s+config\b`)
	otterHidden   = regexp.MustCompile(`(?i)\bhidden\b`)
	otterTestConf = regexp.MustCompile(`(?i)^(?:.\s*=\s*)?"""?\s*#\s*BEGIN\s*TEST\s*CONFIG`)
	otterTestEnd  = regexp.MustCompile(`(?i)^"""?\s*#\s*END\s*TEST\s*CONFIG`)
	// A line ending in "# SOLUTION": an assignment keeps its target.
	otterSolutionAssign = regexp.MustCompile(`^(\s*(?:[\w.]+(?:\[['"]?.*['"]?\])*(?:,\s*)?)+\s*=).* ?# ?SOLUTION\s*$`)
	otterSolutionLine   = regexp.MustCompile(`^(\s*).* ?# ?SOLUTION\s*$`)
	otterBeginSolution  = regexp.MustCompile(`^(\s*)# BEGIN SOLUTION( NO PROMPT)?\s*$`)
	otterBeginIgnore    = regexp.MustCompile(`(?i)^\s*#\s*BEGIN\s*IGNORE`)
)

// otterResponse is the text Otter's student notebook puts in a written answer.
const otterResponse = "_Type your answer here, replacing this text._"

// otterCell is a cell as Otter sees it: a fenced Markdown cell is raw.
func otterCell(c *notebook.Cell) (cellType string, lines []string) {
	lines = strings.Split(string(c.Source), "\n")
	if c.CellType == "markdown" && len(lines) >= 2 && strings.TrimSpace(lines[0]) == "```otter" {
		end := len(lines) - 1
		for end > 0 && strings.TrimSpace(lines[end]) == "" {
			end--
		}
		if strings.TrimSpace(lines[end]) == "```" {
			return "raw", lines[1:end]
		}
	}
	return c.CellType, lines
}

// isOtter reports whether nb is an Otter assign notebook.
func isOtter(nb *notebook.Notebook) bool {
	for _, c := range nb.Cells {
		if t, lines := otterCell(c); t == "raw" && (otterBoundary.MatchString(lines[0]) || otterConfig.MatchString(lines[0])) {
			return true
		}
	}
	return false
}

// otterQuestion is one "# BEGIN QUESTION" block.
type otterQuestion struct {
	Name         string `yaml:"name"`
	Manual       bool   `yaml:"manual"`
	Points       any    `yaml:"points"`
	AllOrNothing bool   `yaml:"all_or_nothing"`
	CheckCell    *bool  `yaml:"check_cell"`
	Export       bool   `yaml:"export"`

	id        string           // the grader id made of Name
	solutions []*notebook.Cell // in order
	prompts   []*notebook.Cell // PROMPT block cells, the starter of the solutions
	tests     []*otterTest
}

type otterTest struct {
	cell   *notebook.Cell
	hidden bool
	points *float64
}

// fromOtter converts an Otter assign notebook's cells; every problem is
// reported at once.
func fromOtter(nb *notebook.Notebook, used map[string]bool, rep *Report) ([]*notebook.Cell, error) {
	var errs *multierror.Error
	fail := func(i int, format string, args ...any) {
		errs = multierror.Append(errs, fmt.Errorf("cell %d: %s", i+1, fmt.Sprintf(format, args...)))
	}
	var out []*notebook.Cell
	var q *otterQuestion
	var block string // solution, tests or prompt, inside q
	var questions []*otterQuestion
	names := map[string]bool{}
	for i, c := range nb.Cells {
		t, lines := otterCell(c)
		if t == "raw" && otterConfig.MatchString(lines[0]) {
			var cfg map[string]any
			if err := yaml.Unmarshal([]byte(strings.Join(lines[1:], "\n")), &cfg); err != nil {
				fail(i, "ASSIGNMENT CONFIG: %v", err)
			}
			rep.note("ASSIGNMENT CONFIG: read, not applied (Otter's export, PDF and generate settings have no meaning here; requirements must be in the grading environment)")
			continue
		}
		if m := otterBoundary.FindStringSubmatch(lines[0]); t == "raw" && m != nil {
			begin, kind := strings.EqualFold(m[1], "begin"), strings.ToLower(m[2])
			switch {
			case begin && kind == "question":
				if q != nil {
					fail(i, "BEGIN QUESTION inside question %s", q.Name)
					continue
				}
				q = &otterQuestion{}
				if err := decodeOtterQuestion(strings.Join(lines[1:], "\n"), q); err != nil {
					fail(i, "question config: %v", err)
				}
				if names[q.Name] {
					fail(i, "question %q is defined twice", q.Name)
				}
				names[q.Name] = true
				q.id = uniqueID(used, otterID(q.Name))
				questions = append(questions, q)
			case begin && q == nil:
				fail(i, "BEGIN %s outside a question", strings.ToUpper(kind))
			case begin && block != "":
				fail(i, "BEGIN %s inside the %s block of question %s", strings.ToUpper(kind), block, q.Name)
			case begin:
				block = kind
			case kind == "question" && q == nil, kind != "question" && block != kind:
				fail(i, "END %s without its BEGIN", strings.ToUpper(kind))
			case kind == "question":
				if block != "" {
					fail(i, "END QUESTION before END %s", strings.ToUpper(block))
				}
				out = append(out, q.cells(used, rep, func(format string, args ...any) { fail(i, format, args...) })...)
				q, block = nil, ""
			default:
				block = ""
			}
			continue
		}
		switch {
		case block == "solution":
			q.solutions = append(q.solutions, c)
		case block == "prompt":
			q.prompts = append(q.prompts, c)
		case block == "tests":
			if c.CellType != "code" {
				fail(i, "question %s: a test must be a code cell", q.Name)
				continue
			}
			tc, err := readOtterTest(c)
			if err != nil {
				fail(i, "question %s: %v", q.Name, err)
				continue
			}
			q.tests = append(q.tests, tc)
		default:
			if c.CellType == "code" {
				c.Source = notebook.MultilineString(strings.Join(otterKept(lines), "\n"))
			}
			out = append(out, c)
		}
	}
	if q != nil {
		errs = multierror.Append(errs, fmt.Errorf("question %s has no END QUESTION", q.Name))
	}
	if len(questions) == 0 && errs == nil {
		errs = multierror.Append(errs, errors.New("an Otter notebook needs at least one BEGIN QUESTION block"))
	}
	return out, errs.ErrorOrNil()
}

func decodeOtterQuestion(src string, q *otterQuestion) error {
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(q); err != nil {
		return err
	}
	if q.Name == "" {
		return errors.New("name is required")
	}
	return nil
}

// otterID makes a grader id of an Otter question name ("q1.2" -> "q1_2").
func otterID(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// readOtterTest reads one test cell: "# HIDDEN" (any first comment line
// saying hidden) or a TEST CONFIG block with hidden and points.
func readOtterTest(c *notebook.Cell) (*otterTest, error) {
	lines := strings.Split(strings.TrimRight(string(c.Source), "\n"), "\n")
	tc := &otterTest{cell: c}
	body := lines
	if strings.HasPrefix(strings.TrimSpace(lines[0]), "#") && otterHidden.MatchString(lines[0]) {
		tc.hidden, body = true, lines[1:]
	}
	if otterTestConf.MatchString(lines[0]) {
		end := -1
		for j, ln := range lines {
			if otterTestEnd.MatchString(ln) {
				end = j
				break
			}
		}
		if end < 0 {
			return nil, errors.New("BEGIN TEST CONFIG without END TEST CONFIG")
		}
		var cfg struct {
			Hidden         *bool    `yaml:"hidden"`
			Points         *float64 `yaml:"points"`
			SuccessMessage string   `yaml:"success_message"`
			FailureMessage string   `yaml:"failure_message"`
		}
		dec := yaml.NewDecoder(strings.NewReader(strings.Join(lines[1:end], "\n")))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("test config: %w", err)
		}
		if cfg.Hidden != nil {
			tc.hidden = *cfg.Hidden
		}
		tc.points, body = cfg.Points, lines[end+1:]
	}
	c.Source = notebook.MultilineString(strings.Join(otterKept(body), "\n"))
	return tc, nil
}

// cells builds the question's cells: solutions, then tests, each with its
// grader metadata.
func (q *otterQuestion) cells(used map[string]bool, rep *Report, fail func(string, ...any)) []*notebook.Cell {
	var out []*notebook.Cell
	if q.Manual && len(q.tests) > 0 {
		fail("question %s is manual but has tests", q.Name)
	}
	if len(q.solutions) == 0 && q.Manual {
		// Nothing to answer in: a written answer cell, as Otter adds one.
		q.solutions = append(q.solutions, &notebook.Cell{CellType: "markdown", Source: notebook.MultilineString(otterResponse)})
	}
	starters := q.starters()
	for k, c := range q.solutions {
		id := q.id
		if k > 0 {
			id = uniqueID(used, fmt.Sprintf("%s-%d", q.id, k+1))
		}
		c.ID = id
		g := map[string]any{"id": id, "solution": true, "otter": q.Name, "starter": starters[k]}
		if c.CellType == "code" {
			c.Source = notebook.MultilineString(strings.Join(otterKept(strings.Split(string(c.Source), "\n")), "\n"))
		}
		if q.Manual && k == 0 {
			points, given := 1.0, false
			if p, ok := q.Points.(float64); ok && p > 0 {
				points, given = p, true
			} else if p, ok := q.Points.(int); ok && p > 0 {
				points, given = float64(p), true
			}
			g["manual"] = map[string]any{"points": points}
			if given {
				rep.note("%s: Otter manual question %s -> manual cell, %g points", id, q.Name, points)
			} else {
				rep.note("%s: Otter manual question %s -> manual cell, %g points (no points given: 1, Otter's default)", id, q.Name, points)
			}
		} else {
			rep.note("%s: Otter solution of %s -> solution cell, its starter as Otter's student notebook shows it", id, q.Name)
		}
		setGrader(c, g)
		out = append(out, c)
	}
	if len(q.tests) == 0 {
		if !q.Manual {
			rep.note("%s: Otter question without tests -> nothing graded automatically", q.Name)
		}
		return out
	}
	points, err := q.testPoints()
	if err != nil {
		fail("question %s: %v", q.Name, err)
		return out
	}
	if len(q.solutions) == 0 && anyHidden(q.tests) {
		fail("question %s has hidden tests but no solution cell for them to test", q.Name)
		return out
	}
	public, hidden := 0, 0
	for k, tc := range q.tests {
		g := map[string]any{"points": points[k], "compare": "exact"}
		if q.AllOrNothing {
			g["group"] = q.id
		}
		if tc.hidden {
			hidden++
			g["id"], g["probe"], g["for"] = uniqueID(used, fmt.Sprintf("%s-hidden-%d", q.id, hidden)), true, q.id
		} else {
			public++
			g["id"] = uniqueID(used, fmt.Sprintf("%s-test-%d", q.id, public))
		}
		tc.cell.ID = g["id"].(string)
		setGrader(tc.cell, g)
		out = append(out, tc.cell)
	}
	rep.note("%s: Otter tests -> %d public test cells and %d hidden (probe cells, never shown), %g points in all, compared exactly with the answer's outputs",
		q.Name, public, hidden, sum(points))
	return out
}

func anyHidden(tests []*otterTest) bool {
	for _, tc := range tests {
		if tc.hidden {
			return true
		}
	}
	return false
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// testPoints shares the question's points out over its tests as Otter
// does: a list gives each test its own; {each: n} n each; a number is
// split evenly over the tests without points of their own; none is 1
// point split evenly, unless some test has its own (then the others get 0).
func (q *otterQuestion) testPoints() ([]float64, error) {
	n := len(q.tests)
	out := make([]float64, n)
	var total *float64
	switch p := q.Points.(type) {
	case nil:
	case int:
		v := float64(p)
		total = &v
	case float64:
		total = &p
	case []any:
		if len(p) != n {
			return nil, fmt.Errorf("points lists %d values for %d tests", len(p), n)
		}
		for k, v := range p {
			f, ok := number(v)
			if !ok || f < 0 {
				return nil, fmt.Errorf("points[%d] %v is not a number >= 0", k, v)
			}
			out[k] = f
		}
		return out, nil
	case map[string]any:
		each, ok := number(p["each"])
		if len(p) != 1 || !ok || each < 0 {
			return nil, fmt.Errorf("points %v: want a number, a list or {each: N}", p)
		}
		for k := range out {
			out[k] = each
		}
		return out, nil
	default:
		return nil, fmt.Errorf("points %v: want a number, a list or {each: N}", p)
	}
	given, open := 0.0, 0
	for k, tc := range q.tests {
		if tc.points != nil {
			out[k] = *tc.points
			given += *tc.points
		} else {
			open++
		}
	}
	per := 0.0
	switch {
	case total != nil && given > *total:
		return nil, fmt.Errorf("its tests give %g points, more than the question's %g", given, *total)
	case total != nil && open > 0:
		per = (*total - given) / float64(open)
	case total == nil && given == 0 && open > 0:
		per = 1 / float64(open)
	}
	for k, tc := range q.tests {
		if tc.points == nil {
			out[k] = per
		}
	}
	return out, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return 0, false
}

// starters are what Otter's student notebook shows for each solution cell.
func (q *otterQuestion) starters() []string {
	out := make([]string, len(q.solutions))
	var prompt []string
	for _, c := range q.prompts {
		prompt = append(prompt, strings.TrimRight(string(c.Source), "\n"))
	}
	for k, c := range q.solutions {
		switch {
		case k == 0 && len(prompt) > 0:
			out[k] = strings.Join(prompt, "\n\n")
		case len(prompt) > 0:
			out[k] = "" // the prompt stands for the whole answer
		case c.CellType == "code":
			out[k] = strings.Join(otterStudentLines(strings.Split(string(c.Source), "\n")), "\n")
		default:
			out[k] = otterResponse
		}
	}
	return out
}

// otterKept drops the lines Otter removes from every version of the
// notebook ("# IGNORE" lines and BEGIN/END IGNORE blocks).
func otterKept(lines []string) []string {
	var out []string
	in := false
	for _, ln := range lines {
		t := strings.TrimRight(ln, " \t")
		switch {
		case strings.HasSuffix(t, "# END IGNORE"):
			in = false
		case strings.HasSuffix(t, "# IGNORE"):
		case otterBeginIgnore.MatchString(ln):
			in = true
		case !in:
			out = append(out, ln)
		}
	}
	return out
}

// otterStudentLines is a solution cell as Otter's student notebook shows
// it: solution lines and blocks replaced by "...", prompt markers and
// "# SEED" lines dropped.
func otterStudentLines(lines []string) []string {
	var out []string
	in := false
	for _, ln := range otterKept(lines) {
		t := strings.TrimRight(ln, " \t")
		if strings.HasSuffix(t, "# SOLUTION NO PROMPT") || strings.HasSuffix(t, "# BEGIN PROMPT") ||
			strings.HasSuffix(t, "# END PROMPT") || strings.HasSuffix(t, "# SEED") {
			continue
		}
		if strings.HasSuffix(t, "# END SOLUTION") {
			in = false
			continue
		}
		if in {
			continue
		}
		if m := otterBeginSolution.FindStringSubmatch(t); m != nil {
			in = true
			if m[2] == "" {
				out = append(out, m[1]+"...")
			}
			continue
		}
		if m := otterSolutionAssign.FindStringSubmatch(t); m != nil {
			out = append(out, m[1]+" ...")
			continue
		}
		if m := otterSolutionLine.FindStringSubmatch(t); m != nil {
			out = append(out, m[1]+"...")
			continue
		}
		out = append(out, ln)
	}
	return out
}

func setGrader(c *notebook.Cell, g map[string]any) {
	b, _ := json.Marshal(g)
	if c.Metadata == nil {
		c.Metadata = map[string]json.RawMessage{}
	}
	c.Metadata["grader"] = b
}
