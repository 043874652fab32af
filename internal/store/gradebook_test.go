package store_test

import (
	"context"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// scoreManual stores a submission scored for its automatic part (q1, of
// auto points) with a manual cell "explain" of 2 points: waiting for a
// person when graded is false, else graded by one with manual points.
func scoreManual(t *testing.T, db *store.DB, userID int64, auto float64, graded bool, manual float64) string {
	t.Helper()
	q1 := domain.CellResult{CellID: "q1", Verdict: domain.VerdictPass, Counted: true, Points: auto, MaxPoints: 1}
	if auto < 1 {
		q1.Verdict, q1.Message = domain.VerdictMismatch, "wrong"
	}
	explain := domain.CellResult{CellID: "explain", Verdict: domain.VerdictNeedsManual, Counted: true, MaxPoints: 2}
	if graded {
		explain.Verdict, explain.Points = domain.VerdictManual, manual
	}
	return saveGraded(t, db, userID, "lab", store.Grade{Score: auto + explain.Points, MaxScore: 3, Cells: []domain.CellResult{q1, explain}})
}

// TestGradebookCountsManualPending: a submission graded for its automatic
// part and waiting for manual grading is in the gradebook (with its
// automatic points, marked pending, with the learner's section) and in
// every statistic; ?section= narrows the per-question statistics.
func TestGradebookCountsManualPending(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
		bob, _, _ := db.CreateUser(ctx, "bob", domain.RoleLearner)
		cy, _, _ := db.CreateUser(ctx, "cy", domain.RoleLearner)
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.RawExec("UPDATE users SET section = 'Red' WHERE id IN (?, ?)", ada.ID, cy.ID); err != nil {
				return err
			}
			return tx.RawExec("UPDATE users SET section = 'Blue' WHERE id = ?", bob.ID)
		}); err != nil {
			t.Fatal(err)
		}
		adaSub := scoreManual(t, db, ada.ID, 1, false, 0) // pending, 1 automatic point
		bobSub := scoreManual(t, db, bob.ID, 0, true, 2)  // graded by a person: 2 of 3
		cySub := scoreManual(t, db, cy.ID, 1, true, 1)    // graded, 2 of 3, manual not full
		if s, err := db.Submission(ctx, adaSub); err != nil || s.Status != domain.StatusNeedsManual {
			t.Fatalf("fixture: ada's submission %+v %v", s, err)
		}
		rows := map[string]domain.GradebookRow{}
		err := db.Gradebook(ctx, domain.GradebookFilter{Exercises: []string{"lab"}}, func(r domain.GradebookRow) error {
			rows[r.Learner] = r
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if r := rows["ada"]; r.SubmissionID != adaSub || r.Attempts != 1 || r.Score != 1 || r.MaxScore != 3 ||
			!r.ManualPending() || r.Status != domain.StatusNeedsManual || r.Section != "Red" || r.GradedAt == nil {
			t.Errorf("ada's pending row: %+v", r)
		}
		if r := rows["bob"]; r.SubmissionID != bobSub || r.Score != 2 || r.ManualPending() || r.Status != domain.StatusGraded || r.Section != "Blue" {
			t.Errorf("bob's graded row: %+v", r)
		}
		if r := rows["cy"]; r.SubmissionID != cySub || r.Section != "Red" {
			t.Errorf("cy's row: %+v", r)
		}
		// The section filter keeps the pending row too.
		var red []string
		if err := db.Gradebook(ctx, domain.GradebookFilter{Exercises: []string{"lab"}, Section: "Red", MaxLearners: 10}, func(r domain.GradebookRow) error {
			if r.Attempts > 0 {
				red = append(red, r.Learner+"/"+r.Status)
			}
			return nil
		}); err != nil || len(red) != 2 || red[0] != "ada/needs-manual" || red[1] != "cy/graded" {
			t.Errorf("section Red: %v %v", red, err)
		}

		// Statistics: q1 over the three scored submissions (2 pass);
		// explain over the two a person graded (bob's full points pass).
		stats := func(section string) map[string][2]int {
			qs, err := db.QuestionStats(ctx, "lab", section)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string][2]int{}
			for _, q := range qs {
				out[q.CellID] = [2]int{q.Passed, q.Total}
			}
			return out
		}
		if got := stats(""); got["q1"] != [2]int{2, 3} || got["explain"] != [2]int{1, 2} {
			t.Errorf("all sections: %v", got)
		}
		if got := stats("Red"); got["q1"] != [2]int{2, 2} || got["explain"] != [2]int{0, 1} {
			t.Errorf("section Red: %v", got)
		}
		if got := stats("Blue"); got["q1"] != [2]int{0, 1} || got["explain"] != [2]int{1, 1} {
			t.Errorf("section Blue: %v", got)
		}
		if got := stats("Green"); len(got) != 0 {
			t.Errorf("empty section: %v", got)
		}
		fails, err := db.CommonFailures(ctx, "lab", "", 10)
		if err != nil || len(fails) != 1 || fails[0].CellID != "q1" || fails[0].Count != 1 {
			t.Errorf("failures (manual grades are none): %+v %v", fails, err)
		}
		if fails, err = db.CommonFailures(ctx, "lab", "Red", 10); err != nil || len(fails) != 0 {
			t.Errorf("failures of section Red: %+v %v", fails, err)
		}
		if lat, err := db.GradingLatency(ctx, 10); err != nil || lat.N != 3 {
			t.Errorf("latency counts the pending submission: %+v %v", lat, err)
		}
	})
}

// TestGradebookMarksUncountedManualPending: under the best policy a newer
// submission that scores lower for now but waits for manual grading does
// not count, yet the row says one waits (it may count once graded); under
// the latest policy the waiting one counts and is itself pending.
func TestGradebookMarksUncountedManualPending(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
		bob, _, _ := db.CreateUser(ctx, "bob", domain.RoleLearner)
		best := scoreManual(t, db, ada.ID, 1, true, 2) // 3 of 3, graded by a person
		waiting := scoreManual(t, db, ada.ID, 0, false, 0)
		bobSub := scoreManual(t, db, bob.ID, 1, true, 1)
		for _, policy := range []string{domain.CountBest, domain.CountLatest} {
			rows := map[string]domain.GradebookRow{}
			f := domain.GradebookFilter{Exercises: []string{"lab"}, Counts: func(string) string { return policy }}
			if err := db.Gradebook(ctx, f, func(r domain.GradebookRow) error {
				rows[r.Learner] = r
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			a, b := rows["ada"], rows["bob"]
			if a.Attempts != 2 || a.ManualWaiting != 1 || b.ManualWaiting != 0 || b.SubmissionID != bobSub || b.UncountedManualPending() {
				t.Errorf("%s: ada %+v, bob %+v", policy, a, b)
			}
			wantSub, wantUncounted := best, true
			if policy == domain.CountLatest {
				wantSub, wantUncounted = waiting, false
			}
			if a.SubmissionID != wantSub || a.UncountedManualPending() != wantUncounted || a.ManualPending() == wantUncounted {
				t.Errorf("%s: ada counts %s (pending %v, uncounted pending %v), want %s", policy, a.SubmissionID, a.ManualPending(), a.UncountedManualPending(), wantSub)
			}
		}
	})
}
