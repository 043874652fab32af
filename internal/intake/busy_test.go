package intake_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestLearnerCapOnActiveJobs: with a cap of 2, a learner's third upload
// while two wait to be graded is refused as a rate limit with a
// Retry-After (a check too, and nothing is stored), another learner and
// an instructor are not held up, and once one of the two is graded the
// learner may send again.
func TestLearnerCapOnActiveJobs(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			cat, err := exercise.Load("../../exercises", "../../answers")
			if err != nil {
				t.Fatal(err)
			}
			ex, _ := cat.Get("ch1")
			q := jobs.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
			svc := &intake.Service{DB: db, Queue: q, Catalog: cat, References: &grade.Submissions{DB: db}, MaxActive: 2}
			ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
			bo, _, _ := db.CreateUser(ctx, "bo", domain.RoleLearner)
			tom, _, _ := db.CreateUser(ctx, "tom", domain.RoleInstructor)
			send := func(u domain.User, check bool) (domain.Submission, error) {
				sub, _, err := svc.Submit(ctx, intake.Request{User: u, ExerciseID: "ch1", Notebook: ex.StarterBytes, Check: check})
				return sub, err
			}
			first, err := send(ada, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := send(ada, true); err != nil {
				t.Fatal(err)
			}
			for _, check := range []bool{false, true} {
				_, err := send(ada, check)
				var rl *intake.RateLimitError
				if domain.ErrorCode(err) != domain.ERATELIMIT || !errors.As(err, &rl) || rl.RetryAfter <= 0 {
					t.Errorf("ada's third upload (check %v) with two waiting: %v, want a rate limit with Retry-After", check, err)
				}
			}
			if depth, _ := q.Depth(ctx); depth[domain.JobQueued] != 2 {
				t.Errorf("queued %v, want ada's two only", depth)
			}
			for _, u := range []domain.User{bo, tom, tom, tom} {
				if _, err := send(u, false); err != nil {
					t.Errorf("%s held up by ada's cap: %v", u.Name, err)
				}
			}
			if err := db.RawExec(ctx, "UPDATE jobs SET state = ? WHERE submission_id = ?", domain.JobSucceeded, first.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := send(ada, false); err != nil {
				t.Errorf("ada after one of hers is graded: %v", err)
			}
		})
	}
}
