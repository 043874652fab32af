package importer_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/importer"
	"github.com/npugrade/npugrade/internal/notebook"
)

func readNotebook(t *testing.T, path string) *notebook.Notebook {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := notebook.Parse(raw, notebook.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

// TestImportNbgraderSource: nbgrader's schema 3 (cell_type included),
// manually graded cells kept ungraded, AUTOTEST lines turned into compared
// values, and stderr counted only when asked.
func TestImportNbgraderSource(t *testing.T) {
	t.Parallel()
	src := readNotebook(t, "testdata/nbgrader/source.ipynb")
	for _, strict := range []bool{false, true} {
		nb, rep, err := importer.ImportWith(src, importer.Options{NbgraderStderr: strict})
		if err != nil {
			t.Fatal(err)
		}
		gs := graders(t, nb)
		if gs["test_squares"].Points != 2 || gs["test_squares"].Compare != "no-error" {
			t.Errorf("test_squares: %+v", gs["test_squares"])
		}
		var sq struct {
			Targets []string `json:"targets"`
		}
		_ = json.Unmarshal(nb.CellByGraderID("test_squares").MustGrader().Raw, &sq)
		if strict != (len(sq.Targets) == 1 && sq.Targets[0] == "stderr") {
			t.Errorf("--nbgrader-stderr %v: test_squares targets %v", strict, sq.Targets)
		}
		mean := nb.CellByGraderID("test_mean")
		if gs["test_mean"].Compare != "tokens" || gs["test_mean"].Points != 3 ||
			!strings.Contains(string(mean.Source), `print("AUTOTEST mean([1, 2, 3]):", repr(mean([1, 2, 3])))`) ||
			!strings.Contains(string(mean.Source), "assert mean([4]) == 4") || strings.Contains(string(mean.Source), "### AUTOTEST") {
			t.Errorf("AUTOTEST cell: %+v\n%s", gs["test_mean"], mean.Source)
		}
		for id, points := range map[string]float64{"explain": 1, "plot": 2} {
			g := nb.CellByGraderID(id).MustGrader()
			if g.Points != 0 || !g.Solution || g.Manual == nil || g.Manual.Points != points {
				t.Errorf("manually graded %s must be a manual solution cell worth %g: %s", id, points, g.Raw)
			}
		}
		if g := nb.CellByGraderID("explain"); g.CellType != "markdown" || notebook.StarterSource(g) != "Explain why `squares(0)` is empty.\n\nYOUR ANSWER HERE" {
			t.Errorf("a written answer's starter is nbgrader's: %q", notebook.StarterSource(g))
		}
		if !strings.Contains(strings.Join(rep.Notes, "\n"), "plot: manually graded answer in nbgrader -> manual cell, 2 points") {
			t.Errorf("no note on the manual cell: %v", rep.Notes)
		}
	}
	// A cell whose type changed since nbgrader generated it is refused.
	bad := src.Clone()
	bad.Cells[1].CellType = "markdown"
	bad.Cells[1].Outputs, bad.Cells[1].ExecutionCount = nil, nil
	if _, _, err := importer.Import(bad); err == nil || !strings.Contains(err.Error(), "generated this cell as code, but it is markdown") {
		t.Errorf("changed cell type: %v", err)
	}
}

// TestRebuildNbgraderSubmission: a submission in nbgrader's own format
// (metadata.nbgrader only, other cell ids, nbgrader's generated asserts in
// the test cells) keeps its answers: cells are matched by grade_id, and
// locked cells run as the template has them.
func TestRebuildNbgraderSubmission(t *testing.T) {
	t.Parallel()
	answer, _, err := importer.Import(readNotebook(t, "testdata/nbgrader/source.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	sub := readNotebook(t, "testdata/nbgrader/submitted_bitdiddle.ipynb")
	rebuilt, integ, err := notebook.Rebuild(answer, sub)
	if err != nil {
		t.Fatal(err)
	}
	if len(integ.Verdicts) != 0 || len(integ.MissingSolutions) != 0 {
		t.Errorf("integrity %+v: the nbgrader submission's cells were not matched", integ)
	}
	if src := string(rebuilt.CellByGraderID("mean").Source); !strings.Contains(src, "return 0") {
		t.Errorf("mean is not the learner's:\n%s", src)
	}
	if src := string(rebuilt.CellByGraderID("test_mean").Source); !strings.Contains(src, "AUTOTEST") {
		t.Errorf("the template's test cell must run:\n%s", src)
	}
	// An edited locked cell is restored and graded as usual, as nbgrader's
	// autograder does (the user guide's bitdiddle edits his test cells).
	sub.Cells[2].Source = "assert True"
	rebuilt, integ, _ = notebook.Rebuild(answer, sub)
	if len(integ.Verdicts) != 0 || !strings.Contains(string(rebuilt.CellByGraderID("test_squares").Source), "squares(3) == [1, 4, 9]") {
		t.Errorf("edited test cell: %+v\n%s", integ.Verdicts, rebuilt.CellByGraderID("test_squares").Source)
	}
}
