// Package queue is the job state machine over the jobs table: enqueue,
// claim with a lease, heartbeat, complete, fail, release, and the reaper
// that returns expired leases. The database row is the only truth: there
// is no in-memory queue beside it, only a wake-up signal for long polls.
//
// Every write by a runner is fenced by its lease token in the WHERE clause,
// so a runner that lost its lease (it was too slow, or the reaper gave the
// job to another runner) can never overwrite the new owner's work.
//
// Claims use FOR UPDATE SKIP LOCKED on Postgres and a compare-and-swap
// update on SQLite (one writer, so the swap is enough).
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
)

// Queue operates on the jobs table of one database.
type Queue struct {
	db  *store.DB
	log *slog.Logger

	mu     sync.Mutex
	wakeup chan struct{}
	reqs   []string  // distinct requirements of queued jobs (cache)
	reqsAt time.Time // when reqs was read from the table
}

// New returns a queue over db.
func New(db *store.DB, log *slog.Logger) *Queue {
	if log == nil {
		log = slog.Default()
	}
	return &Queue{db: db, log: log, wakeup: make(chan struct{})}
}

// DB returns the database the queue runs on.
func (q *Queue) DB() *store.DB { return q.db }

// Enqueue inserts a queued job inside tx. The caller calls Notify once tx
// has committed, so that long-polling claimers see the row when they wake.
func (q *Queue) Enqueue(tx *gorm.DB, job *store.JobRow) error {
	if job.State == "" {
		job.State = domain.JobQueued
	}
	if job.MaxAttempts <= 0 {
		job.MaxAttempts = 3
	}
	if job.Requires == "" {
		job.Requires = "{}"
	}
	now := q.db.Now()
	if job.NotBefore.IsZero() {
		job.NotBefore = now
	}
	if job.CreatedAt.IsZero() {
		job.CreatedAt, job.UpdatedAt = now, now
	}
	if err := tx.Create(job).Error; err != nil {
		return fmt.Errorf("enqueue %s job for %s: %w", job.Kind, job.ExerciseID, err)
	}
	q.addRequirement(job.Requires)
	return nil
}

// Notify wakes every waiting claimer.
func (q *Queue) Notify() {
	q.mu.Lock()
	close(q.wakeup)
	q.wakeup = make(chan struct{})
	q.mu.Unlock()
}

func (q *Queue) waitChan() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.wakeup
}

// Claimed is a leased job.
type Claimed struct {
	Job     store.JobRow
	Payload []byte
}

// candidates is how many queued jobs one claim locks at most. Only jobs
// whose requirement this runner satisfies are selected (see runnable), so
// a queue head of NPU-only jobs cannot starve a CPU runner however long it
// grows.
const candidates = 32

// requirementsTTL is how long the list of distinct queued requirements is
// reused. Enqueue adds to it at once; a requirement enqueued by another
// server process is seen within this time.
const requirementsTTL = time.Second

// requirements returns the distinct requirement strings of queued jobs,
// from a cache refreshed every requirementsTTL: jobs carry few distinct
// requirements (one per exercise and reference profile), but finding them
// scans every queued row, too much for every claim of a long queue. A
// stale entry costs nothing (it matches no row).
func (q *Queue) requirements(tx *gorm.DB) ([]string, error) {
	q.mu.Lock()
	if time.Since(q.reqsAt) < requirementsTTL {
		out := slices.Clone(q.reqs)
		q.mu.Unlock()
		return out, nil
	}
	q.mu.Unlock()
	var distinct []string
	if err := tx.Model(&store.JobRow{}).Where("state = ?", domain.JobQueued).
		Distinct("requires").Pluck("requires", &distinct).Error; err != nil {
		return nil, fmt.Errorf("list queued requirements: %w", err)
	}
	q.mu.Lock()
	q.reqs, q.reqsAt = distinct, time.Now()
	q.mu.Unlock()
	return distinct, nil
}

func (q *Queue) addRequirement(r string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !slices.Contains(q.reqs, r) {
		q.reqs = append(q.reqs, r)
	}
}

// runnable returns the requirement strings of queued jobs that match
// accepts, and whether that is all of them.
func (q *Queue) runnable(tx *gorm.DB, match domain.Matcher) (all bool, reqs []string, err error) {
	if match == nil {
		return true, nil, nil
	}
	distinct, err := q.requirements(tx)
	if err != nil {
		return false, nil, err
	}
	for _, r := range distinct {
		var req domain.Requirement
		if err := json.Unmarshal([]byte(r), &req); err != nil {
			continue // a malformed requirement matches no runner
		}
		if ok, _ := match(req); ok {
			reqs = append(reqs, r)
		}
	}
	return len(reqs) == len(distinct), reqs, nil
}

// Claim leases the oldest highest-priority queued job that match accepts.
// It returns (nil, nil) when there is none.
func (q *Queue) Claim(ctx context.Context, runnerID string, match domain.Matcher, ttl time.Duration) (*Claimed, error) {
	now := q.db.Now()
	token := auth.RandomID(16)
	expires := now.Add(ttl)
	var claimed *store.JobRow
	err := q.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		all, reqs, err := q.runnable(tx, match)
		if err != nil {
			return err
		}
		if !all && len(reqs) == 0 {
			return nil
		}
		var rows []store.JobRow
		sel := tx.Where("state = ? AND not_before <= ?", domain.JobQueued, now).
			Order("priority DESC, id").Limit(candidates)
		if !all {
			sel = sel.Where("requires IN ?", reqs)
		}
		if q.db.Dialect == "postgres" {
			// Every selected row is one this runner can run, so lock
			// just one: locking more only makes the other claimers skip
			// rows this claim will not take.
			sel = sel.Limit(1).Clauses(clause.Locking{Strength: "UPDATE", Options: "SKIP LOCKED"})
		}
		if err := sel.Find(&rows).Error; err != nil {
			return fmt.Errorf("select queued jobs: %w", err)
		}
		for i := range rows {
			row := &rows[i]
			// The state check makes this a compare-and-swap on SQLite;
			// on Postgres the row lock already makes it ours.
			res := tx.Model(&store.JobRow{}).Where("id = ? AND state = ?", row.ID, domain.JobQueued).Updates(map[string]any{
				"state": domain.JobLeased, "lease_token": token, "runner_id": runnerID,
				"lease_expires_at": expires, "attempt": gorm.Expr("attempt + 1"), "updated_at": now,
			})
			if res.Error != nil {
				return fmt.Errorf("lease job %d: %w", row.ID, res.Error)
			}
			if res.RowsAffected != 1 {
				continue // another claimer won this row
			}
			row.State, row.LeaseToken, row.RunnerID, row.LeaseExpiresAt = domain.JobLeased, token, runnerID, &expires
			row.Attempt++
			if row.SubmissionID != nil {
				if err := q.db.MarkRunning(tx, *row.SubmissionID, runnerID); err != nil {
					return err
				}
			}
			claimed = row
			return nil
		}
		return nil
	})
	if err != nil || claimed == nil {
		return nil, err
	}
	payload, err := q.db.Blob(ctx, claimed.PayloadSHA256)
	if err != nil {
		// The lease stays; the reaper returns it. This cannot happen while
		// blobs are never deleted, but a clear error beats a panic.
		return nil, fmt.Errorf("claim job %d: %w", claimed.ID, err)
	}
	return &Claimed{Job: *claimed, Payload: payload}, nil
}

// ClaimWait is Claim as a long poll: it waits up to wait for a job.
func (q *Queue) ClaimWait(ctx context.Context, runnerID string, match domain.Matcher, ttl, wait time.Duration) (*Claimed, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	// Other server processes enqueue without notifying us: re-check
	// the table every second as well.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		ch := q.waitChan()
		c, err := q.Claim(ctx, runnerID, match, ttl)
		if err != nil || c != nil {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-deadline.C:
			return nil, nil
		case <-ch:
		case <-tick.C:
		}
	}
}

// Heartbeat extends a lease. cancel reports that the job was canceled and
// the runner should stop.
func (q *Queue) Heartbeat(ctx context.Context, jobID int64, token string, ttl time.Duration) (cancel bool, err error) {
	now := q.db.Now()
	res := q.db.Gorm.WithContext(ctx).Model(&store.JobRow{}).
		Where("id = ? AND lease_token = ? AND state = ?", jobID, token, domain.JobLeased).
		Updates(map[string]any{"lease_expires_at": now.Add(ttl), "updated_at": now})
	if res.Error != nil {
		return false, fmt.Errorf("heartbeat job %d: %w", jobID, res.Error)
	}
	if res.RowsAffected == 1 {
		return false, nil
	}
	var row store.JobRow
	if err := q.db.Gorm.WithContext(ctx).Where("id = ? AND lease_token = ?", jobID, token).Take(&row).Error; err == nil && row.State == domain.JobCanceled {
		return true, nil
	}
	return false, fmt.Errorf("heartbeat job %d: %w", jobID, domain.ErrLeaseLost)
}

// Complete marks a leased job succeeded and runs write in the same
// transaction. If the lease is lost nothing is written and domain.ErrLeaseLost returned.
func (q *Queue) Complete(ctx context.Context, jobID int64, token string, write func(tx *gorm.DB) error) error {
	return q.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&store.JobRow{}).
			Where("id = ? AND lease_token = ? AND state = ?", jobID, token, domain.JobLeased).
			Updates(map[string]any{"state": domain.JobSucceeded, "lease_expires_at": nil, "updated_at": q.db.Now()})
		if res.Error != nil {
			return fmt.Errorf("complete job %d: %w", jobID, res.Error)
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("complete job %d: %w", jobID, domain.ErrLeaseLost)
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
	return q.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row store.JobRow
		err := tx.Where("id = ? AND lease_token = ? AND state = ?", jobID, token, domain.JobLeased).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("fail job %d: %w", jobID, domain.ErrLeaseLost)
		}
		if err != nil {
			return fmt.Errorf("fail job %d: %w", jobID, err)
		}
		return q.returnOrFail(tx, row, reason, true)
	})
}

// Release hands a leased job back without counting the attempt (a runner
// draining on shutdown).
func (q *Queue) Release(ctx context.Context, jobID int64, token string) error {
	return q.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&store.JobRow{}).
			Where("id = ? AND lease_token = ? AND state = ?", jobID, token, domain.JobLeased).
			Updates(map[string]any{"state": domain.JobQueued, "lease_token": "", "runner_id": "",
				"lease_expires_at": nil, "attempt": gorm.Expr("attempt - 1"), "updated_at": q.db.Now()})
		if res.Error != nil {
			return fmt.Errorf("release job %d: %w", jobID, res.Error)
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("release job %d: %w", jobID, domain.ErrLeaseLost)
		}
		var row store.JobRow
		if err := tx.Where("id = ?", jobID).Take(&row).Error; err != nil {
			return fmt.Errorf("release job %d: %w", jobID, err)
		}
		if row.SubmissionID != nil {
			return q.db.MarkQueued(tx, *row.SubmissionID)
		}
		q.Notify()
		return nil
	})
}

// returnOrFail requeues row, or fails it after its last attempt. The
// WHERE on the old lease token keeps it fenced against a concurrent claim.
func (q *Queue) returnOrFail(tx *gorm.DB, row store.JobRow, reason string, notify bool) error {
	now := q.db.Now()
	if row.Attempt >= row.MaxAttempts {
		msg := fmt.Sprintf("grading failed after %d attempts: %s", row.Attempt, reason)
		res := tx.Model(&store.JobRow{}).Where("id = ? AND lease_token = ?", row.ID, row.LeaseToken).
			Updates(map[string]any{"state": domain.JobFailed, "lease_token": "", "lease_expires_at": nil,
				"last_error": msg, "updated_at": now})
		if res.Error != nil || res.RowsAffected != 1 {
			return fmt.Errorf("fail job %d: %v", row.ID, res.Error)
		}
		q.log.Warn("job failed", "job", row.ID, "attempts", row.Attempt, "reason", reason)
		if row.SubmissionID != nil {
			return q.db.MarkFailed(tx, *row.SubmissionID, msg)
		}
		return nil
	}
	// Back off a little so that a job that crashes runners does not
	// immediately take down the next one too.
	notBefore := now.Add(time.Duration(row.Attempt) * 2 * time.Second)
	res := tx.Model(&store.JobRow{}).Where("id = ? AND lease_token = ?", row.ID, row.LeaseToken).
		Updates(map[string]any{"state": domain.JobQueued, "lease_token": "", "runner_id": "", "lease_expires_at": nil,
			"last_error": reason, "not_before": notBefore, "updated_at": now})
	if res.Error != nil || res.RowsAffected != 1 {
		return fmt.Errorf("requeue job %d: %v", row.ID, res.Error)
	}
	q.log.Info("job returned to the queue", "job", row.ID, "attempt", row.Attempt, "reason", reason)
	if row.SubmissionID != nil {
		if err := q.db.MarkQueued(tx, *row.SubmissionID); err != nil {
			return err
		}
	}
	if notify {
		q.Notify()
	}
	return nil
}

// Reap returns expired leases to the queue, failing jobs after their last
// attempt. It returns how many jobs it touched.
func (q *Queue) Reap(ctx context.Context) (int, error) {
	now := q.db.Now()
	var rows []store.JobRow
	if err := q.db.Gorm.WithContext(ctx).Where("state = ? AND lease_expires_at < ?", domain.JobLeased, now).
		Limit(100).Find(&rows).Error; err != nil {
		return 0, fmt.Errorf("find expired leases: %w", err)
	}
	n := 0
	for _, row := range rows {
		err := q.db.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return q.returnOrFail(tx, row, fmt.Sprintf("runner %s lost its lease (no heartbeat)", row.RunnerID), false)
		})
		if err != nil {
			q.log.Warn("reap job", "job", row.ID, "err", err)
			continue
		}
		n++
	}
	if n > 0 {
		q.Notify()
	}
	return n, nil
}

// RunReaper reaps every interval until ctx ends.
func (q *Queue) RunReaper(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := q.Reap(ctx); err != nil && ctx.Err() == nil {
				q.log.Warn("reaper", "err", err)
			}
		}
	}
}

// Depth counts jobs per state.
func (q *Queue) Depth(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		State string
		N     int64
	}
	if err := q.db.Gorm.WithContext(ctx).Model(&store.JobRow{}).Select("state, count(*) AS n").Group("state").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// Job reads one job.
func (q *Queue) Job(ctx context.Context, id int64) (store.JobRow, error) {
	var row store.JobRow
	if err := q.db.Gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return row, fmt.Errorf("read job %d: %w", id, err)
	}
	return row, nil
}
