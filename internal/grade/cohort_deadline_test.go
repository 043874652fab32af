package grade_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
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
			if err := db.OfferExercise(ctx, late.ID, "late", &later); err != nil {
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
