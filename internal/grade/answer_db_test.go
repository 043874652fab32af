package grade_test

import (
	"context"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestOverrideAnsweringIsOneTransaction: answering a regrade request with
// an override writes the answer, the new points, the score history and
// both audit entries together; when the request cannot be answered (on
// another cell, or answered meanwhile) nothing is written, the override
// included.
func TestOverrideAnsweringIsOneTransaction(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			answer := strings.Replace(manualAnswer, "A_POINTS", "1", 1)
			b := setup(t, db, answer)
			ctx, ex, learner, teacher := b.ctx, b.ex, b.learner, b.teacher
			sub := b.submit(t, answer)
			b.run(t, sub)
			ask := func() domain.RegradeRequest {
				t.Helper()
				r, err := db.CreateRegradeRequest(ctx, domain.RegradeRequest{SubmissionID: sub.ID, CellID: "q1", Message: "q1 is right"}, learner)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			m := grade.Manual{DB: db}
			zero := 0.0
			unchanged := func(what string) {
				t.Helper()
				s, _ := db.Submission(ctx, sub.ID)
				log, _ := m.Log(ctx, sub.ID)
				hist, _ := db.ScoreHistory(ctx, sub.ID)
				evs, _ := db.AuditEvents(ctx, 100)
				for _, e := range evs {
					if e.Action == domain.AuditScoreOverride {
						t.Errorf("%s: an override is in the audit log: %+v", what, e)
					}
				}
				if s.Score != 1 || len(log) != 0 || len(hist) != 0 {
					t.Errorf("%s: the override was written: score %g, manual log %+v, history %+v", what, s.Score, log, hist)
				}
			}

			// A request on q1 cannot be answered by overriding why.
			r1 := ask()
			_, err := m.OverrideAnswering(ctx, ex, sub.ID, "why", 0, "no", teacher, store.RequestAnswer{ID: r1.ID, Answer: "no", Override: &zero, Reason: "no"})
			if domain.ErrorCode(err) != domain.ECONFLICT {
				t.Errorf("override of another cell: %v", err)
			}
			unchanged("another cell")
			if r, _ := db.RegradeRequest(ctx, r1.ID); r.State != domain.RegradeRequestOpen {
				t.Errorf("the request was answered: %+v", r)
			}
			// Answered meanwhile (another instructor): the override rolls back.
			if _, err := db.AnswerRegradeRequest(ctx, store.RequestAnswer{ID: r1.ID, Answer: "looked at it"}, teacher); err != nil {
				t.Fatal(err)
			}
			_, err = m.OverrideAnswering(ctx, ex, sub.ID, "q1", 0, "late", teacher, store.RequestAnswer{ID: r1.ID, Answer: "again", Override: &zero, Reason: "late"})
			if domain.ErrorCode(err) != domain.ECONFLICT {
				t.Errorf("override answering an answered request: %v", err)
			}
			unchanged("answered meanwhile")

			// An open request on the cell: all of it at once.
			r2 := ask()
			s, err := m.OverrideAnswering(ctx, ex, sub.ID, "q1", 0, "printed by hand", teacher,
				store.RequestAnswer{ID: r2.ID, Answer: "the output was typed", Override: &zero, Reason: "printed by hand"})
			if err != nil || s.Score != 0 {
				t.Fatalf("override answering: %v %+v", err, s)
			}
			r, _ := db.RegradeRequest(ctx, r2.ID)
			if r.State != domain.RegradeRequestAnswered || r.Answer != "the output was typed" || r.OverridePoints == nil || *r.OverridePoints != 0 || r.AnsweredBy != "tom" {
				t.Errorf("answered request: %+v", r)
			}
			if hist, _ := db.ScoreHistory(ctx, sub.ID); len(hist) != 1 || hist[0].Score != 1 {
				t.Errorf("score history: %+v", hist)
			}
			evs, _ := db.AuditEvents(ctx, 100)
			var acts []string
			for _, e := range evs {
				acts = append(acts, e.Action+" "+e.Subject)
			}
			all := strings.Join(acts, "\n")
			for _, want := range []string{domain.AuditScoreOverride + " submission " + sub.ID + " cell q1", domain.AuditRegradeAnswer + " regrade request"} {
				if strings.Count(all, want) < 1 {
					t.Errorf("audit log has no %q:\n%s", want, all)
				}
			}
			if n := strings.Count(all, domain.AuditScoreOverride); n != 1 {
				t.Errorf("%d overrides in the audit log:\n%s", n, all)
			}
		})
	}
}

// TestRubricChangeReappliedOnceAcrossServers: two servers starting at once
// with the same changed rubric (two handles on one database) re-apply it
// once between them: one rubric-change decision, one audit entry.
func TestRubricChangeReappliedOnceAcrossServers(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			url := storetest.URL(t, d)
			var dbs [2]*store.DB
			for i := range dbs {
				dbs[i] = storetest.OpenURL(t, url)
			}
			db := dbs[0]
			answer := strings.Replace(manualAnswer, "A_POINTS", "1", 1)
			b := setup(t, db, answer)
			cat, ex, teacher := b.cat, b.ex, b.teacher
			sub := b.submit(t, answer)
			b.run(t, sub)
			if err := (grade.Manual{DB: db}).SyncRubrics(ctx, cat); err != nil {
				t.Fatal(err)
			}
			if _, err := (grade.Manual{DB: db}).Grade(ctx, ex, sub.ID, "why", grade.ManualInput{Items: []string{"a", "b"}}, teacher); err != nil {
				t.Fatal(err)
			}
			changed := load(t, strings.Replace(manualAnswer, "A_POINTS", "0.5", 1))
			errs := make(chan error, 2)
			for _, h := range dbs {
				go func() { errs <- (grade.Manual{DB: h}).SyncRubrics(ctx, changed) }()
			}
			for range dbs {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			log, _ := (grade.Manual{DB: db}).Log(ctx, sub.ID)
			n := 0
			for _, l := range log {
				if l.Kind == store.ManualRubricChange {
					n++
				}
			}
			if s, _ := db.Submission(ctx, sub.ID); n != 1 || s.Score != 2.5 {
				t.Errorf("%d rubric-change decisions (want 1), score %g (want 2.5): %+v", n, s.Score, log)
			}
		})
	}
}
