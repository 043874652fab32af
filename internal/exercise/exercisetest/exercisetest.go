// Package exercisetest writes small exercises for tests: an answer with
// one solution cell and two one-point checks (q1 prints 1, q2 prints 2),
// loaded as a catalogue with its cpu reference, and the executed notebooks
// a runner would send back for it. Tests of the packages that grade,
// regrade and extend deadlines share it so that they grade the same thing.
package exercisetest

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
)

// Answer is the answer notebook: impl sets x = 1, q1 prints x and q2
// prints x + 1, one point each, compared by tokens.
const Answer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": "### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q2", "metadata": {"grader": {"id": "q2", "points": 1}}, "source": "print(x + 1)", "outputs": [], "execution_count": null}
 ]}`

// Spec says which exercise Catalog writes.
type Spec struct {
	ID     string // the exercise's id and folder name
	Answer string // the answer notebook; Answer when empty
	// Fields are more members of exercise.json (a deadline, a late
	// penalty), merged over id, title, starter and answer.
	Fields map[string]any
	// RefQ2 is q2's output in the cpu reference; "2\n" when empty.
	RefQ2 string
	// NoReference leaves the reference file out (a server records it
	// with a reference job instead).
	NoReference bool
}

// Load writes an exercise as it stands in a course's folders, exercise.json
// and answer as given (and no reference), and loads the catalogue holding it.
func Load(t testing.TB, id, exerciseJSON, answer string) *exercise.Catalog {
	t.Helper()
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "ex", id), filepath.Join(root, "ans", id)
	for _, d := range []string{exDir, ansDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(exDir, "exercise.json"), []byte(exerciseJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ansDir, "a.ipynb"), []byte(answer), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := exercise.Load(filepath.Join(root, "ex"), filepath.Join(root, "ans"))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// CopyWith copies exercise id from the catalogue folders exercises and
// answers into a temporary pair, with fields set in its exercise.json (a
// deadline, a visibility), and returns the copies' folders.
func CopyWith(t testing.TB, exercises, answers, id string, fields map[string]any) (exercisesCopy, answersCopy string) {
	t.Helper()
	dir := t.TempDir()
	exercisesCopy, answersCopy = filepath.Join(dir, "exercises"), filepath.Join(dir, "answers")
	copyDir(t, filepath.Join(exercises, id), filepath.Join(exercisesCopy, id))
	copyDir(t, filepath.Join(answers, id), filepath.Join(answersCopy, id))
	cfgPath := filepath.Join(exercisesCopy, id, "exercise.json")
	var cfg map[string]any
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	for k, v := range fields {
		cfg[k] = v
	}
	if b, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return exercisesCopy, answersCopy
}

// copyDir copies a small directory tree (an exercise folder).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Stdout is a cell's output that printed s.
func Stdout(s string) []*notebook.Output {
	return []*notebook.Output{{OutputType: notebook.OutputStream, Name: "stdout", Text: notebook.MultilineString(s)}}
}

// Catalog writes the exercise of spec under a temporary folder and loads
// the catalogue holding it.
func Catalog(t testing.TB, spec Spec) *exercise.Catalog {
	t.Helper()
	if spec.Answer == "" {
		spec.Answer = Answer
	}
	if spec.RefQ2 == "" {
		spec.RefQ2 = "2\n"
	}
	root := t.TempDir()
	exDir, ansDir := filepath.Join(root, "ex", spec.ID), filepath.Join(root, "ans", spec.ID)
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
	meta := map[string]any{"id": spec.ID, "title": spec.ID, "starter": "s.ipynb", "answer": "a.ipynb"}
	for k, v := range spec.Fields {
		meta[k] = v
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(exDir, "exercise.json"), mb)
	write(filepath.Join(ansDir, "a.ipynb"), []byte(spec.Answer))
	ex, err := exercise.LoadOne(exDir, ansDir)
	if err != nil {
		t.Fatal(err)
	}
	if !spec.NoReference {
		ref, err := json.Marshal(exercise.Reference{Exercise: spec.ID, Profile: "cpu", AnswerSHA256: ex.AnswerSHA256(),
			Cells: map[string][]*notebook.Output{"q1": Stdout("1\n"), "q2": Stdout(spec.RefQ2)}})
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(ansDir, "references", "cpu.json"), ref)
	}
	cat, err := exercise.Load(filepath.Join(root, "ex"), filepath.Join(root, "ans"))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// Executed is a runner's executed notebook of ex's answer in which q1
// printed "1\n" and q2 printed q2.
func Executed(t testing.TB, ex *exercise.Exercise, q2 string) []byte {
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
			c.Outputs = Stdout("1\n")
		case "q2":
			c.Outputs = Stdout(q2)
		}
	}
	b, err := notebook.Encode(nb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
