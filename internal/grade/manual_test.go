package grade

import (
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
)

// TestManualPoints: rubric items add from 0 (or deduct from the full
// points when all are negative), the adjustment applies, the result stays
// within [0, points], and every problem of a bad input is reported.
func TestManualPoints(t *testing.T) {
	t.Parallel()
	adding := exercise.ManualCell{ID: "explain", Points: 2, Rubric: []notebook.RubricItem{
		{ID: "a", Points: 1, Text: "a"}, {ID: "b", Points: 1, Text: "b"}, {ID: "w", Points: -0.5, Text: "w"}}}
	deducting := exercise.ManualCell{ID: "style", Points: 3, Rubric: []notebook.RubricItem{
		{ID: "x", Points: -1, Text: "x"}, {ID: "y", Points: -2.5, Text: "y"}}}
	for _, c := range []struct {
		m    exercise.ManualCell
		in   ManualInput
		want float64
	}{
		{adding, ManualInput{}, 0},
		{adding, ManualInput{Items: []string{"a"}}, 1},
		{adding, ManualInput{Items: []string{"a", "b", "w"}}, 1.5},
		{adding, ManualInput{Items: []string{"a", "b"}, Adjustment: 1}, 2},
		{adding, ManualInput{Items: []string{"w"}}, 0},
		{deducting, ManualInput{}, 3},
		{deducting, ManualInput{Items: []string{"x"}}, 2},
		{deducting, ManualInput{Items: []string{"x", "y"}}, 0},
		{deducting, ManualInput{Items: []string{"y"}, Adjustment: 0.25}, 0.75},
	} {
		got, err := ManualPoints(c.m, c.in)
		if err != nil || got != c.want {
			t.Errorf("%s %+v: %v %v, want %v", c.m.ID, c.in, got, err, c.want)
		}
	}
	_, err := ManualPoints(adding, ManualInput{Items: []string{"a", "a", "zz"}, Adjustment: 5, Comment: strings.Repeat("x", maxComment+1)})
	if domain.ErrorCode(err) != domain.EINVALID || len(domain.ErrorProblems(err)) != 4 {
		t.Errorf("bad input: %v %v", err, domain.ErrorProblems(err))
	}
}

// TestApplyManualAndTotal: manual grades and overrides in force change
// the cells, and the total is the counted points times the late multiplier.
func TestApplyManualAndTotal(t *testing.T) {
	t.Parallel()
	deadline := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ex := &exercise.Exercise{Config: exercise.Config{Policy: exercise.Policy{Deadline: &deadline,
		LatePenalty: []exercise.LateStep{{After: 0, Multiplier: 0.5}}}},
		Manual: []exercise.ManualCell{{ID: "explain", Points: 2, Rubric: []notebook.RubricItem{{ID: "a", Points: 1, Text: "measured"}}}}}
	cells := []domain.CellResult{
		{CellID: "q1", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true, Message: "differs"},
		{CellID: "explain", Verdict: domain.VerdictNeedsManual, MaxPoints: 2, Counted: true},
	}
	score, msg := scoring.Total(cells, ex.LateMultiplier(deadline.Add(-time.Hour)), "")
	if score != 0 || msg != "0 of 1 graded cells pass; 1 question waits for manual grading" {
		t.Errorf("before grading: %v %q", score, msg)
	}
	ApplyManual(ex, cells, map[string]domain.ManualGrade{
		"explain": {Kind: store.ManualRubric, Items: []string{"a"}, Comment: "good"},
		"q1":      {Kind: store.ManualOverride, Points: 1},
	})
	if c := cells[1]; c.Verdict != domain.VerdictManual || c.Points != 1 || !strings.Contains(c.Message, "[+1] measured") || !strings.HasSuffix(c.Message, "good") {
		t.Errorf("manual cell: %+v", c)
	}
	if c := cells[0]; c.Points != 1 || c.Verdict != domain.VerdictMismatch || !strings.HasSuffix(c.Message, "points set to 1 of 1 by an instructor") {
		t.Errorf("overridden cell: %+v", c)
	}
	score, msg = scoring.Total(cells, ex.LateMultiplier(deadline.Add(time.Hour)), "")
	if score != 1 || !strings.HasSuffix(msg, "score multiplied by 0.5") {
		t.Errorf("late total: %v %q", score, msg)
	}
}
