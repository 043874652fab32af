package grade_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestRawScoreIsBeforeThePenalty: grading stores the points before the
// late penalty beside the penalised score (a day late: 2 points, score
// 1; on time: both 2), and an extension's rescoring moves the score only,
// since the points got do not change.
func TestRawScoreIsBeforeThePenalty(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			cat := catalog(t)
			subs := &intake.Service{DB: db, Queue: jobs.New(db, nil), Catalog: cat}
			ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
			bob, _, _ := db.CreateUser(ctx, "bob", domain.RoleLearner)
			tom, _, _ := db.CreateUser(ctx, "tom", domain.RoleInstructor)
			db.Clock = func() time.Time { return due.Add(-time.Hour) }
			if s := submitAndGrade(t, db, subs, cat, ada); s.Score != 2 || s.RawScore != 2 {
				t.Errorf("ada on time: score %g, before the penalty %g; want 2, 2", s.Score, s.RawScore)
			}
			db.Clock = func() time.Time { return due.Add(24 * time.Hour) }
			sb := submitAndGrade(t, db, subs, cat, bob)
			if sb.Score != 1 || sb.RawScore != 2 {
				t.Errorf("bob a day late: score %g, before the penalty %g; want 1, 2", sb.Score, sb.RawScore)
			}
			svc := &grade.Extensions{DB: db, Catalog: cat}
			if _, err := svc.Grant(ctx, tom, "late", grade.ExtensionRequest{Learner: "bob", Deadline: due.Add(48 * time.Hour).Format(time.RFC3339)}); err != nil {
				t.Fatal(err)
			}
			if s, _ := db.Submission(ctx, sb.ID); s.Score != 2 || s.RawScore != 2 {
				t.Errorf("bob extended: score %g, before the penalty %g; want 2, 2", s.Score, s.RawScore)
			}
			if _, err := svc.Revoke(ctx, tom, "late", "bob"); err != nil {
				t.Fatal(err)
			}
			if s, _ := db.Submission(ctx, sb.ID); s.Score != 1 || s.RawScore != 2 {
				t.Errorf("bob's extension revoked: score %g, before the penalty %g; want 1, 2", s.Score, s.RawScore)
			}
		})
	}
}
