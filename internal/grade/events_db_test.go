package grade_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestEveryScoreChangeEmitsAnEvent: a manual grade, an override, a rubric
// change and an override answering a regrade request each write one
// score-changed event with the old and new score, the reason and who did
// it, in the order they happened.
func TestEveryScoreChangeEmitsAnEvent(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			answer := strings.Replace(manualAnswer, "A_POINTS", "1", 1)
			b := setup(t, db, answer)
			ctx, ex, teacher := b.ctx, b.ex, b.teacher
			sub := b.submit(t, answer)
			b.run(t, sub) // q1 passes: 1 of 3, the manual cell waits
			m := grade.Manual{DB: db}
			if err := m.SyncRubrics(ctx, b.cat); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Grade(ctx, ex, sub.ID, "why", grade.ManualInput{Items: []string{"a", "b"}}, teacher); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Override(ctx, ex, sub.ID, "q1", 0, "copied", teacher); err != nil {
				t.Fatal(err)
			}
			if err := m.SyncRubrics(ctx, load(t, strings.Replace(manualAnswer, "A_POINTS", "0.5", 1))); err != nil {
				t.Fatal(err)
			}
			r, err := db.CreateRegradeRequest(ctx, domain.RegradeRequest{SubmissionID: sub.ID, CellID: "q1", Message: "q1 is mine"}, b.learner)
			if err != nil {
				t.Fatal(err)
			}
			one := 1.0
			if _, err := m.OverrideAnswering(ctx, ex, sub.ID, "q1", 1, "yours", teacher, store.RequestAnswer{ID: r.ID, Answer: "yes", Override: &one, Reason: "yours"}); err != nil {
				t.Fatal(err)
			}
			evs, err := db.Events(ctx, domain.EventFilter{Kinds: []string{domain.EventScoreChanged}, Submission: sub.ID})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range evs {
				var p domain.ScoreChanged
				if err := json.Unmarshal(e.Payload, &p); err != nil || p.OldScore == nil {
					t.Fatalf("payload %s: %v", e.Payload, err)
				}
				got = append(got, fmt.Sprintf("%s %g->%g %s->%s by %s", p.Reason, *p.OldScore, p.NewScore, p.OldStatus, p.NewStatus, p.Actor))
			}
			want := []string{
				"manual 1->3 needs-manual->graded by tom",
				"override 3->2 graded->graded by tom",
				"rubric 2->1.5 graded->graded by npugrade",
				"request-answer 1.5->2.5 graded->graded by tom",
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("score-changed events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
