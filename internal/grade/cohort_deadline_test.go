package grade_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestCohortDeadlineOverrides: a cohort's own deadline replaces the
// exercise's for the submissions made in it (one day after the exercise's
// deadline, a learner of a cohort due a week later is on time while a
// learner of the default cohort is penalised), and an extension still
// moves it.
func TestCohortDeadlineOverrides(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			cat := catalog(t)
			subs := &intake.Service{DB: db, Queue: jobs.New(db, nil), Catalog: cat}
			late, _ := db.EnsureCohort(ctx, "late-cohort", "")
			later := due.Add(7 * 24 * time.Hour)
			if err := db.OfferExercise(ctx, domain.CohortExercise{CohortID: late.ID, ExerciseID: "late", Deadline: &later}); err != nil {
				t.Fatal(err)
			}
			ada, _, _ := db.CreateUserIn(ctx, "ada", domain.RoleLearner, late.ID)
			bob, _, _ := db.CreateUser(ctx, "bob", domain.RoleLearner)
			cy, _, _ := db.CreateUserIn(ctx, "cy", domain.RoleLearner, late.ID)
			tom, _, _ := db.CreateUser(ctx, "tom", domain.RoleInstructor)
			db.Clock = func() time.Time { return due.Add(8 * 24 * time.Hour) }
			if _, err := (&grade.Extensions{DB: db, Catalog: cat}).Grant(ctx, tom, "late", grade.ExtensionRequest{
				Learner: "cy", Deadline: due.Add(9 * 24 * time.Hour).Format(time.RFC3339)}); err != nil {
				t.Fatal(err)
			}
			db.Clock = func() time.Time { return due.Add(24 * time.Hour) }
			sa := submitAndGrade(t, db, subs, cat, ada)
			sb := submitAndGrade(t, db, subs, cat, bob)
			if sa.CohortID != late.ID || sb.CohortID != 1 {
				t.Fatalf("cohorts: ada %d bob %d", sa.CohortID, sb.CohortID)
			}
			if sa.Score != 2 || strings.Contains(sa.Message, "after the deadline") {
				t.Errorf("ada, in a cohort due a week later: %v %q, want on time", sa.Score, sa.Message)
			}
			if sb.Score != 1 {
				t.Errorf("bob, default cohort, a day late: %v %q, want halved", sb.Score, sb.Message)
			}
			db.Clock = func() time.Time { return due.Add(8 * 24 * time.Hour) }
			if s := submitAndGrade(t, db, subs, cat, ada); s.Score != 1 {
				t.Errorf("ada past her cohort's deadline: %v %q, want halved", s.Score, s.Message)
			}
			if s := submitAndGrade(t, db, subs, cat, cy); s.Score != 2 {
				t.Errorf("cy, extended past the cohort's deadline: %v %q, want on time", s.Score, s.Message)
			}
		})
	}
}

// TestCohortPolicyOverrides: a cohort sets its own late penalty and cap
// on submissions for an exercise it offers. A day late, a learner of a
// cohort whose late penalty is ×0.25 gets a quarter where the default
// cohort's learner gets half (the exercise's ×0.5); the cohort's cap of
// one refuses her second submission before it is stored, while the
// default cohort's learner, under the exercise's own (no cap), goes on.
func TestCohortPolicyOverrides(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			cat := catalog(t)
			subs := &intake.Service{DB: db, Queue: jobs.New(db, nil), Catalog: cat}
			strict, _ := db.EnsureCohort(ctx, "strict", "")
			one := 1
			if err := db.OfferExercise(ctx, domain.CohortExercise{CohortID: strict.ID, ExerciseID: "late",
				LatePenalty: []byte(`[{"after": "0s", "multiplier": 0.25}]`), MaxSubmissions: &one}); err != nil {
				t.Fatal(err)
			}
			ada, _, _ := db.CreateUserIn(ctx, "ada", domain.RoleLearner, strict.ID)
			bob, _, _ := db.CreateUser(ctx, "bob", domain.RoleLearner)
			db.Clock = func() time.Time { return due.Add(24 * time.Hour) }
			if s := submitAndGrade(t, db, subs, cat, ada); s.CohortID != strict.ID || s.Score != 0.5 {
				t.Errorf("ada, strict cohort, a day late: cohort %d score %v %q; want %d, 0.5 (2 × 0.25)", s.CohortID, s.Score, s.Message, strict.ID)
			}
			if s := submitAndGrade(t, db, subs, cat, bob); s.Score != 1 {
				t.Errorf("bob, default cohort, a day late: %v %q, want 1 (2 × 0.5)", s.Score, s.Message)
			}
			_, _, err := subs.Submit(ctx, intake.Request{User: ada, ExerciseID: "late", Notebook: []byte(exercisetest.Answer)})
			if domain.ErrorCode(err) != domain.ECONFLICT || !strings.Contains(domain.ErrorMessage(err), "all 1 submissions") {
				t.Errorf("ada's second submission under her cohort's cap of 1: %v", err)
			}
			if s := submitAndGrade(t, db, subs, cat, bob); s.Score != 1 {
				t.Errorf("bob's second submission: %v", s.Score)
			}
			// A late penalty that is not one is refused where it is set.
			if _, err := policy.CohortLatePenalty([]byte(`[{"after": "1h", "multiplier": 2}, {"after": "-1h", "multiplier": 0.5}]`)); domain.ErrorCode(err) != domain.EINVALID ||
				len(domain.ErrorProblems(err)) != 2 {
				t.Errorf("bad late penalty: %v %v", err, domain.ErrorProblems(err))
			}
		})
	}
}
