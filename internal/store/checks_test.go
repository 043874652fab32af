package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestChecksAreNotAttemptsOrScores: a graded check is stored and read
// back as a check, but it is no attempt (CountSubmissions, the
// max_submissions cap), not in the learner's submission list, the
// gradebook, the standings, the statistics or the rescoring set, and its
// event is "checked", not "graded". A check's upload is limited apart from
// the learner's upload limit.
func TestChecksAreNotAttemptsOrScores(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
		cells := []domain.CellResult{{CellID: "q1", Verdict: domain.VerdictPass, Counted: true, Points: 1, MaxPoints: 1}}
		real := saveGraded(t, db, ada.ID, "ch1", store.Grade{Score: 1, MaxScore: 1, Cells: cells})

		// A check made under a cap of one submission, the cap used up.
		chk, created, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: ada.ID, ExerciseID: "ch1", ExerciseVersion: "v",
			Upload: []byte(`{"c":1}`), Rebuilt: []byte(`{"c":1}`), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1),
			MaxSubmissions: 1, Check: true, IdempotencyKey: "same-key"})
		if err != nil || !created || !chk.Check {
			t.Fatalf("check under a used-up cap: %+v created=%v err=%v", chk, created, err)
		}
		cells[0].Points, cells[0].Verdict = 0, domain.VerdictMismatch
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			return tx.SaveGrade(store.Grade{SubmissionID: chk.ID, Score: 0, MaxScore: 1, Cells: cells, Status: domain.StatusGraded, Check: true})
		}); err != nil {
			t.Fatal(err)
		}
		got, err := db.Submission(ctx, chk.ID)
		if err != nil || !got.Check || got.Status != domain.StatusGraded || len(got.Cells) != 1 {
			t.Fatalf("check read back: %+v %v", got, err)
		}
		if n, err := db.CountSubmissions(ctx, ada.ID, "ch1", time.Time{}); err != nil || n != 1 {
			t.Fatalf("attempts = %d, %v; want 1 (the check is none)", n, err)
		}
		list, err := db.Submissions(ctx, domain.SubmissionFilter{UserID: ada.ID})
		if err != nil || len(list) != 1 || list[0].ID != real {
			t.Fatalf("submissions list = %+v, %v; want only %s", list, err, real)
		}
		checks, err := db.Submissions(ctx, domain.SubmissionFilter{UserID: ada.ID, Checks: true})
		if err != nil || len(checks) != 1 || checks[0].ID != chk.ID || !checks[0].Check {
			t.Fatalf("checks list = %+v, %v; want %s", checks, err, chk.ID)
		}
		graded, err := db.GradedSubmissions(ctx, "ch1", ada.ID)
		if err != nil || len(graded) != 1 || graded[0].ID != real {
			t.Fatalf("graded submissions = %+v, %v", graded, err)
		}
		latest, err := db.LatestSubmissions(ctx, ada.ID)
		if err != nil || latest["ch1"].ID != real {
			t.Fatalf("latest = %+v, %v; want the submission, not the newer check", latest["ch1"], err)
		}
		var book []domain.GradebookRow
		if err := db.Gradebook(ctx, domain.GradebookFilter{Exercises: []string{"ch1"}}, func(r domain.GradebookRow) error {
			book = append(book, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, r := range book {
			if r.SubmissionID == chk.ID {
				t.Fatalf("the gradebook holds the check: %+v", r)
			}
		}
		stats, err := db.QuestionStats(ctx, "ch1", "")
		if err != nil || len(stats) != 1 || stats[0].Total != 1 || stats[0].Passed != 1 {
			t.Fatalf("question stats = %+v, %v; want the one passing submission only", stats, err)
		}
		if err := db.InTx(ctx, func(tx *store.Tx) error {
			scored, err := tx.ScoredSubmissions("ch1", ada.ID)
			if err == nil && (len(scored) != 1 || scored[0].ID != real) {
				t.Errorf("rescoring set = %d submissions; want the submission only", len(scored))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		evs, err := db.Events(ctx, domain.EventFilter{Submission: chk.ID, Limit: 10})
		if err != nil || len(evs) != 1 || evs[0].Kind != domain.EventChecked {
			t.Fatalf("events of the check = %+v, %v; want one %q", evs, err, domain.EventChecked)
		}

		// Two checks fill a window of two; the learner's upload window of
		// one still has its place, and the third check is refused.
		w := []store.UploadWindow{{Exercise: "ch1", Count: 2, Per: time.Hour}}
		for i := 0; i < 2; i++ {
			if r, err := db.RecordCheck(ctx, ada.ID, "ch1", w); err != nil || r != nil {
				t.Fatalf("check %d refused: %+v %v", i, r, err)
			}
		}
		if r, err := db.RecordCheck(ctx, ada.ID, "ch1", w); err != nil || r == nil {
			t.Fatalf("third check in a window of two: %+v %v", r, err)
		}
		if r, err := db.RecordUpload(ctx, ada.ID, "ch1", []store.UploadWindow{{Count: 1, Per: time.Hour}}); err != nil || r != nil {
			t.Fatalf("an upload after checks refused: %+v %v", r, err)
		}
	})
}
