package scoring_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/scoring"
)

// probeAnswer is a small answer: q1 with two hidden probes, and q2/q3 in an
// all-or-nothing group.
const probeAnswer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}},
 "cells": [
  {"cell_type": "code", "id": "q1-impl", "metadata": {"grader": {"id": "q1-impl", "solution": true}}, "source": "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 2}}, "source": "print(f(1))", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1-probe-a", "metadata": {"grader": {"id": "q1-probe-a", "probe": true, "for": "q1", "points": 1}}, "source": "print(f(NPUGRADE_SEED))", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1-probe-b", "metadata": {"grader": {"id": "q1-probe-b", "probe": true, "for": "q1", "points": 1}}, "source": "print(f(NPUGRADE_SEED + 1))", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q2", "metadata": {"grader": {"id": "q2", "points": 1, "group": "pair"}}, "source": "print('a')", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q3", "metadata": {"grader": {"id": "q3", "points": 1, "group": "pair", "visibility": "hidden"}}, "source": "print('b')", "outputs": [], "execution_count": null}
 ]}`

func loadProbeExercise(t *testing.T, config string) *exercise.Exercise {
	t.Helper()
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "exercises", "px"), filepath.Join(root, "answers", "px")
	for _, d := range []string{exDir, ansDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `{"id": "px", "title": "p", "starter": "p.ipynb", "answer": "p_answer.ipynb", "probe_seeds": [5, 9]` + config + `}`
	if err := os.WriteFile(filepath.Join(exDir, "exercise.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ansDir, "p_answer.ipynb"), []byte(probeAnswer), 0o644); err != nil {
		t.Fatal(err)
	}
	ex, err := exercise.LoadOne(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func stdout(s string) []*notebook.Output {
	return []*notebook.Output{{OutputType: notebook.OutputStream, Name: "stdout", Text: notebook.MultilineString(s)}}
}

func probeReference(ex *exercise.Exercise) *exercise.Reference {
	return &exercise.Reference{Exercise: ex.ID, Profile: "cpu", AnswerSHA256: ex.AnswerSHA256(),
		Cells: map[string][]*notebook.Output{"q1": stdout("2\n"), "q2": stdout("a\n"), "q3": stdout("b\n")},
		Probes: map[string]map[string][]*notebook.Output{
			"5": {"q1-probe-a": stdout("10\n"), "q1-probe-b": stdout("12\n")},
			"9": {"q1-probe-a": stdout("18\n"), "q1-probe-b": stdout("20\n")},
		}}
}

// executed builds the executed notebook with the given outputs per grader id.
func executed(t *testing.T, ex *exercise.Exercise, seed int64, outs map[string][]*notebook.Output) *notebook.Notebook {
	t.Helper()
	nb, _, err := notebook.RebuildSeeded(ex.Answer, ex.Answer, seed)
	if err != nil {
		t.Fatal(err)
	}
	n := 1
	for _, c := range nb.Cells {
		if o, ok := outs[c.MustGrader().ID]; ok {
			c.Outputs = o
			cnt := n
			c.ExecutionCount = &cnt
			n++
		}
	}
	return nb
}

func TestScoreProbesGroupsAndLatePenalty(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ex := loadProbeExercise(t, `, "deadline": "2026-03-01T12:00:00Z", "late_penalty": [{"after": "0s", "multiplier": 0.9}, {"after": "24h", "multiplier": 0.5}]`)
	ref := probeReference(ex)
	good := map[string][]*notebook.Output{"q1": stdout("2\n"), "q1-probe-a": stdout("10\n"), "q1-probe-b": stdout("12\n"), "q2": stdout("a\n"), "q3": stdout("b\n")}
	with := func(over map[string][]*notebook.Output) map[string][]*notebook.Output {
		m := map[string][]*notebook.Output{}
		for k, v := range good {
			m[k] = v
		}
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	raised := []*notebook.Output{{OutputType: notebook.OutputError, Ename: "ValueError", Evalue: "SECRET-INPUT 10"}}
	tests := []struct {
		name      string
		seed      int64
		outs      map[string][]*notebook.Output
		submitted time.Time
		score     float64
		verdicts  map[string]string
		points    map[string]float64
	}{
		{name: "all pass", seed: 5, outs: good, score: 6,
			verdicts: map[string]string{"q1": "pass", "q1-probe-a": "pass", "q1-probe-b": "pass"}},
		{name: "other seed of the pool", seed: 9, outs: with(map[string][]*notebook.Output{"q1-probe-a": stdout("18\n"), "q1-probe-b": stdout("20\n")}), score: 6},
		{name: "hard-coded visible output earns nothing on the question", seed: 5,
			outs:     with(map[string][]*notebook.Output{"q1-probe-a": stdout("2\n"), "q1-probe-b": stdout("2\n")}),
			score:    2,
			verdicts: map[string]string{"q1": "pass", "q1-probe-a": "mismatch", "q1-probe-b": "mismatch"},
			points:   map[string]float64{"q1": 0, "q1-probe-a": 0}},
		{name: "partial credit per probe", seed: 5, outs: with(map[string][]*notebook.Output{"q1-probe-b": stdout("13\n")}), score: 4,
			points: map[string]float64{"q1": 1, "q1-probe-a": 1, "q1-probe-b": 0}},
		{name: "probe raising", seed: 5, outs: with(map[string][]*notebook.Output{"q1-probe-a": raised}), score: 4,
			verdicts: map[string]string{"q1-probe-a": "error"}},
		{name: "seed without reference outputs", seed: 77, outs: good, score: 2,
			verdicts: map[string]string{"q1-probe-a": "error"}},
		{name: "all-or-nothing group", seed: 5, outs: with(map[string][]*notebook.Output{"q3": stdout("c\n")}), score: 4,
			verdicts: map[string]string{"q2": "pass", "q3": "mismatch"}, points: map[string]float64{"q2": 0, "q3": 0}},
		{name: "on time", seed: 5, outs: good, submitted: deadline, score: 6},
		{name: "late, first step", seed: 5, outs: good, submitted: deadline.Add(time.Hour), score: 5.4},
		{name: "late, second step", seed: 5, outs: good, submitted: deadline.Add(48 * time.Hour), score: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nb := executed(t, ex, tt.seed, tt.outs)
			out := scoring.Score(scoring.Input{Exercise: ex, Reference: ref, Executed: nb, SubmittedAt: tt.submitted,
				Integrity: notebook.Integrity{Verdicts: map[string]string{}, Messages: map[string]string{}}})
			if out.MaxScore != 6 {
				t.Errorf("max %g, want 6", out.MaxScore)
			}
			if diff := out.Score - tt.score; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("score %g, want %g (%s)", out.Score, tt.score, out.Message)
			}
			byID := map[string]domain.CellResult{}
			for _, c := range out.Cells {
				byID[c.CellID] = c
				if strings.Contains(c.CellID, "probe") {
					// Hidden tests never show what they ran or expected.
					if c.Observed != "" || c.Expected != "" || c.Diff != "" || strings.Contains(c.Message, "SECRET") || strings.Contains(c.Message, "10") {
						t.Errorf("probe %s leaks: %+v", c.CellID, c)
					}
				}
			}
			for id, v := range tt.verdicts {
				if byID[id].Verdict != v {
					t.Errorf("%s: verdict %s, want %s (%s)", id, byID[id].Verdict, v, byID[id].Message)
				}
			}
			for id, p := range tt.points {
				if byID[id].Points != p {
					t.Errorf("%s: points %g, want %g (%s)", id, byID[id].Points, p, byID[id].Message)
				}
			}
		})
	}
}

// TestRebuildPlacesProbesLast checks that probe cells run after every
// learner cell, with the job's seed, and that the starter has none of them.
func TestRebuildPlacesProbesLast(t *testing.T) {
	t.Parallel()
	ex := loadProbeExercise(t, "")
	nb, integ, err := notebook.RebuildSeeded(ex.Answer, ex.StarterNB, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(integ.Verdicts) != 0 {
		t.Errorf("probe cells absent from the upload must not be missing/tampered: %v", integ.Verdicts)
	}
	n := len(nb.Cells)
	for i, c := range nb.Cells {
		g := c.MustGrader()
		if g.Probe != (i >= n-2) {
			t.Errorf("cell %d (%s): probes must come last", i, g.ID)
		}
		if g.Probe && !strings.HasPrefix(string(c.Source), "NPUGRADE_SEED = 9 ") {
			t.Errorf("probe %s does not set the seed first: %q", g.ID, c.Source)
		}
	}
	if s, ok := nb.ProbeSeed(); !ok || s != 9 {
		t.Errorf("ProbeSeed = %d, %v", s, ok)
	}
	starter, _ := json.Marshal(ex.StarterNB)
	if strings.Contains(string(starter), "probe") || strings.Contains(string(starter), "NPUGRADE_SEED") {
		t.Errorf("the starter holds probe cells: %s", starter)
	}
	if ex.DetailsVisible("q3", time.Now(), true) || !ex.DetailsVisible("q2", time.Now(), false) {
		t.Error("q3 is hidden, q2 visible")
	}
}

func TestStatusWaitsWhileAManualCellIsUngraded(t *testing.T) {
	t.Parallel()
	pass := domain.CellResult{CellID: "q1", Verdict: domain.VerdictPass, Counted: true}
	graded := domain.CellResult{CellID: "essay", Verdict: domain.VerdictManual, Counted: true}
	waiting := domain.CellResult{CellID: "essay", Verdict: domain.VerdictNeedsManual, Counted: true}
	for _, tc := range []struct {
		cells []domain.CellResult
		want  string
	}{
		{nil, domain.StatusGraded},
		{[]domain.CellResult{pass}, domain.StatusGraded},
		{[]domain.CellResult{pass, graded}, domain.StatusGraded},
		{[]domain.CellResult{pass, waiting}, domain.StatusNeedsManual},
	} {
		if got := scoring.Status(tc.cells); got != tc.want {
			t.Errorf("Status(%v) = %s, want %s", tc.cells, got, tc.want)
		}
	}
}
