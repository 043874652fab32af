// Package jobs is the work runners do and its state machine.
//
// Queue is the state machine over the jobs table: enqueue,
// claim with a lease, heartbeat, complete, fail, release, and the reaper
// that returns expired leases. It decides every transition (which job a
// runner gets, when a failure is retried and when it is final); package
// store writes them (store/go), each claim as one statement. The
// database row is the only truth: there is no in-memory queue beside it,
// only wake-ups for long polls (wake.go: Postgres notifications reach
// every server process) and a short-lived cache of the requirements
// queued jobs carry. Several server processes may share one Postgres;
// one of them reaps at a time (an advisory lock).
//
// Every write by a runner or the reaper is fenced by the lease token and
// the state in the WHERE clause, so a runner that lost its lease (it was
// too slow, or the reaper gave the job to another runner) can never
// overwrite the new owner's work.
//
// Dispatcher (dispatch.go) is the runner-facing side: it hands leased jobs
// to runners (in-process or remote), extends leases, and takes results
// back, scoring them in the same lease-fenced transaction that completes
// the job. Reference answers and reference outputs never leave it: a
// runner only ever sees the notebook it must execute.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
)

// QueueStore is what the queue reads and writes of the database: the
// jobs table, leases and the runners' liveness.
type QueueStore interface {
	CancelJob(ctx context.Context, id int64, reason string) (domain.Job, error)
	ClaimJob(ctx context.Context, c store.Claim) (*store.Claimed, error)
	ClaimJobAs(ctx context.Context, c store.Claim, a store.ClaimAuth) (store.TokenCheck, *store.Claimed, error)
	Engine() string
	Exclusively(ctx context.Context, key int64, fn func(context.Context) error) (ran bool, err error)
	ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]domain.Job, error)
	ExtendLease(ctx context.Context, id int64, token string, expires time.Time) (canceled bool, err error)
	InTx(ctx context.Context, fn func(tx *store.Tx) error) error
	Job(ctx context.Context, id int64) (domain.Job, error)
	JobDepth(ctx context.Context) (map[string]int64, error)
	ListenDSN() string
	Now() time.Time
	PendingJobDepth(ctx context.Context) (map[string]int64, error)
	PendingJobs(ctx context.Context, limit int) ([]domain.Job, error)
	QueuedRequirements(ctx context.Context) ([]domain.Requirement, error)
	ReleaseJob(ctx context.Context, id int64, token string) error
}

// Queue operates on the jobs table of one database.
type Queue struct {
	db  QueueStore
	log *slog.Logger

	mu     sync.Mutex
	wake   wakeups
	reqs   []domain.Requirement // distinct requirements of queued jobs (cache)
	reqsAt time.Time            // when reqs was read from the table

	// afterReapRead runs between the reaper's read of an expired lease and
	// its compare-and-swap (tests interleave a runner there).
	afterReapRead func(domain.Job)
}

// New returns a queue over db.
func New(db QueueStore, log *slog.Logger) *Queue {
	if log == nil {
		log = slog.Default()
	}
	return &Queue{db: db, log: log}
}

// GradeJob is the queued grading job of a new submission of exerciseID,
// as intake hands it to the store with the submission (which fills in
// the submission and payload); Enqueued is called once it committed.
func (q *Queue) GradeJob(exerciseID string, requires domain.Requirement, maxAttempts int) domain.Job {
	job := domain.Job{Kind: domain.JobGrade, ExerciseID: exerciseID, Requires: requires, MaxAttempts: maxAttempts}
	q.defaults(&job)
	return job
}

// Enqueued tells the queue a job was written by another statement (a
// new submission's): claimers with its requirement are woken.
func (q *Queue) Enqueued(job domain.Job) {
	q.addRequirement(job.Requires)
	q.Notify()
}

func (q *Queue) defaults(job *domain.Job) {
	job.State = domain.JobQueued
	if job.MaxAttempts <= 0 {
		job.MaxAttempts = 3
	}
	now := q.db.Now()
	if job.NotBefore.IsZero() {
		job.NotBefore = now
	}
	if job.CreatedAt.IsZero() {
		job.CreatedAt, job.UpdatedAt = now, now
	}
}

// Enqueue inserts a queued job inside tx. The caller calls Notify once tx
// has committed, so that long-polling claimers see the row when they wake.
func (q *Queue) Enqueue(tx *store.Tx, job *domain.Job) error {
	q.defaults(job)
	if err := tx.InsertJob(job); err != nil {
		return err
	}
	q.addRequirement(job.Requires)
	return nil
}

// Claimed is a leased job.
type Claimed struct {
	Job     domain.Job
	Payload []byte
}

// requirementsTTL is how long the list of distinct queued requirements is
// reused. Enqueue adds to it at once; a requirement enqueued by another
// server process is seen within this time.
const requirementsTTL = time.Second

// requirements returns the distinct requirements of queued jobs, from a
// cache refreshed every requirementsTTL: jobs carry few distinct
// requirements (one per exercise and reference profile), but finding them
// scans every queued row, too much for every claim of a long queue. A
// stale entry costs nothing (it matches no row), so a refresh adds to the
// list rather than replacing it: an entry Enqueue or a notification added
// while the table was read (its transaction not yet committed) must not
// be dropped, or its job would wait for the next wake-up. The list is
// rebuilt from the table only when it grows past maxRequirements.
func (q *Queue) requirements(ctx context.Context) ([]domain.Requirement, error) {
	q.mu.Lock()
	if time.Since(q.reqsAt) < requirementsTTL {
		out := slices.Clone(q.reqs)
		q.mu.Unlock()
		return out, nil
	}
	q.mu.Unlock()
	distinct, err := q.db.QueuedRequirements(ctx)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range distinct {
		if !slices.Contains(q.reqs, r) {
			q.reqs = append(q.reqs, r)
		}
	}
	if len(q.reqs) > maxRequirements {
		q.reqs = distinct
	}
	q.reqsAt = time.Now()
	return slices.Clone(q.reqs), nil
}

// maxRequirements bounds the cached requirement list (distinct
// requirements are one per exercise variant and runner profile).
const maxRequirements = 256

// forgetRequirements makes the next claim re-read the requirements.
func (q *Queue) forgetRequirements() {
	q.mu.Lock()
	q.reqsAt = time.Time{}
	q.mu.Unlock()
}

func (q *Queue) addRequirement(r domain.Requirement) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !slices.Contains(q.reqs, r) {
		q.reqs = append(q.reqs, r)
	}
}

// runnable returns the requirements of queued jobs that match accepts
// (all: match is nil). A claim takes only jobs of these requirements, so a
// requirement this process has not seen yet (another server enqueued it
// a moment ago) waits for the next read instead of going to a runner that
// may not satisfy it.
func (q *Queue) runnable(ctx context.Context, match domain.Matcher) (all bool, reqs []domain.Requirement, err error) {
	if match == nil {
		return true, nil, nil
	}
	distinct, err := q.requirements(ctx)
	if err != nil {
		return false, nil, err
	}
	for _, r := range distinct {
		if ok, _ := match(r); ok {
			reqs = append(reqs, r)
		}
	}
	return false, reqs, nil
}

// Claim leases the oldest highest-priority queued job that match accepts.
// It returns (nil, nil) when there is none.
func (q *Queue) Claim(ctx context.Context, runnerID string, match domain.Matcher, ttl time.Duration) (*Claimed, error) {
	return q.claim(ctx, 0, runnerID, match, ttl)
}

// claim is Claim for a runner that must be registered to user owner
// (0: not checked; see store.Claim.Owner).
func (q *Queue) claim(ctx context.Context, owner int64, runnerID string, match domain.Matcher, ttl time.Duration) (*Claimed, error) {
	all, reqs, err := q.runnable(ctx, match)
	if err != nil {
		return nil, err
	}
	c, err := q.db.ClaimJob(ctx, store.Claim{RunnerID: runnerID, Token: auth.RandomID(16), Expires: q.db.Now().Add(ttl),
		Any: all, Requires: reqs, Owner: owner})
	if err != nil || c == nil {
		return nil, err
	}
	return &Claimed{Job: c.Job, Payload: c.Payload}, nil
}

// ClaimWait is Claim as a long poll: it waits up to wait for a job, woken
// by Notify or a Postgres notification (wake.go), re-querying by itself
// only as a safety net.
func (q *Queue) ClaimWait(ctx context.Context, runnerID string, match domain.Matcher, ttl, wait time.Duration) (*Claimed, error) {
	return q.ClaimWaitOwned(ctx, 0, runnerID, match, ttl, wait)
}

// ClaimWaitOwned is ClaimWait for a remote runner, which must be
// registered to user owner: every claim checks that in its own statement
// and fails with store.ErrRunnerUnknown, or store.ErrRunnerDraining once
// the runner drains.
func (q *Queue) ClaimWaitOwned(ctx context.Context, owner int64, runnerID string, match domain.Matcher, ttl, wait time.Duration) (*Claimed, error) {
	return q.claimWait(ctx, match, wait, func() (*Claimed, error) { return q.claim(ctx, owner, runnerID, match, ttl) })
}

// ClaimWaitAs is ClaimWaitOwned for a caller not authenticated yet: its
// first claim authenticates a in the same statement
// (store.DB.ClaimJobAs), and admit, given that authentication, returns
// the user the runner must be registered to, or the error that ends the
// claim; the re-queries of the long poll check that owner.
func (q *Queue) ClaimWaitAs(ctx context.Context, a store.ClaimAuth, admit func(store.TokenCheck) (int64, error),
	runnerID string, match domain.Matcher, ttl, wait time.Duration) (*Claimed, error) {
	owner := int64(0)
	return q.claimWait(ctx, match, wait, func() (*Claimed, error) {
		if owner != 0 {
			return q.claim(ctx, owner, runnerID, match, ttl)
		}
		all, reqs, err := q.runnable(ctx, match)
		if err != nil {
			return nil, err
		}
		t, c, err := q.db.ClaimJobAs(ctx, store.Claim{RunnerID: runnerID, Token: auth.RandomID(16), Expires: q.db.Now().Add(ttl),
			Any: all, Requires: reqs}, a)
		if err != nil && !errors.Is(err, store.ErrRunnerUnknown) && !errors.Is(err, store.ErrRunnerDraining) {
			return nil, err
		}
		id, aerr := admit(t)
		if aerr != nil {
			if c != nil { // admit and the statement disagree: hand the job back
				_ = q.Release(context.WithoutCancel(ctx), c.Job.ID, c.Job.LeaseToken)
			}
			return nil, aerr
		}
		owner = id
		if err != nil || c == nil {
			return nil, err
		}
		return &Claimed{Job: c.Job, Payload: c.Payload}, nil
	})
}

// claimWait runs claim until it leases a job, fails, or wait passes,
// woken between tries by Notify or a Postgres notification.
func (q *Queue) claimWait(ctx context.Context, match domain.Matcher, wait time.Duration, claim func() (*Claimed, error)) (*Claimed, error) {
	w, e := q.addWaiter(match)
	defer q.removeWaiter(w, e)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		c, err := claim()
		if err != nil {
			return nil, err
		}
		if c != nil {
			// More jobs may be queued than wake-ups sent: let the next
			// claimer look.
			q.wakeSome(&c.Job.Requires, 1)
			return c, nil
		}
		poll := time.NewTimer(jitter(q.pollEvery()))
		select {
		case <-ctx.Done():
			poll.Stop()
			return nil, nil
		case <-deadline.C:
			poll.Stop()
			return nil, nil
		case <-w.ch:
		case <-poll.C:
		}
		poll.Stop()
	}
}

// Heartbeat extends a lease. cancel reports that the job was canceled and
// the runner should stop.
func (q *Queue) Heartbeat(ctx context.Context, jobID int64, token string, ttl time.Duration) (cancel bool, err error) {
	return q.db.ExtendLease(ctx, jobID, token, q.db.Now().Add(ttl))
}

// Complete marks a leased job succeeded and runs write in the same
// transaction. If the lease is lost nothing is written and the error wraps
// domain.ErrLeaseLost.
func (q *Queue) Complete(ctx context.Context, jobID int64, token string, write func(tx *store.Tx) error) error {
	return q.db.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.CompleteJob(jobID, token); err != nil {
			return err
		}
		if write == nil {
			return nil
		}
		return write(tx)
	})
}

// Fail records an infrastructure failure reported by the lease holder. The
// job is retried until its last attempt, then failed with reason.
func (q *Queue) Fail(ctx context.Context, jobID int64, token, reason string) error {
	return q.db.InTx(ctx, func(tx *store.Tx) error {
		job, err := tx.LeasedJob(jobID, token)
		if err != nil {
			return fmt.Errorf("fail job %d: %w", jobID, err)
		}
		return q.returnOrFail(tx, job, store.Fence{ID: job.ID, Token: job.LeaseToken}, reason)
	})
}

// FailNow fails a leased job at once, whatever attempts it has left: a
// fault that another attempt would meet again (an exercise without
// usable references).
func (q *Queue) FailNow(ctx context.Context, jobID int64, token, reason string) error {
	return q.db.InTx(ctx, func(tx *store.Tx) error {
		job, err := tx.LeasedJob(jobID, token)
		if err != nil {
			return fmt.Errorf("fail job %d: %w", jobID, err)
		}
		if err := tx.FailJob(store.Fence{ID: job.ID, Token: job.LeaseToken}, job.SubmissionID, "grading failed: "+reason); err != nil {
			return err
		}
		q.log.Warn("job failed without retry", "job", job.ID, "attempt", job.Attempt, "reason", reason)
		return nil
	})
}

// Release hands a leased job back without counting the attempt (a runner
// draining on shutdown).
func (q *Queue) Release(ctx context.Context, jobID int64, token string) error {
	if err := q.db.ReleaseJob(ctx, jobID, token); err != nil {
		return err
	}
	q.Notify()
	return nil
}

// returnOrFail requeues job, or fails it after its last attempt: the
// failure taxonomy of the queue. The write is fenced by f.
func (q *Queue) returnOrFail(tx *store.Tx, job domain.Job, f store.Fence, reason string) error {
	if job.Attempt >= job.MaxAttempts {
		msg := fmt.Sprintf("grading failed after %d attempts: %s", job.Attempt, reason)
		if err := tx.FailJob(f, job.SubmissionID, msg); err != nil {
			return err
		}
		q.log.Warn("job failed", "job", job.ID, "attempts", job.Attempt, "reason", reason)
		return nil
	}
	// Back off a little so that a job that crashes runners does not
	// immediately take down the next one too.
	notBefore := q.db.Now().Add(time.Duration(job.Attempt) * 2 * time.Second)
	if err := tx.RequeueJob(f, job.SubmissionID, reason, notBefore); err != nil {
		return err
	}
	q.log.Info("job returned to the queue", "job", job.ID, "attempt", job.Attempt, "reason", reason)
	q.notifyAt(notBefore)
	return nil
}

// Reap returns expired leases to the queue, failing jobs after their last
// attempt. It returns how many jobs it touched. Each transition is a
// compare-and-swap that also requires the lease to be expired at the
// time of the reaper's read (store.Fence.ExpiredBefore), so a lease that
// a heartbeat extended, or a job that completed, since is left alone.
func (q *Queue) Reap(ctx context.Context) (int, error) {
	now := q.db.Now()
	expired, err := q.db.ExpiredLeases(ctx, now, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, job := range expired {
		if q.afterReapRead != nil {
			q.afterReapRead(job)
		}
		f := store.Fence{ID: job.ID, Token: job.LeaseToken, ExpiredBefore: now}
		err := q.db.InTx(ctx, func(tx *store.Tx) error {
			return q.returnOrFail(tx, job, f, fmt.Sprintf("runner %s lost its lease (no heartbeat)", job.RunnerID))
		})
		if errors.Is(err, domain.ErrLeaseLost) {
			continue // heartbeat, completion or another reaper came first
		}
		if err != nil {
			q.log.Warn("reap job", "job", job.ID, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// RunReaper reaps every interval until ctx ends. Of several server
// processes on one Postgres only one reaps at a time (an advisory lock);
// the others skip the pass. The fences make a second reaper harmless, the
// lock makes it cheap.
func (q *Queue) RunReaper(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, err := q.db.Exclusively(ctx, store.LockReaper, func(ctx context.Context) error {
				_, err := q.Reap(ctx)
				return err
			})
			if err != nil && ctx.Err() == nil {
				q.log.Warn("reaper", "err", err)
			}
		}
	}
}

// Cancel cancels a queued or leased job with reason: a queued one is never
// claimed, a leased one's runner is told to stop at its next heartbeat
// (Heartbeat's cancel) and its result is refused. Its submission fails.
func (q *Queue) Cancel(ctx context.Context, jobID int64, reason string) (domain.Job, error) {
	j, err := q.db.CancelJob(ctx, jobID, reason)
	if err != nil {
		return j, err
	}
	q.log.Info("job canceled", "job", jobID, "reason", reason)
	return j, nil
}

// Depth counts jobs per state.
func (q *Queue) Depth(ctx context.Context) (map[string]int64, error) { return q.db.JobDepth(ctx) }

// PendingDepth counts queued and leased jobs only, from an index (what
// the dashboard and /metrics read on every load and scrape).
func (q *Queue) PendingDepth(ctx context.Context) (map[string]int64, error) {
	return q.db.PendingJobDepth(ctx)
}

// Job reads one job.
func (q *Queue) Job(ctx context.Context, id int64) (domain.Job, error) { return q.db.Job(ctx, id) }
