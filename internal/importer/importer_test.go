package importer_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

// grader is what a test expects of one converted cell (by grader id).
type grader struct {
	Solution bool    `json:"solution"`
	Points   float64 `json:"points"`
	Compare  string  `json:"compare"`
	Ename    string  `json:"ename"`
	Starter  *string `json:"starter"`
}

func load(t *testing.T, name string) (*notebook.Notebook, importer.Report, error) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	out, rep, err := importer.ImportBytes(raw)
	if err != nil {
		return nil, rep, err
	}
	nb, perr := notebook.Parse(out, notebook.Limits{RequireIDs: true})
	if perr != nil {
		t.Fatalf("imported notebook does not parse with ids required: %v", perr)
	}
	return nb, rep, nil
}

func TestImport(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tests := []struct {
		file    string
		formats []string
		cells   map[string]grader // grader id -> expected keys
		absent  []string          // grader ids that must not be graded
	}{
		{file: "nbgrader_release.ipynb", formats: []string{"nbgrader"}, cells: map[string]grader{
			"squares":      {Solution: true},
			"test_squares": {Points: 2, Compare: "no-error"},
			// solution + grade is nbgrader's "manually graded answer".
			"manual_answer": {Solution: true},
		}, absent: []string{"setup", "essay", "manual_answer"}},
		{file: "nbval_strict.ipynb", formats: []string{"nbval"}, cells: map[string]grader{
			"add":  {Points: 1, Compare: "exact"},
			"boom": {Points: 1, Compare: "error", Ename: "ZeroDivisionError"},
		}, absent: []string{"imports", "clock", "slow", "tagged"}},
		{file: "nbval_lax.ipynb", formats: []string{"nbval"}, cells: map[string]grader{
			"b": {Points: 1, Compare: "exact"},
			"c": {Points: 1, Compare: "exact"},
		}, absent: []string{"a"}},
		// nbval's default: with no marks, every code cell with outputs is checked.
		{file: "nbval_plain.ipynb", formats: []string{"nbval"}, cells: map[string]grader{
			"p": {Points: 1, Compare: "exact"},
			"r": {Points: 1, Compare: "exact"},
		}, absent: []string{"n"}},
		// papermill parameters in an nbval notebook: the learner's solution
		// cell feeds a check cell whose recorded output is compared.
		{file: "nbval_papermill.ipynb", formats: []string{"nbval", "papermill"}, cells: map[string]grader{
			"impl":  {Solution: true},
			"check": {Points: 1, Compare: "exact"},
			"clock": {Compare: "ignore"},
		}, absent: []string{"parameters", "injected", "clock"}},
		{file: "hub_quiz.ipynb", formats: []string{"papermill", "quiz", "nbclient"}, cells: map[string]grader{
			"q1-impl": {Solution: true, Starter: str("q1 = None\nq2 = None")},
			"q1":      {Points: 1, Compare: "tokens"},
			"q2":      {Points: 1, Compare: "tokens"},
			"noraise": {Points: 1, Compare: "error"},
		}, absent: []string{"parameters", "skipme"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			nb, rep, err := load(t, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(rep.Formats, ",") != strings.Join(tt.formats, ",") {
				t.Errorf("formats %v, want %v", rep.Formats, tt.formats)
			}
			found := map[string]bool{}
			for _, c := range nb.Cells {
				g := c.MustGrader()
				if g.ID == "" {
					continue
				}
				found[g.ID] = true
				// Every converted cell compared automatically must be a
				// valid comparison rule.
				if _, err := compare.ParseRule(nil, g.Raw); g.Manual == nil && err != nil {
					t.Errorf("%s: rule %s: %v", g.ID, g.Raw, err)
				}
				want, ok := tt.cells[g.ID]
				if !ok {
					continue
				}
				var got grader
				_ = json.Unmarshal(g.Raw, &got)
				if got.Solution != want.Solution || got.Points != want.Points || got.Compare != want.Compare || got.Ename != want.Ename {
					t.Errorf("%s: got %s, want %+v", g.ID, g.Raw, want)
				}
				if want.Starter != nil && (got.Starter == nil || *got.Starter != *want.Starter) {
					t.Errorf("%s: starter %v, want %q", g.ID, got.Starter, *want.Starter)
				}
			}
			for id := range tt.cells {
				if !found[id] {
					t.Errorf("no cell with grader id %s", id)
				}
			}
			for _, c := range nb.Cells {
				g := c.MustGrader()
				for _, id := range tt.absent {
					if g.ID == id && g.Graded() {
						t.Errorf("%s must not be graded: %s", id, g.Raw)
					}
				}
			}
			// The starter of an imported notebook hides the solutions.
			st, err := notebook.Starter(nb)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := notebook.Encode(st)
			for _, secret := range []string{"i * i for i", `q1 = "×"`} {
				if strings.Contains(string(b), secret) {
					t.Errorf("the starter shows the solution %q", secret)
				}
			}
		})
	}
}

// TestImportRejects: an edited nbgrader release and an nbgrader cell
// without a grade_id are refused, each with its reason.
func TestImportRejects(t *testing.T) {
	t.Parallel()
	_, _, err := load(t, "nbgrader_edited.ipynb")
	if err == nil || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), "c3d4") {
		t.Errorf("edited release: %v", err)
	}
	raw, _ := os.ReadFile(filepath.Join("testdata", "nbgrader", "source.ipynb"))
	blank := strings.Replace(string(raw), `"grade_id": "mean",`, `"grade_id": "",`, 1)
	if blank == string(raw) {
		t.Fatal("test setup: no replacement")
	}
	_, _, err = importer.ImportBytes([]byte(blank))
	if err == nil || !strings.Contains(err.Error(), "nbgrader cell has no grade_id") || !strings.Contains(err.Error(), "src-mean") {
		t.Errorf("blank grade_id: %v", err)
	}
}

// TestImportNbgraderHiddenTests: the ### BEGIN/END HIDDEN TESTS region of
// an nbgrader test cell becomes a probe cell (not in the starter, run after
// every cell), all or nothing with the visible part, as nbgrader scores
// the whole cell.
func TestImportNbgraderHiddenTests(t *testing.T) {
	t.Parallel()
	raw, _ := os.ReadFile(filepath.Join("testdata", "nbgrader", "source.ipynb"))
	hidden := strings.Replace(string(raw), `"assert squares(1) == [1]\n",`, `"assert squares(1) == [1]\n", "### BEGIN HIDDEN TESTS\n", "assert squares(7)[-1] == 49\n", "### END HIDDEN TESTS\n",`, 1)
	if hidden == string(raw) {
		t.Fatal("test setup: no replacement")
	}
	out, rep, err := importer.ImportBytes([]byte(hidden))
	if err != nil {
		t.Fatal(err)
	}
	nb, err := notebook.Parse(out, notebook.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	visible := nb.CellByGraderID("test_squares")
	probe := nb.CellByGraderID("test_squares-hidden")
	if visible == nil || probe == nil {
		t.Fatalf("cells: %v", rep.Notes)
	}
	vg, pg := visible.MustGrader(), probe.MustGrader()
	if strings.Contains(string(visible.Source), "squares(7)") || strings.Contains(string(visible.Source), "HIDDEN") {
		t.Errorf("the visible test cell keeps the hidden tests:\n%s", visible.Source)
	}
	if strings.TrimSpace(string(probe.Source)) != "assert squares(7)[-1] == 49" {
		t.Errorf("probe source %q", probe.Source)
	}
	if !pg.Probe || pg.For != "test_squares" || pg.Group != "test_squares" || vg.Group != "test_squares" || pg.Points != 1 || vg.Points != 1 {
		t.Errorf("visible %s, probe %s: want 1 + 1 point in one all-or-nothing group", vg.Raw, pg.Raw)
	}
	st, err := notebook.Starter(nb)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := notebook.Encode(st)
	if strings.Contains(string(b), "squares(7)") {
		t.Error("the starter shows the hidden test")
	}
	ex := loadExercise(t, "ps1", []byte(hidden))
	if !ex.HasProbes() || len(ex.Graded) != 3 {
		t.Errorf("graded cells %+v", ex.Graded)
	}
}

// loadExercise writes raw as the answer (and starter) of exercise id and loads it.
func loadExercise(t *testing.T, id string, raw []byte) *exercise.Exercise {
	t.Helper()
	dir := filepath.Join(t.TempDir(), id)
	cfg := `{"id": "` + id + `", "title": "` + id + `", "starter": "nb.ipynb", "answer": "nb.ipynb"}`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.WriteFile(filepath.Join(dir, "nb.ipynb"), raw, 0o644), os.WriteFile(filepath.Join(dir, "exercise.json"), []byte(cfg), 0o644)); err != nil {
		t.Fatal(err)
	}
	ex, err := exercise.LoadOne(dir, dir)
	if err != nil {
		t.Fatalf("the imported exercise does not load: %v", err)
	}
	return ex
}

// TestImportNbgraderUserGuidePS1: both problems of nbgrader's user guide
// (ps1, copied from nbgrader) import with nbgrader's meaning: problem 1's
// autograder tests graded, its written and coded answers graded by hand
// with their points, its task a manual cell; problem 2, two written
// answers and nothing automatic, two manual cells. Both exercises load.
func TestImportNbgraderUserGuidePS1(t *testing.T) {
	t.Parallel()
	type want struct {
		points, manual float64
		solution       bool
		cellType       string
	}
	for file, cells := range map[string]map[string]want{
		"ps1_problem1.ipynb": {
			"squares":                     {solution: true, cellType: "code"},
			"correct_squares":             {points: 1, cellType: "code"},
			"squares_invalid_input":       {points: 1, cellType: "code"},
			"correct_sum_of_squares":      {points: 0.5, cellType: "code"},
			"sum_of_squares_uses_squares": {points: 0.5, cellType: "code"},
			"sum_of_squares_equation":     {manual: 1, solution: true, cellType: "markdown"},
			"sum_of_squares_application":  {manual: 2, solution: true, cellType: "code"},
			"cell-938593c4a215c6cc":       {manual: 4, cellType: "markdown"},
		},
		"ps1_problem2.ipynb": {
			"part-a": {manual: 1, solution: true, cellType: "markdown"},
			"part-b": {manual: 2, solution: true, cellType: "markdown"},
		},
	} {
		nb, rep, err := load(t, filepath.Join("nbgrader", file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for id, w := range cells {
			c := nb.CellByGraderID(id)
			if c == nil {
				t.Errorf("%s: no cell %s: %v", file, id, rep.Notes)
				continue
			}
			g := c.MustGrader()
			manual := 0.0
			if g.Manual != nil {
				manual = g.Manual.Points
			}
			if g.Points != w.points || manual != w.manual || g.Solution != w.solution || c.CellType != w.cellType {
				t.Errorf("%s %s: %s", file, id, g.Raw)
			}
			if w.solution && w.cellType == "markdown" && !strings.HasSuffix(notebook.StarterSource(c), "YOUR ANSWER HERE") {
				t.Errorf("%s %s: starter %q", file, id, notebook.StarterSource(c))
			}
		}
		raw, _ := os.ReadFile(filepath.Join("testdata", "nbgrader", file))
		ex := loadExercise(t, strings.TrimSuffix(strings.ReplaceAll(file, "_", "-"), ".ipynb"), raw)
		manual := 0
		for _, w := range cells {
			if w.manual > 0 {
				manual++
			}
		}
		if len(ex.Manual) != manual {
			t.Errorf("%s: manual cells %v", file, ex.Manual)
		}
	}
}

func TestPyFloat(t *testing.T) {
	t.Parallel()
	for in, want := range map[float64]string{2: "2.0", 0.5: "0.5", 1.5: "1.5", 0: "0.0", 1e-5: "1e-05", 1e16: "1e+16", 123456789: "123456789.0", 0.0001: "0.0001", -3: "-3.0"} {
		if got := notebook.PyFloat(in); got != want {
			t.Errorf("PyFloat(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestImportKeepsJSONOutputs: an output whose application/json value is an
// object or a list of numbers (IPython.display.JSON) comes out of import
// as the same JSON value, not as its text.
func TestImportKeepsJSONOutputs(t *testing.T) {
	t.Parallel()
	src := `{"cells": [
	  {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "JSON({'a': 1})",
	   "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"application/json": {"a": 1}, "text/plain": "<JSON>"}}]},
	  {"cell_type": "code", "execution_count": 2, "metadata": {}, "source": "JSON([1, 2])",
	   "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"application/json": [1, 2], "text/plain": "<JSON>"}}]}],
	 "metadata": {}, "nbformat": 4, "nbformat_minor": 4}`
	out, _, err := importer.ImportBytes([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Cells []struct {
			Outputs []struct {
				Data map[string]any `json:"data"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if got, ok := back.Cells[0].Outputs[0].Data["application/json"].(map[string]any); !ok || got["a"] != 1.0 {
		t.Errorf("object output imported as %#v", back.Cells[0].Outputs[0].Data["application/json"])
	}
	if got, ok := back.Cells[1].Outputs[0].Data["application/json"].([]any); !ok || len(got) != 2 || got[0] != 1.0 {
		t.Errorf("list output imported as %#v", back.Cells[1].Outputs[0].Data["application/json"])
	}
}
