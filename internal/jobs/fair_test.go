package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestClaimsTakeTurnsBetweenLearners: runners take the learners' first
// queued jobs before anyone's second, so four uploads of one learner
// delay another learner's by one job, not four; a job's turn counts the
// learner's running jobs too, and a learner whose jobs are done is first
// in line again. Both intake paths (one statement, and the capped
// transaction) on both databases.
func TestClaimsTakeTurnsBetweenLearners(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		for _, capped := range []int{0, 50} {
			t.Run(fmt.Sprintf("%s/cap=%d", d, capped), func(t *testing.T) {
				t.Parallel()
				b := setup(t, d)
				ctx := context.Background()
				users := map[string]int64{}
				for _, n := range []string{"ada", "bo", "cy"} {
					u, _, err := b.db.CreateUser(ctx, n, domain.RoleLearner)
					if err != nil {
						t.Fatal(err)
					}
					users[n] = u.ID
				}
				owner := map[string]string{} // submission → learner
				upload := func(who string) {
					t.Helper()
					nb := []byte(fmt.Sprintf(`{"upload": %d, "by": %q}`, len(owner), who))
					sub, _, err := b.db.CreateSubmission(ctx, store.NewSubmission{UserID: users[who], ExerciseID: "ch1", ExerciseVersion: "v1",
						Upload: nb, Rebuilt: nb, Job: b.q.GradeJob("ch1", domain.Requirement{}, 2), MaxSubmissions: capped})
					if err != nil {
						t.Fatalf("upload of %s: %v", who, err)
					}
					owner[sub.ID] = who
				}
				claim := func() string {
					t.Helper()
					c, err := b.q.Claim(ctx, "r1", nil, time.Minute)
					if err != nil || c == nil {
						t.Fatalf("claim: %v %v", c, err)
					}
					return owner[c.Job.SubmissionID]
				}
				for _, who := range []string{"ada", "ada", "ada", "ada", "bo", "cy", "cy"} {
					upload(who)
				}
				var got []string
				for range 3 {
					got = append(got, claim())
				}
				// ada's fifth upload, while three of hers are queued and one
				// is running, waits behind her earlier ones.
				upload("ada")
				for range 5 {
					got = append(got, claim())
				}
				want := []string{"ada", "bo", "cy", "ada", "cy", "ada", "ada", "ada"}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("claim order %v, want %v", got, want)
				}
			})
		}
	}
}
