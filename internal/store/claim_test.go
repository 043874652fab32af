package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// A claim with an Owner checks, in the claim itself, that the runner is
// the owner's and not draining: another token's runner, an unknown one
// and a draining one lease nothing; the owner's own runner leases the job
// and its poll is recorded.
func TestClaimChecksTheRunnersOwner(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			ctx := context.Background()
			learner, _, err := db.CreateUser(ctx, "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			owner, _, err1 := db.CreateUser(ctx, "runners-a", domain.RoleRunner)
			other, _, err2 := db.CreateUser(ctx, "runners-b", domain.RoleRunner)
			if err := errors.Join(err1, err2); err != nil {
				t.Fatal(err)
			}
			for _, r := range []store.RunnerRegistration{{ID: "a1", Name: "a1", UserID: owner.ID, Slots: 1, Profile: "cpu"},
				{ID: "a2", Name: "a2", UserID: owner.ID, Slots: 1, Profile: "cpu"}} {
				if err := db.UpsertRunner(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.SetRunnerDrain(ctx, "a2", true); err != nil {
				t.Fatal(err)
			}
			sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: learner.ID, ExerciseID: "ch1", ExerciseVersion: "v",
				Upload: []byte(`{"cells":[]}`), Rebuilt: []byte(`{"cells":[]}`), MaxAttempts: 3,
				Enqueue: func(tx *store.Tx, job *domain.Job) error { return tx.InsertJob(job) }})
			if err != nil {
				t.Fatal(err)
			}
			// Runners were registered at the real clock's now; the claims
			// run a minute later, so the poll is due to be recorded.
			later := time.Now().UTC().Add(time.Minute).Truncate(time.Millisecond)
			db.Now = func() time.Time { return later }
			claim := func(runner string, by int64) (*store.Claimed, error) {
				return db.ClaimJob(ctx, store.Claim{RunnerID: runner, Owner: by, Token: "t-" + runner, Expires: later.Add(time.Hour), Any: true})
			}
			for _, c := range []struct {
				runner string
				by     int64
				want   error
			}{{"a1", other.ID, store.ErrRunnerUnknown}, {"nope", owner.ID, store.ErrRunnerUnknown}, {"a2", owner.ID, store.ErrRunnerDraining}} {
				if got, err := claim(c.runner, c.by); got != nil || !errors.Is(err, c.want) {
					t.Errorf("claim as %s by user %d = %+v, %v; want %v", c.runner, c.by, got, err, c.want)
				}
			}
			if domain.ErrorCode(store.ErrRunnerUnknown) != domain.ENOTFOUND {
				t.Error("an unknown runner is not ENOTFOUND")
			}
			got, err := claim("a1", owner.ID)
			if err != nil || got == nil || got.Job.SubmissionID != sub.ID || got.Job.RunnerID != "a1" || got.Job.Attempt != 1 ||
				got.Job.LeaseToken != "t-a1" || string(got.Payload) != `{"cells":[]}` || got.Job.LeaseExpiresAt == nil {
				t.Fatalf("own runner's claim = %+v, %v", got, err)
			}
			var seen []time.Time
			if err := db.RawScan(ctx, &seen, "SELECT last_seen FROM runners WHERE id = 'a1'"); err != nil || len(seen) != 1 || !seen[0].UTC().Equal(later) {
				t.Errorf("runner a1 last seen %v (%v), want %v", seen, err, later)
			}
			var status string
			if err := db.RawScan(ctx, &status, "SELECT status FROM submissions WHERE id = ?", sub.ID); err != nil || status != domain.StatusRunning {
				t.Errorf("submission status %q (%v), want running", status, err)
			}
			// The queue is empty now: the owner's runner gets nothing, the
			// others still their errors.
			if got, err := claim("a1", owner.ID); got != nil || err != nil {
				t.Errorf("claim of an empty queue = %+v, %v", got, err)
			}
			if got, err := claim("a1", other.ID); got != nil || !errors.Is(err, store.ErrRunnerUnknown) {
				t.Errorf("claim of an empty queue by another token = %+v, %v", got, err)
			}
		})
	}
}
