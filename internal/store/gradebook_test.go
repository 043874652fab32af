package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// TestGradebookPagesAndQuestionPoints: the store pages the gradebook
// (Offset with MaxLearners) and counts the learners of a filter; with
// Questions every row, across the batches it reads them in, has its
// counted submission's points by counted question, and the score before
// the late penalty beside the penalised one.
func TestGradebookPagesAndQuestionPoints(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Add(-time.Hour)
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.RawExec("INSERT INTO blobs (sha256, size, data, created_at) VALUES ('seed', 2, ?, ?)", []byte("{}"), now); err != nil {
				return err
			}
			var users, subs, cells []map[string]any
			for i := range 450 {
				id := int64(1000 + i)
				users = append(users, map[string]any{"id": id, "name": fmt.Sprintf("p%03d", i), "role": "learner", "created_at": now})
				sid := fmt.Sprintf("s%d", id)
				subs = append(subs, map[string]any{"id": sid, "user_id": id, "exercise_id": "lab", "exercise_version": "v", "notebook_sha256": "seed",
					"status": "graded", "score": 1.5, "raw_score": 3.0, "max_score": 4.0, "created_at": now, "graded_at": now})
				for j, c := range []struct {
					id      string
					points  float64
					counted bool
				}{{"q1", 1, true}, {"q2", 2, true}, {"skipped", 0, false}} {
					cells = append(cells, map[string]any{"submission_id": sid, "position": j, "cell_id": c.id, "verdict": "pass",
						"points": c.points, "max_points": 1.0, "counted": c.counted, "message": "", "observed": "", "expected": "", "diff": ""})
				}
			}
			if err := tx.RawInsert("users", users); err != nil {
				return err
			}
			if err := tx.RawInsert("submissions", subs); err != nil {
				return err
			}
			return tx.RawInsert("cell_results", cells)
		}); err != nil {
			t.Fatal(err)
		}
		collect := func(f domain.GradebookFilter) []domain.GradebookRow {
			t.Helper()
			f.Exercises = []string{"lab"}
			var out []domain.GradebookRow
			if err := db.Gradebook(ctx, f, func(r domain.GradebookRow) error { out = append(out, r); return nil }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		for _, tc := range []struct {
			learner string
			want    int
		}{{"", 450}, {"P04", 10}, {"nobody", 0}} {
			if n, err := db.GradebookLearners(ctx, domain.GradebookFilter{Exercises: []string{"lab"}, Learner: tc.learner}); err != nil || n != tc.want {
				t.Errorf("learners matching %q: %d %v, want %d", tc.learner, n, err, tc.want)
			}
		}
		if page := collect(domain.GradebookFilter{MaxLearners: 50, Offset: 400}); len(page) != 50 || page[0].Learner != "p400" || page[49].Learner != "p449" || page[0].Points != nil {
			t.Errorf("last page: %d rows", len(page))
		}
		check := func(name string, rows []domain.GradebookRow, n int, first string) {
			t.Helper()
			if len(rows) != n || rows[0].Learner != first {
				t.Fatalf("%s: %d rows from %s, want %d from %s", name, len(rows), rows[0].Learner, n, first)
			}
			for i, r := range rows {
				if len(r.Points) != 2 || r.Points["q1"] != 1 || r.Points["q2"] != 2 || r.Score != 1.5 || r.RawScore != 3 || !r.Late() {
					t.Fatalf("%s: row %d (%s): %+v", name, i, r.Learner, r)
				}
				if i > 0 && rows[i-1].Learner >= r.Learner {
					t.Fatalf("%s: %s after %s", name, r.Learner, rows[i-1].Learner)
				}
			}
		}
		check("every learner", collect(domain.GradebookFilter{Questions: true}), 450, "p000")
		check("250 learners", collect(domain.GradebookFilter{Questions: true, MaxLearners: 250}), 250, "p000")
		check("a page", collect(domain.GradebookFilter{Questions: true, MaxLearners: 20, Offset: 190}), 20, "p190")
	})
}
