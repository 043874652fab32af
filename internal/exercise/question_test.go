package exercise_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/npugrade/npugrade/internal/exercise"
)

// TestQuestionNumbers: every graded and manual cell of the shipped
// chapters is numbered as the notebook numbers its questions (the
// "第 N 题" heading before it), and a probe has the number of the question
// it tests, so feedback can say "第 13 题" where it said q13-probe.
func TestQuestionNumbers(t *testing.T) {
	t.Parallel()
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		t.Fatal(err)
	}
	byID := regexp.MustCompile(`^q(\d+)(?:-|$)`)
	for _, ex := range cat.List() {
		ids := []string{}
		for _, g := range ex.Graded {
			ids = append(ids, g.ID)
		}
		for _, m := range ex.Manual {
			ids = append(ids, m.ID)
		}
		for _, id := range ids {
			n, ok := ex.Question(id)
			if !ok {
				t.Errorf("%s %s: no question number", ex.ID, id)
				continue
			}
			if m := byID.FindStringSubmatch(id); m != nil && m[1] != fmt.Sprint(n) {
				t.Errorf("%s %s: question %d, want %s", ex.ID, id, n, m[1])
			}
		}
		if _, ok := ex.Question("setup"); ok {
			t.Errorf("%s: a cell that is not graded has a question number", ex.ID)
		}
	}
}
