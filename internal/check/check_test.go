package check_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/check"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// answer is an answer notebook whose solution cell is solution: q1
// prints x and q2 prints y, one point each.
func answer(solution string) string {
	src, _ := json.Marshal("### BEGIN SOLUTION\n" + solution + "\n### END SOLUTION")
	return `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": ` + string(src) + `, "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q2", "metadata": {"grader": {"id": "q2", "points": 1}}, "source": "print(y)", "outputs": [], "execution_count": null}
 ]}`
}

// staleExercise writes the exercise "ck" as it stands after its answer was
// edited: a.ipynb holds answer(edited), while references/cpu.json was
// recorded from answer("x = 1\ny = 2") (q1 printed 1, q2 printed 2). Its
// fixture wrong.ipynb (x = 5, y = 7) expects both cells to mismatch. It
// returns the catalogue's folders.
func staleExercise(t *testing.T, edited string) (exDir, ansDir string) {
	t.Helper()
	root := t.TempDir()
	exDir, ansDir = filepath.Join(root, "ex"), filepath.Join(root, "ans")
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(exDir, "ck", "exercise.json"), `{"id": "ck", "title": "ck", "starter": "s.ipynb", "answer": "a.ipynb"}`)
	original := answer("x = 1\ny = 2")
	write(filepath.Join(ansDir, "ck", "a.ipynb"), original)
	ex, err := exercise.LoadOne(filepath.Join(exDir, "ck"), filepath.Join(ansDir, "ck"))
	if err != nil {
		t.Fatal(err)
	}
	stdout := func(s string) []*notebook.Output {
		return []*notebook.Output{{OutputType: notebook.OutputStream, Name: "stdout", Text: notebook.MultilineString(s)}}
	}
	ref, _ := json.Marshal(exercise.Reference{Exercise: "ck", Profile: "cpu", AnswerSHA256: ex.AnswerSHA256(),
		Cells: map[string][]*notebook.Output{"q1": stdout("1\n"), "q2": stdout("2\n")}})
	write(filepath.Join(ansDir, "ck", "references", "cpu.json"), string(ref))
	write(filepath.Join(ansDir, "ck", "fixtures", "wrong.ipynb"), answer("x = 5\ny = 7"))
	write(filepath.Join(ansDir, "ck", "fixtures", "wrong.expected.json"), `{"cells": {"q1": "mismatch", "q2": "mismatch"}}`)
	write(filepath.Join(ansDir, "ck", "a.ipynb"), answer(edited))
	return exDir, ansDir
}

// runCheck loads the catalogue and checks it on the host's Python without
// a sandbox, returning the report and its printed summary.
func runCheck(t *testing.T, exDir, ansDir string, update bool) (*check.Report, string) {
	t.Helper()
	cat, err := exercise.Load(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp("", "npck")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	e := &execution.Executor{Profile: "cpu", WorkRoot: work, Isolation: sandbox.None{}}
	rep, err := check.Run(context.Background(), cat, check.Options{Profile: "cpu", Executor: e, UpdateReference: update,
		JobTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Summary(&out)
	return rep, out.String()
}

func requireExecution(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	if err := (&execution.Executor{}).Check(context.Background()); err != nil {
		t.Skip(err)
	}
}

// TestStaleReferenceNamesChangedCellAndAdvisesRecording: the answer is
// edited so that one graded cell (q2) prints something else; the answer
// and the fixture still grade as expected against its fresh outputs, so
// check names q2, fails, and advises --update-reference; following the
// advice records the new outputs.
func TestStaleReferenceNamesChangedCellAndAdvisesRecording(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	exDir, ansDir := staleExercise(t, "x = 1\ny = 3")
	rep, out := runCheck(t, exDir, ansDir, false)
	if len(rep.References) != 1 {
		t.Fatalf("references %+v, want one entry for ck\n%s", rep.References, out)
	}
	r := rep.References[0]
	if !r.Stale || r.Recorded || strings.Join(r.Changed, ",") != "q2" || !r.Safe() {
		t.Errorf("references %+v, want stale, q2 changed, safe to record\n%s", r, out)
	}
	if code := rep.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1: the recorded outputs are stale\n%s", code, out)
	}
	if !strings.Contains(out, "graded cells whose outputs changed: q2") || !strings.Contains(out, "--only ck --update-reference") {
		t.Errorf("the summary does not name q2 or advise --update-reference:\n%s", out)
	}
	for _, n := range rep.Notebooks {
		if n.Kind != "starter" && !n.OK() {
			t.Errorf("%s %s against the fresh outputs: %+v", n.Kind, n.Name, n)
		}
	}

	// Following the advice records the fresh outputs, and check passes.
	rep, out = runCheck(t, exDir, ansDir, true)
	if len(rep.References) != 1 || !rep.References[0].Recorded || rep.ExitCode() != 0 {
		t.Errorf("--update-reference: %+v exit %d, want recorded and 0\n%s", rep.References, rep.ExitCode(), out)
	}
	// It says so, not that the outputs are stale and still to be recorded.
	if !strings.Contains(out, "ck: recorded the answer's outputs") || strings.Contains(out, "not recorded") || strings.Contains(out, "then record them") {
		t.Errorf("--update-reference recorded, but the summary says otherwise:\n%s", out)
	}
	cat, err := exercise.Load(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := cat.Get("ck")
	if ref, err := ex.Reference("cpu"); err != nil || len(ref.Cells["q2"]) != 1 || string(ref.Cells["q2"][0].Text) != "3\n" {
		t.Errorf("recorded reference %+v %v, want q2 printing 3", ref, err)
	}
}

// TestStaleReferenceFixtureDisagrees: the answer is edited so that the
// fixture's expected verdict for q2 (mismatch) no longer holds against the
// fresh outputs. check names q2 and the fixture and does not advise
// --update-reference; --update-reference refuses to record (exit 1, the
// reference file unchanged).
func TestStaleReferenceFixtureDisagrees(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	exDir, ansDir := staleExercise(t, "x = 1\ny = 7")
	refPath := filepath.Join(ansDir, "ck", "references", "cpu.json")
	before, err := os.ReadFile(refPath)
	if err != nil {
		t.Fatal(err)
	}
	rep, out := runCheck(t, exDir, ansDir, false)
	if len(rep.References) != 1 {
		t.Fatalf("references %+v\n%s", rep.References, out)
	}
	r := rep.References[0]
	if !r.Stale || strings.Join(r.Changed, ",") != "q2" || r.Safe() || len(r.Disagree) != 1 ||
		!strings.HasPrefix(r.Disagree[0], "fixture wrong.ipynb q2:") {
		t.Errorf("references %+v, want q2 changed and fixture wrong.ipynb disagreeing on q2\n%s", r, out)
	}
	if strings.Contains(out, "--only ck --update-reference") || !strings.Contains(out, "fixture wrong.ipynb now disagrees") ||
		!strings.Contains(out, "not advised") {
		t.Errorf("the summary advises recording, or does not name the fixture:\n%s", out)
	}
	if code := rep.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}

	rep, out = runCheck(t, exDir, ansDir, true)
	if len(rep.References) != 1 || rep.References[0].Recorded || rep.ExitCode() == 0 {
		t.Errorf("--update-reference: %+v exit %d, want a refusal\n%s", rep.References, rep.ExitCode(), out)
	}
	if !strings.Contains(out, "NOT recorded") || !strings.Contains(out, "fixture wrong.ipynb q2:") {
		t.Errorf("--update-reference does not say it refused and why:\n%s", out)
	}
	if after, _ := os.ReadFile(refPath); !bytes.Equal(before, after) {
		t.Errorf("--update-reference wrote the reference despite the fixture:\n%s", after)
	}
}

// probedExercise writes the exercise "pr": q1 prints f(2) and its probe
// prints f(NPUGRADE_SEED) for the pool [3, 5], with the references of both
// seeds recorded from the answer f(n) = 2n. It returns the catalogue's
// folders.
func probedExercise(t *testing.T) (exDir, ansDir string) {
	t.Helper()
	root := t.TempDir()
	exDir, ansDir = filepath.Join(root, "ex"), filepath.Join(root, "ans")
	src, _ := json.Marshal("### BEGIN SOLUTION\ndef f(n):\n    return 2 * n\n### END SOLUTION")
	nb := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": ` + string(src) + `, "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(f(2))", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1-probe", "metadata": {"grader": {"id": "q1-probe", "probe": true, "for": "q1", "points": 1}}, "source": "print(f(NPUGRADE_SEED))", "outputs": [], "execution_count": null}
 ]}`
	for p, s := range map[string]string{
		filepath.Join(exDir, "pr", "exercise.json"): `{"id": "pr", "title": "pr", "starter": "s.ipynb", "answer": "a.ipynb", "probe_seeds": [3, 5]}`,
		filepath.Join(ansDir, "pr", "a.ipynb"):      nb,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rep, out := runCheck(t, exDir, ansDir, true); rep.ExitCode() != 0 {
		t.Fatalf("recording the references: exit %d\n%s", rep.ExitCode(), out)
	}
	return exDir, ansDir
}

// TestSeedReproducesALearnersGrade: a learner's f that is right only for
// seed 3 passes the probe when graded with --seed 3 and fails it with
// --seed 5, so the seed a submission was graded with reproduces its grade;
// a seed outside the pool, which no reference has outputs for, is refused.
func TestSeedReproducesALearnersGrade(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	exDir, ansDir := probedExercise(t)
	upload := filepath.Join(t.TempDir(), "learner.ipynb")
	src, _ := json.Marshal("def f(n):\n    return {2: 4, 3: 6}.get(n, 0)")
	if err := os.WriteFile(upload, []byte(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": `+string(src)+`, "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(f(2))", "outputs": [], "execution_count": null}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := exercise.Load(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	grade := func(seed int64) (*check.Report, string, error) {
		work := t.TempDir()
		e := &execution.Executor{Profile: "cpu", WorkRoot: work, Isolation: sandbox.None{}}
		rep, err := check.Run(context.Background(), cat, check.Options{Profile: "cpu", Executor: e, JobTimeout: 2 * time.Minute,
			Only: map[string]bool{"pr": true}, Seed: &seed, Notebooks: []string{upload}})
		if err != nil {
			return nil, "", err
		}
		var out bytes.Buffer
		rep.Summary(&out)
		return rep, out.String(), nil
	}
	verdict := func(rep *check.Report, cell string) string {
		for _, c := range rep.Notebooks[0].Cases {
			if c.CellID == cell {
				return c.Got.Verdict
			}
		}
		return ""
	}
	for _, tt := range []struct {
		seed  int64
		probe string
		score float64
	}{{3, "pass", 2}, {5, "mismatch", 0}} {
		rep, out, err := grade(tt.seed)
		if err != nil {
			t.Fatalf("seed %d: %v", tt.seed, err)
		}
		if len(rep.Notebooks) != 1 || rep.Notebooks[0].Kind != "notebook" || rep.Notebooks[0].Seed != tt.seed {
			t.Fatalf("seed %d: notebooks %+v, want only the learner's, with that seed", tt.seed, rep.Notebooks)
		}
		if got := verdict(rep, "q1-probe"); got != tt.probe || rep.Notebooks[0].Score != tt.score || rep.ExitCode() != 0 {
			t.Errorf("seed %d: probe %s, score %g, exit %d; want %s, %g, 0\n%s", tt.seed, got, rep.Notebooks[0].Score, rep.ExitCode(), tt.probe, tt.score, out)
		}
		if want := "pr learner.ipynb (probe seed " + strconv.FormatInt(tt.seed, 10) + ")"; !strings.Contains(out, want) || !strings.Contains(out, "q1-probe") {
			t.Errorf("seed %d: the summary does not list the cells under %q:\n%s", tt.seed, want, out)
		}
	}
	if _, _, err := grade(9); err == nil || !strings.Contains(err.Error(), "seed 9 is not in pr's probe seed pool [3 5]") {
		t.Errorf("seed 9: %v, want it refused as outside the pool", err)
	}
}
