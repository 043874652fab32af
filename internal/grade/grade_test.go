package grade_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/queue"
	"github.com/npugrade/npugrade/internal/store/storetest"
	"github.com/npugrade/npugrade/internal/submission"
)

const answer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": "### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q2", "metadata": {"grader": {"id": "q2", "points": 1}}, "source": "print(x + 1)", "outputs": [], "execution_count": null}
 ]}`

func stdout(s string) []*notebook.Output {
	return []*notebook.Output{{OutputType: notebook.OutputStream, Name: "stdout", Text: notebook.MultilineString(s)}}
}

// load writes the exercise (answer, cpu reference) and loads its catalog.
func load(t *testing.T, answer string) *exercise.Catalog {
	t.Helper()
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "ex", "gr"), filepath.Join(root, "ans", "gr")
	for _, d := range []string{exDir, filepath.Join(ansDir, "references")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(exDir, "exercise.json"), []byte(`{"id": "gr", "title": "g", "starter": "s.ipynb", "answer": "a.ipynb"}`))
	write(filepath.Join(ansDir, "a.ipynb"), []byte(answer))
	ex, err := exercise.LoadOne(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := json.Marshal(exercise.Reference{Exercise: "gr", Profile: "cpu", AnswerSHA256: ex.AnswerSHA256(),
		Cells: map[string][]*notebook.Output{"q1": stdout("1\n"), "q2": stdout("2\n")}})
	write(filepath.Join(ansDir, "references", "cpu.json"), ref)
	cat, err := exercise.Load(filepath.Join(root, "ex"), filepath.Join(root, "ans"))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// executed is a run of ex's answer that printed the right outputs.
func executed(t *testing.T, ex *exercise.Exercise) []byte {
	t.Helper()
	nb, _, err := notebook.Rebuild(ex.Answer, ex.Answer)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range nb.Cells {
		n := i + 1
		c.ExecutionCount = &n
		switch c.MustGrader().ID {
		case "q1":
			c.Outputs = stdout("1\n")
		case "q2":
			c.Outputs = stdout("2\n")
		}
	}
	b, err := notebook.Encode(nb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIntegrityKeptFromIntake: intake stores what rebuilding the upload
// found, and grading scores those findings (a tampered locked cell) from
// the submission, as long as the exercise version is the one it was made for.
func TestIntegrityKeptFromIntake(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			cat := load(t, answer)
			ex, _ := cat.Get("gr")
			user, _, err := db.CreateUser(ctx, "alice", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			intake := &submission.Service{DB: db, Queue: queue.New(db, nil), Catalog: cat}
			tampered := strings.Replace(answer, `"source": "print(x)"`, `"source": "print(1)"`, 1)
			sub, _, err := intake.Submit(ctx, submission.Request{User: user, ExerciseID: "gr", Notebook: []byte(tampered)})
			if err != nil {
				t.Fatal(err)
			}
			raw, err := db.SubmissionIntegrity(ctx, sub.ID)
			if err != nil || !strings.Contains(string(raw), `"q1":"tampered"`) {
				t.Fatalf("stored integrity %s, %v; want q1 tampered", raw, err)
			}
			g, err := (&grade.Submissions{DB: db}).Grade(ctx, ex, sub, executed(t, ex), domain.ExecutionResult{Profile: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			if g.Score != 1 || g.MaxScore != 2 || g.Cells[0].Verdict != domain.VerdictTampered || g.Cells[1].Verdict != domain.VerdictPass {
				t.Fatalf("grade %g/%g %+v, want q1 tampered and q2 passed", g.Score, g.MaxScore, g.Cells)
			}
			// Findings stored for another version are not trusted: the
			// upload is rebuilt against the exercise graded with.
			if err := db.RawExec(ctx, "UPDATE submissions SET integrity = ? WHERE id = ?", `{"Verdicts":{"q2":"missing"}}`, sub.ID); err != nil {
				t.Fatal(err)
			}
			integ, err := (&grade.Submissions{DB: db}).Integrity(ctx, ex, sub)
			if err != nil || integ.Verdicts["q2"] != domain.VerdictMissing {
				t.Fatalf("same version: %+v, %v; want the stored findings", integ, err)
			}
			other := *ex
			other.Version = "another"
			integ, err = (&grade.Submissions{DB: db}).Integrity(ctx, &other, sub)
			if err != nil || integ.Verdicts["q1"] != domain.VerdictTampered || integ.Verdicts["q2"] != "" {
				t.Fatalf("other version: %+v, %v; want the upload rebuilt", integ, err)
			}
		})
	}
}

var _ grade.References = grade.Files{}
var _ grade.References = (*grade.Submissions)(nil)
