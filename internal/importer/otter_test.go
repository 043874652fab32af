package importer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

// TestImportOtterTutorial imports Otter-Grader's own tutorial assignment
// (docs/tutorial/demo.ipynb, otter assign's v1 format): questions become
// solution cells whose starters are what Otter's student notebook shows,
// public tests locked graded cells, hidden tests probes, manual questions
// manual cells; the starter holds no solution, hidden test or config.
func TestImportOtterTutorial(t *testing.T) {
	t.Parallel()
	nb, rep, err := load(t, "otter/demo.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rep.Formats, ",") != "otter" {
		t.Errorf("formats %v", rep.Formats)
	}
	want := map[string]struct {
		solution, probe bool
		manual          float64
		points          float64
		starter         string
	}{
		"q1":          {solution: true, starter: "def square(x):\n    ..."},
		"q2":          {solution: true, starter: "def fiberator():\n    ..."},
		"q3":          {solution: true, starter: "data = ...\nprice_by_flavor = ...\nprice_by_flavor"},
		"q4":          {solution: true, manual: 1, starter: "..."},
		"q5":          {solution: true, manual: 1, starter: "_Type your answer here, replacing this text._"},
		"q1-test-1":   {points: 1.0 / 3},
		"q1-test-2":   {points: 1.0 / 3},
		"q1-hidden-1": {probe: true, points: 1.0 / 3},
		"q2-test-1":   {points: 0.5},
		"q2-hidden-1": {probe: true, points: 0.5},
		"q3-test-4":   {points: 0.125},
		"q3-hidden-4": {probe: true, points: 0.125},
	}
	for id, w := range want {
		c := nb.CellByGraderID(id)
		if c == nil {
			t.Errorf("no cell %s", id)
			continue
		}
		g := c.MustGrader()
		manual := 0.0
		if g.Manual != nil {
			manual = g.Manual.Points
		}
		if g.Solution != w.solution || g.Probe != w.probe || manual != w.manual || g.Points != w.points {
			t.Errorf("%s: %s", id, g.Raw)
		}
		if w.probe && g.For != strings.Split(id, "-")[0] {
			t.Errorf("%s: probe for %q", id, g.For)
		}
		if w.solution && (notebook.StarterSource(c) != w.starter || g.Otter != id) {
			t.Errorf("%s: starter %q, otter %q", id, notebook.StarterSource(c), g.Otter)
		}
	}
	st, err := notebook.Starter(nb)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := notebook.Encode(st)
	for _, secret := range []string{"x**2", "yield 0", "pd.DataFrame({", "plot.bar", "mint is the highest",
		"square(2.5)", "next(f) == 21", `price_by_flavor["mint"], 4.5`, "ASSIGNMENT CONFIG", "BEGIN QUESTION", "# SOLUTION", "\"otter\""} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the starter holds %q", secret)
		}
	}
	for _, public := range []string{"square(1) == 1", "assert type(price_by_flavor) == pd.Series"} {
		if !strings.Contains(string(b), public) {
			t.Errorf("the starter lacks the public test %q", public)
		}
	}
	// Hidden tests test the solution cell: the exercise loads with them.
	raw, _ := os.ReadFile(filepath.Join("testdata", "otter", "demo.ipynb"))
	ex := loadExercise(t, "demo", raw)
	if len(ex.Graded) != 13 || len(ex.Manual) != 2 || !ex.HasProbes() {
		t.Errorf("graded %d, manual %d", len(ex.Graded), len(ex.Manual))
	}
}

// TestRebuildOtterSubmission: a notebook filled in from Otter's own student
// notebook (no metadata, grader.check cells, manual questions between
// BEGIN/END QUESTION comments) is rebuilt with its answers in the solution
// cells and the template's tests, none of them reported missing.
func TestRebuildOtterSubmission(t *testing.T) {
	t.Parallel()
	answer, _, err := importer.Import(readNotebook(t, "testdata/otter/demo.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	sub := readNotebook(t, "testdata/otter/demo-passesAll.ipynb")
	rebuilt, integ, err := notebook.Rebuild(answer, sub)
	if err != nil {
		t.Fatal(err)
	}
	if len(integ.Verdicts) != 0 || len(integ.MissingSolutions) != 0 {
		t.Errorf("integrity %+v", integ)
	}
	for id, learner := range map[string]string{
		"q1": "return x**2", "q2": "x, y = y, x + y", "q3": `data.groupby("flavor").mean()["price"]`,
		"q4": "price_by_flavor.plot.bar()", "q5": "_Type your answer here",
	} {
		if src := string(rebuilt.CellByGraderID(id).Source); !strings.Contains(src, learner) || strings.Contains(src, "# SOLUTION") {
			t.Errorf("%s is not the learner's:\n%s", id, src)
		}
	}
	if src := string(rebuilt.CellByGraderID("q1-test-1").Source); src != "square(1) == 1" {
		t.Errorf("the template's test must run: %q", src)
	}
	for _, c := range rebuilt.Cells {
		if strings.Contains(string(c.Source), "grader.check") || strings.Contains(string(c.Source), "otter.Notebook") {
			t.Errorf("Otter's client code runs: %q", c.Source)
		}
	}
}
