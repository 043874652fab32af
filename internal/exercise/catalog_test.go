package exercise_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/exercise"
)

// TestLoadKeepsGoodExercises: an exercise with no graded cells and one with
// a broken config are reported, each with its problem, and the good
// exercise is still loaded.
func TestLoadKeepsGoodExercises(t *testing.T) {
	t.Parallel()
	good, err := os.ReadFile("../importer/testdata/nbgrader_release.ipynb")
	if err != nil {
		t.Fatal(err)
	}
	plain := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "markdown", "metadata": {}, "source": "only text"}]}`
	root := t.TempDir()
	write := func(id, config, answer string) {
		t.Helper()
		for _, d := range []string{filepath.Join(root, "ex", id), filepath.Join(root, "ans", id)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		_ = os.WriteFile(filepath.Join(root, "ex", id, "exercise.json"), []byte(config), 0o644)
		_ = os.WriteFile(filepath.Join(root, "ans", id, "a.ipynb"), []byte(answer), 0o644)
	}
	write("good", `{"id": "good", "title": "t", "starter": "s.ipynb", "answer": "a.ipynb"}`, string(good))
	write("nograded", `{"id": "nograded", "title": "t", "starter": "s.ipynb", "answer": "a.ipynb"}`, plain)
	write("badconfig", `{"id": "badconfig", "title": "t", "starter": "s.ipynb", "answer": "a.ipynb", "oops": 1}`, string(good))
	cat, err := exercise.Load(filepath.Join(root, "ex"), filepath.Join(root, "ans"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.List()) != 1 || cat.List()[0].ID != "good" {
		t.Fatalf("loaded %d exercises, want only good", len(cat.List()))
	}
	if _, err := cat.Get("good"); err != nil {
		t.Fatal(err)
	}
	broken := map[string]string{}
	for _, b := range cat.Broken() {
		broken[b.ID] = b.Err.Error()
	}
	if !strings.Contains(broken["nograded"], "no graded cells") || !strings.Contains(broken["badconfig"], "oops") || len(broken) != 2 {
		t.Errorf("broken exercises: %v", broken)
	}
	if err := cat.Err(); err == nil || !strings.Contains(err.Error(), "exercise nograded") || !strings.Contains(err.Error(), "exercise badconfig") {
		t.Errorf("Err() = %v", err)
	}
}
