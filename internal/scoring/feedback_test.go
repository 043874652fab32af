package scoring_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/scoring"
)

// TestScoreQuizFeedback: a quiz check cell (compare choice) passes with
// any spelling of the right answer, and its feedback (the item's 解析)
// comes with the verdict.
func TestScoreQuizFeedback(t *testing.T) {
	t.Parallel()
	const answer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
	  {"cell_type": "code", "id": "q1-impl", "metadata": {"grader": {"id": "q1-impl", "solution": true, "starter": "q1 = None"}}, "source": "q1 = \"AB\"", "outputs": [], "execution_count": null},
	  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 5, "compare": "choice", "feedback": "解析：A 与 B 都对。"}}, "source": "print(\"q1:\", q1)", "outputs": [], "execution_count": null}]}`
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "ex", "quiz"), filepath.Join(root, "ans", "quiz")
	_ = os.MkdirAll(exDir, 0o755)
	_ = os.MkdirAll(ansDir, 0o755)
	_ = os.WriteFile(filepath.Join(exDir, "exercise.json"), []byte(`{"id": "quiz", "title": "q", "starter": "s.ipynb", "answer": "a.ipynb"}`), 0o644)
	_ = os.WriteFile(filepath.Join(ansDir, "a.ipynb"), []byte(answer), 0o644)
	ex, err := exercise.LoadOne(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	ref := &exercise.Reference{Exercise: "quiz", Profile: "cpu", AnswerSHA256: ex.AnswerSHA256(),
		Cells: map[string][]*notebook.Output{"q1": stdout("q1: AB\n")}}
	for printed, pass := range map[string]bool{"q1: B、A\n": true, "q1: a,b\n": true, "q1: A\n": false, "q1: None\n": false} {
		nb := executed(t, ex, 0, map[string][]*notebook.Output{"q1": stdout(printed)})
		out := scoring.Score(scoring.Input{Exercise: ex, Reference: ref, Executed: nb})
		cr := out.Cells[0]
		if (cr.Verdict == "pass") != pass || !strings.Contains(cr.Message, "解析：A 与 B 都对。") {
			t.Errorf("%q: verdict %s, message %q; want pass=%v with the feedback", printed, cr.Verdict, cr.Message, pass)
		}
	}
}
