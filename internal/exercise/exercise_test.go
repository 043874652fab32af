package exercise_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/exercise"
)

// TestCatalog loads the real exercises and keeps the committed starters in
// step with their answers: a starter that drifts from its answer would
// grade learners against cells they never saw.
func TestCatalog(t *testing.T) {
	t.Parallel()
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Err(); err != nil {
		t.Fatalf("a committed exercise does not load: %v", err)
	}
	if len(cat.List()) != 5 {
		t.Fatalf("want ch1…ch5, got %d exercises", len(cat.List()))
	}
	for i, ex := range cat.List() {
		if want := "ch" + string(rune('1'+i)); ex.ID != want {
			t.Errorf("exercise %d is %s, want %s", i, ex.ID, want)
		}
		committed, err := os.ReadFile(ex.StarterPath())
		if err != nil {
			t.Fatalf("%s: %v", ex.ID, err)
		}
		if !bytes.Equal(committed, ex.StarterBytes) {
			t.Errorf("%s: %s differs from the starter generated from the answer; run `npugrade exercise starter`", ex.ID, ex.StarterPath())
		}
		for _, c := range ex.StarterNB.Cells {
			if c.CellType == "code" && strings.Contains(string(c.Source), "### BEGIN SOLUTION") {
				t.Errorf("%s: starter cell %s still holds a solution region", ex.ID, c.ID)
			}
		}
		cpu := 0
		for _, g := range ex.Graded {
			if g.Requires.Accelerator != "npu" {
				cpu++
			}
		}
		if cpu < 5 {
			t.Errorf("%s: %d graded questions run on CPU, want at least 5", ex.ID, cpu)
		}
		if _, err := ex.Reference("cpu"); err != nil {
			t.Errorf("%s: %v", ex.ID, err)
		}
	}
	if _, err := cat.Get("ch9"); err == nil {
		t.Error("unknown exercise found")
	}
}
