package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
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
				Upload: []byte(`{"cells":[]}`), Rebuilt: []byte(`{"cells":[]}`), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 3)})
			if err != nil {
				t.Fatal(err)
			}
			// Runners were registered at the real clock's now; the claims
			// run a minute later, so the poll is due to be recorded.
			later := time.Now().UTC().Add(time.Minute).Truncate(time.Millisecond)
			db.Clock = func() time.Time { return later }
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

// A claim that authenticates in its own statement (ClaimJobAs) leases a
// job only for a valid token of the required role, for the token user's
// own runner that is not draining, from any address (failed sign-ins of
// the address come back, for the caller to refuse bad tokens); it
// reports the authentication either way.
func TestClaimAuthenticatesInItsStatement(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			ctx := context.Background()
			learner, learnerTok, err := db.CreateUser(ctx, "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			owner, ownerTok, otherTok := seedRunners(t, db)
			sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: learner.ID, ExerciseID: "ch1", ExerciseVersion: "v",
				Upload: []byte(`{"cells":[]}`), Rebuilt: []byte(`{"cells":[]}`), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 3)})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, _, err := db.RecordAuthFailure(ctx, "10.0.0.9", time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			claim := func(runner, token, addr string) (store.TokenCheck, *store.Claimed, error) {
				return db.ClaimJobAs(ctx, store.Claim{RunnerID: runner, Token: "t-" + runner, Expires: time.Now().Add(time.Hour), Any: true},
					store.ClaimAuth{Token: token, Addr: addr, Window: time.Minute, Role: domain.RoleRunner})
			}
			for _, c := range []struct {
				name, runner, token, addr string
				valid                     bool
				fails                     int
				want                      error
			}{
				{"a guessed token", "a1", "npg_guess", "10.0.0.1", false, 0, nil},
				{"no token", "a1", "", "10.0.0.1", false, 0, nil},
				{"a learner's token", "a1", learnerTok, "10.0.0.1", true, 0, nil},
				{"another token's runner", "a1", otherTok, "10.0.0.1", true, 0, store.ErrRunnerUnknown},
				{"an unknown runner", "nope", ownerTok, "10.0.0.1", true, 0, store.ErrRunnerUnknown},
				{"a draining runner", "a2", ownerTok, "10.0.0.1", true, 0, store.ErrRunnerDraining},
			} {
				check, got, err := claim(c.runner, c.token, c.addr)
				if got != nil || !errors.Is(err, c.want) || check.Valid != c.valid || check.Failures != c.fails {
					t.Errorf("%s: claim = %+v, %+v, %v; want valid %v, %d failures, %v", c.name, check, got, err, c.valid, c.fails, c.want)
				}
			}
			// The runner's own token claims even from an address with
			// failed sign-ins (a campus NAT): they come back for the
			// caller to refuse bad tokens, never to stop a valid one.
			check, got, err := claim("a1", ownerTok, "10.0.0.9")
			if err != nil || !check.Valid || check.Failures != 3 || check.User.ID != owner.ID || got == nil || got.Job.SubmissionID != sub.ID ||
				got.Job.RunnerID != "a1" || string(got.Payload) != `{"cells":[]}` {
				t.Fatalf("own runner's claim from an address with 3 failures = %+v, %+v, %v", check, got, err)
			}
			if check, got, err := claim("a1", ownerTok, "10.0.0.1"); err != nil || !check.Valid || got != nil {
				t.Errorf("claim of an empty queue = %+v, %+v, %v", check, got, err)
			}
			if err := db.RevokeTokens(ctx, owner.ID); err != nil {
				t.Fatal(err)
			}
			if check, got, err := claim("a1", ownerTok, "10.0.0.1"); err != nil || check.Valid || got != nil {
				t.Errorf("claim with a revoked token = %+v, %+v, %v", check, got, err)
			}
		})
	}
}

// An idle runner's poll (nothing it can run is queued) still
// authenticates, checks the runner and records the poll; on Postgres it
// is the claim statement leasing nothing, one transaction per poll
// (1,000 idle runners poll 40 times a second), where it was two.
func TestIdleClaimIsOneStatement(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			ctx := context.Background()
			owner, ownerTok, otherTok := seedRunners(t, db)
			later := time.Now().UTC().Add(time.Minute).Truncate(time.Millisecond)
			db.Clock = func() time.Time { return later }
			// No requirement is runnable: Any unset, Requires empty.
			idle := func(runner, token string) (store.TokenCheck, *store.Claimed, error) {
				return db.ClaimJobAs(ctx, store.Claim{RunnerID: runner, Token: "t-" + runner, Expires: later.Add(time.Hour)},
					store.ClaimAuth{Token: token, Addr: "10.0.0.1", Window: time.Minute, Role: domain.RoleRunner})
			}
			for _, c := range []struct {
				name, runner, token string
				valid               bool
				want                error
			}{
				{"a guessed token", "a1", "npg_guess", false, nil},
				{"another token's runner", "a1", otherTok, true, store.ErrRunnerUnknown},
				{"a draining runner", "a2", ownerTok, true, store.ErrRunnerDraining},
				{"its own runner", "a1", ownerTok, true, nil},
			} {
				check, got, err := idle(c.runner, c.token)
				if got != nil || !errors.Is(err, c.want) || check.Valid != c.valid {
					t.Errorf("%s: idle claim = %+v, %+v, %v; want valid %v, %v", c.name, check, got, err, c.valid, c.want)
				}
			}
			var seen []time.Time
			if err := db.RawScan(ctx, &seen, "SELECT last_seen FROM runners WHERE id = 'a1'"); err != nil || len(seen) != 1 || !seen[0].UTC().Equal(later) {
				t.Errorf("runner a1 last seen %v (%v), want %v", seen, err, later)
			}
			// The re-queries of a long poll (ClaimJob with the owner) too.
			if got, err := db.ClaimJob(ctx, store.Claim{RunnerID: "a1", Owner: owner.ID, Token: "t", Expires: later}); got != nil || err != nil {
				t.Errorf("idle re-query = %+v, %v", got, err)
			}
			if got, err := db.ClaimJob(ctx, store.Claim{RunnerID: "a2", Owner: owner.ID, Token: "t", Expires: later}); got != nil || !errors.Is(err, store.ErrRunnerDraining) {
				t.Errorf("idle re-query of a draining runner = %+v, %v", got, err)
			}
			if d != "postgres" {
				return
			}
			// Postgres counts this database's transactions; a session's
			// counts reach the view at most once a second.
			xacts := func() int64 {
				time.Sleep(1100 * time.Millisecond)
				var n int64
				if err := db.RawExec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
					t.Fatal(err)
				}
				if err := db.RawScan(ctx, &n, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"); err != nil {
					t.Fatal(err)
				}
				return n
			}
			const polls = 50
			x0 := xacts()
			for range polls {
				if _, got, err := idle("a1", ownerTok); got != nil || err != nil {
					t.Fatalf("idle claim = %+v, %v", got, err)
				}
			}
			// The count's own reading statements are transactions too, and
			// a few more may fall in the window; two per poll would be 100.
			if n := xacts() - x0; n > polls*3/2 {
				t.Errorf("%d idle polls ran %d transactions, want at most %d", polls, n, polls*3/2)
			}
		})
	}
}

// seedRunners makes two runner accounts, a and b, and a's runners a1
// (claiming) and a2 (draining).
func seedRunners(t *testing.T, db *store.DB) (owner domain.User, ownerTok, otherTok string) {
	t.Helper()
	ctx := context.Background()
	owner, ownerTok, err1 := db.CreateUser(ctx, "runners-a", domain.RoleRunner)
	_, otherTok, err2 := db.CreateUser(ctx, "runners-b", domain.RoleRunner)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a1", "a2"} {
		if err := db.UpsertRunner(ctx, store.RunnerRegistration{ID: id, Name: id, UserID: owner.ID, Slots: 1, Profile: "cpu"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetRunnerDrain(ctx, "a2", true); err != nil {
		t.Fatal(err)
	}
	return owner, ownerTok, otherTok
}
