package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/store"
)

// DispatchStore is what the dispatcher reads and writes of the database.
type DispatchStore interface {
	ActiveExtension(ctx context.Context, exerciseID string, userID int64) (*domain.Extension, error)
	InTx(ctx context.Context, fn func(tx *store.Tx) error) error
	Now() time.Time
	RegradeJobSubmission(ctx context.Context, jobID int64) (string, error)
	Submission(ctx context.Context, id string) (domain.Submission, error)
	TouchRunner(ctx context.Context, id string) (draining bool, err error)
	grade.SubmissionStore
}

// Dispatcher connects runners to the queue.
type Dispatcher struct {
	DB       DispatchStore
	Queue    *Queue
	Catalog  *exercise.Catalog
	LeaseTTL time.Duration
	// JobTimeout is the default limit for a whole notebook run.
	JobTimeout time.Duration
	// CellTimeout overrides the exercises' cell timeouts when set.
	CellTimeout time.Duration
	Log         *slog.Logger
	// OnGraded is called after a submission is graded (metrics).
	OnGraded func(sub domain.Submission, latency time.Duration)
}

func (d *Dispatcher) ttl() time.Duration {
	if d.LeaseTTL <= 0 {
		return time.Minute
	}
	return d.LeaseTTL
}

// Claim waits up to wait for a job this runner can run and leases it.
func (d *Dispatcher) Claim(ctx context.Context, runnerID string, match domain.Matcher, wait time.Duration) (*domain.Lease, error) {
	return d.ClaimOwned(ctx, 0, runnerID, match, wait)
}

// ClaimOwned is Claim for a runner that must be registered to user owner
// (0: not checked): see Queue.ClaimWaitOwned.
func (d *Dispatcher) ClaimOwned(ctx context.Context, owner int64, runnerID string, match domain.Matcher, wait time.Duration) (*domain.Lease, error) {
	c, err := d.Queue.ClaimWaitOwned(ctx, owner, runnerID, match, d.ttl(), wait)
	if err != nil || c == nil {
		return nil, err
	}
	return d.lease(ctx, runnerID, c)
}

// ClaimAs is Claim for a caller not authenticated yet: see
// Queue.ClaimWaitAs.
func (d *Dispatcher) ClaimAs(ctx context.Context, a store.ClaimAuth, admit func(store.TokenCheck) (int64, error),
	runnerID string, match domain.Matcher, wait time.Duration) (*domain.Lease, error) {
	c, err := d.Queue.ClaimWaitAs(ctx, a, admit, runnerID, match, d.ttl(), wait)
	if err != nil || c == nil {
		return nil, err
	}
	return d.lease(ctx, runnerID, c)
}

// lease is the lease a runner gets for c.
func (d *Dispatcher) lease(ctx context.Context, runnerID string, c *Claimed) (*domain.Lease, error) {
	ex, err := d.Catalog.Get(c.Job.ExerciseID)
	if err != nil {
		// The exercise was removed while the job waited: fail it for good.
		_ = d.Queue.Fail(ctx, c.Job.ID, c.Job.LeaseToken, "exercise "+c.Job.ExerciseID+" no longer exists")
		return nil, fmt.Errorf("claim job %d: %w", c.Job.ID, err)
	}
	cell := time.Duration(ex.CellTimeout * float64(time.Second))
	if d.CellTimeout > 0 {
		cell = d.CellTimeout
	}
	job := d.JobTimeout
	if ex.JobTimeout > 0 {
		job = time.Duration(ex.JobTimeout * float64(time.Second))
	}
	if job <= 0 {
		job = 10 * time.Minute
	}
	l := &domain.Lease{
		JobID: c.Job.ID, Token: c.Job.LeaseToken, Attempt: c.Job.Attempt, Kind: c.Job.Kind,
		ExerciseID: c.Job.ExerciseID, Notebook: c.Payload, CellTimeout: cell.Seconds(),
		JobTimeout: job.Seconds(), Requires: c.Job.Requires, ExerciseDigest: ex.Version, SubmissionID: c.Job.SubmissionID,
	}
	if c.Job.LeaseExpiresAt != nil {
		l.ExpiresAt = *c.Job.LeaseExpiresAt
	}
	d.Log.Info("job leased", "job", l.JobID, "submission", l.SubmissionID, "runner", runnerID, "attempt", l.Attempt)
	return l, nil
}

// Heartbeat extends a lease; cancel asks the runner to stop.
func (d *Dispatcher) Heartbeat(ctx context.Context, jobID int64, token string) (bool, error) {
	return d.Queue.Heartbeat(ctx, jobID, token, d.ttl())
}

// Release hands a job back unstarted (runner shutting down).
func (d *Dispatcher) Release(ctx context.Context, jobID int64, token string) error {
	return d.Queue.Release(ctx, jobID, token)
}

// maxReason bounds a failure reason a runner sends (it is stored and shown).
const maxReason = 4000

// Fail reports an infrastructure failure; the job is retried. The reason
// comes from a runner: it is stored as printable text, bounded.
func (d *Dispatcher) Fail(ctx context.Context, jobID int64, token, reason string) error {
	if len(reason) > maxReason {
		reason = reason[:maxReason] + "…"
	}
	return d.Queue.Fail(ctx, jobID, token, store.Printable(reason))
}

func (d *Dispatcher) failNow(ctx context.Context, jobID int64, token, reason string) error {
	if len(reason) > maxReason {
		reason = reason[:maxReason] + "…"
	}
	return d.Queue.FailNow(ctx, jobID, token, store.Printable(reason))
}

// Complete scores a runner's result and stores it, fenced by the lease.
func (d *Dispatcher) Complete(ctx context.Context, jobID int64, token, runnerID string, res domain.ExecutionResult) error {
	job, err := d.Queue.Job(ctx, jobID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("complete job %d: no such job: %w", jobID, domain.ErrLeaseLost)
	}
	if err != nil {
		return err
	}
	if job.LeaseToken != token || job.State != domain.JobLeased {
		return fmt.Errorf("complete job %d: %w", jobID, domain.ErrLeaseLost)
	}
	if res.InfraError != "" {
		return d.Fail(ctx, jobID, token, res.InfraError)
	}
	if job.Kind == domain.JobReference {
		return d.completeReference(ctx, job, token, runnerID, res)
	}
	if job.Kind == domain.JobRegrade {
		return d.completeRegrade(ctx, job, token, runnerID, res)
	}
	if job.SubmissionID == "" {
		return d.Queue.Complete(ctx, jobID, token, nil)
	}
	grade, err := d.grade(ctx, job.SubmissionID, res)
	if err != nil {
		// A result we cannot grade is an infrastructure fault, not the
		// learner's; one that would fail the same way again is not retried.
		d.Log.Error("grade job", "job", jobID, "err", err)
		fail := d.Fail
		if errors.Is(err, exercise.ErrNoReference) {
			fail = d.failNow
		}
		if ferr := fail(ctx, jobID, token, err.Error()); ferr != nil {
			return fmt.Errorf("grade job %d: %w (and failing it: %v)", jobID, err, ferr)
		}
		return nil
	}
	grade.RunnerID = runnerID
	if err := d.store(ctx, jobID, token, func(tx *store.Tx) error { return tx.SaveGrade(grade) }); err != nil {
		return err
	}
	sub, err := d.DB.Submission(ctx, grade.SubmissionID)
	if err == nil {
		d.Log.Info("submission graded", "submission", sub.ID, "exercise", sub.ExerciseID, "score", sub.Score, "max", sub.MaxScore, "profile", sub.Profile)
		if d.OnGraded != nil {
			d.OnGraded(sub, d.DB.Now().Sub(sub.CreatedAt))
		}
	}
	return nil
}

// storeAttempts and storeBackoff: how often a result whose storing fails
// is tried again before the job is failed with the reason.
var (
	storeAttempts = 3
	storeBackoff  = 500 * time.Millisecond
)

// store completes a job with save, trying again when the database fails
// (a stall, a lost connection). A result that still cannot be stored
// fails the job with the real reason, instead of leaving the lease to
// run out and the submission to say "no heartbeat". Only when even that
// write fails is the error returned (the runner tries again, and the
// reaper is the last resort).
func (d *Dispatcher) store(ctx context.Context, jobID int64, token string, save func(tx *store.Tx) error) error {
	var err error
	for i := 0; i < storeAttempts; i++ {
		if i > 0 {
			t := time.NewTimer(storeBackoff << (i - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
		err = d.Queue.Complete(ctx, jobID, token, save)
		if err == nil || errors.Is(err, domain.ErrLeaseLost) {
			return err
		}
		d.Log.Warn("storing a job's result failed", "job", jobID, "try", i+1, "err", err)
	}
	reason := "the result could not be stored: " + err.Error()
	if ferr := d.Fail(ctx, jobID, token, reason); ferr != nil {
		return fmt.Errorf("complete job %d: %w (and failing it: %v)", jobID, err, ferr)
	}
	d.Log.Error("job failed: its result could not be stored", "job", jobID, "err", err)
	return nil
}

// grade scores a run of a submission: the one grading use case (package grade).
func (d *Dispatcher) grade(ctx context.Context, subID string, res domain.ExecutionResult) (store.Grade, error) {
	sub, err := d.DB.Submission(ctx, subID)
	if err != nil {
		return store.Grade{}, err
	}
	ex, err := d.Catalog.Get(sub.ExerciseID)
	if err != nil {
		return store.Grade{}, err
	}
	return (&grade.Submissions{DB: d.DB}).Grade(ctx, ex, sub, res.Notebook, res)
}
