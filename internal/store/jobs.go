package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// The SQL of the jobs table. Package queue owns the state machine (when a
// job is claimed, retried, failed or reaped); this file owns how each
// transition is written. Every transition of a leased job is one
// compare-and-swap statement fenced by the lease token and the state, so a
// runner or reaper acting on a stale read changes nothing.

// jobRow is the jobs table.
type jobRow struct {
	ID             int64
	SubmissionID   *string
	Kind           string
	ExerciseID     string
	State          string
	Requires       string
	Priority       int
	Attempt        int
	MaxAttempts    int
	PayloadSHA256  string `gorm:"column:payload_sha256"`
	LeaseToken     string
	RunnerID       string
	LeaseExpiresAt *time.Time
	NotBefore      time.Time
	LastError      string
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Profile is the runner profile a reference job records (migration 00003).
	Profile string
	// UserID is the learner a grade job grades the upload of, and Turn how
	// many of their jobs were queued or running when it was enqueued: the
	// claim order's fair share (migration 00025).
	UserID *int64
	Turn   int
}

func (jobRow) TableName() string { return "jobs" }

func (r jobRow) job() domain.Job {
	j := domain.Job{ID: r.ID, Kind: r.Kind, ExerciseID: r.ExerciseID, State: r.State, Priority: r.Priority,
		Attempt: r.Attempt, MaxAttempts: r.MaxAttempts, PayloadSHA256: r.PayloadSHA256, LeaseToken: r.LeaseToken,
		RunnerID: r.RunnerID, LeaseExpiresAt: r.LeaseExpiresAt, NotBefore: r.NotBefore, LastError: r.LastError,
		Profile: r.Profile, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.SubmissionID != nil {
		j.SubmissionID = *r.SubmissionID
	}
	_ = json.Unmarshal([]byte(r.Requires), &j.Requires) // a malformed requirement reads as none
	return j
}

// requirementKey is how a requirement is stored: its JSON, which is also
// the key claims filter on, so every writer must encode it the same way.
func requirementKey(r domain.Requirement) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// InsertJob writes job as a new row and sets its ID.
func (tx *Tx) InsertJob(job *domain.Job) error {
	row := newJobRow(*job)
	if err := tx.g.Create(&row).Error; err != nil {
		return fmt.Errorf("insert %s job for %s: %w", job.Kind, job.ExerciseID, translate(err))
	}
	job.ID = row.ID
	return nil
}

func newJobRow(job domain.Job) jobRow {
	row := jobRow{Kind: job.Kind, ExerciseID: job.ExerciseID, State: job.State, Requires: requirementKey(job.Requires),
		Priority: job.Priority, MaxAttempts: job.MaxAttempts, PayloadSHA256: job.PayloadSHA256,
		NotBefore: job.NotBefore, Profile: job.Profile, CreatedAt: job.CreatedAt, UpdatedAt: job.UpdatedAt}
	if job.SubmissionID != "" {
		id := job.SubmissionID
		row.SubmissionID = &id
	}
	return row
}

// QueuedRequirements returns the distinct requirements of queued jobs.
// A stored requirement that does not decode is left out: it matches no runner.
func (db *DB) QueuedRequirements(ctx context.Context) ([]domain.Requirement, error) {
	var keys []string
	if err := db.gorm.WithContext(ctx).Model(&jobRow{}).Where("state = ?", domain.JobQueued).
		Distinct("requires").Pluck("requires", &keys).Error; err != nil {
		return nil, fmt.Errorf("list queued requirements: %w", translate(err))
	}
	out := make([]domain.Requirement, 0, len(keys))
	for _, k := range keys {
		var r domain.Requirement
		if json.Unmarshal([]byte(k), &r) == nil && requirementKey(r) == k {
			out = append(out, r)
		}
	}
	return out, nil
}

// Claim says which job a runner takes and how long its lease lasts.
type Claim struct {
	RunnerID string
	Token    string
	Expires  time.Time
	// Any takes a job of any requirement; otherwise only jobs requiring
	// one of Requires are taken.
	Any      bool
	Requires []domain.Requirement
	// Owner, when not zero, is the user RunnerID must be registered to
	// (a runner token acts only as its own runners). The claim checks
	// it, records the poll (runners.last_seen) and takes nothing for a
	// draining runner, in the same statement: ErrRunnerUnknown,
	// ErrRunnerDraining. Zero (in-process runners) checks nothing.
	Owner int64
}

// Errors of a claim with an Owner.
var (
	// ErrRunnerUnknown: the runner is not registered to the claim's owner (ENOTFOUND).
	ErrRunnerUnknown error = &domain.Error{Code: domain.ENOTFOUND, Message: "the runner is not registered with this token; register first"}
	// ErrRunnerDraining: the runner drains; it gets no new job.
	ErrRunnerDraining = errors.New("the runner is draining")
)

// Claimed is a leased job and the notebook it runs.
type Claimed struct {
	Job     domain.Job
	Payload []byte
}

// leased is the fence of every write on a leased job.
func leased(tx *gorm.DB, id int64, token string) *gorm.DB {
	return tx.Model(&jobRow{}).Where("id = ? AND lease_token = ? AND state = ?", id, token, domain.JobLeased)
}

// ExtendLease moves a leased job's lease expiry to expires. When the lease
// no longer holds, canceled reports that the job was canceled (the runner
// should stop); otherwise the error wraps domain.ErrLeaseLost.
func (db *DB) ExtendLease(ctx context.Context, id int64, token string, expires time.Time) (canceled bool, err error) {
	g := db.gorm.WithContext(ctx)
	res := leased(g, id, token).Updates(map[string]any{"lease_expires_at": expires, "updated_at": db.Now()})
	if res.Error != nil {
		return false, fmt.Errorf("heartbeat job %d: %w", id, translate(res.Error))
	}
	if res.RowsAffected == 1 {
		return false, nil
	}
	var row jobRow
	if err := g.Where("id = ? AND lease_token = ?", id, token).Take(&row).Error; err == nil && row.State == domain.JobCanceled {
		return true, nil
	}
	return false, fmt.Errorf("heartbeat job %d: %w", id, domain.ErrLeaseLost)
}

// CompleteJob marks a job that token leases succeeded, in tx. If the
// lease no longer holds nothing is written and the error wraps
// domain.ErrLeaseLost, so the caller's writes in tx roll back with it.
func (tx *Tx) CompleteJob(id int64, token string) error {
	res := leased(tx.g, id, token).Updates(map[string]any{"state": domain.JobSucceeded, "lease_expires_at": nil, "updated_at": tx.db.Now()})
	if res.Error != nil {
		return fmt.Errorf("complete job %d: %w", id, res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("complete job %d: %w", id, domain.ErrLeaseLost)
	}
	return nil
}

// LeasedJob reads a job that token still leases, or wraps domain.ErrLeaseLost.
func (tx *Tx) LeasedJob(id int64, token string) (domain.Job, error) {
	var row jobRow
	err := tx.g.Where("id = ? AND lease_token = ? AND state = ?", id, token, domain.JobLeased).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Job{}, fmt.Errorf("job %d: %w", id, domain.ErrLeaseLost)
	}
	if err != nil {
		return domain.Job{}, fmt.Errorf("read job %d: %w", id, translate(err))
	}
	return row.job(), nil
}

// Fence names the lease a transition acts on. A reaper sets ExpiredBefore:
// the transition then also requires the lease to have expired before it,
// so a lease a heartbeat extended after the reaper read it is left alone.
type Fence struct {
	ID            int64
	Token         string
	ExpiredBefore time.Time
}

// fenced is the one-statement compare-and-swap of a transition:
// WHERE id=? AND lease_token=? AND state='leased' [AND lease_expires_at < ?].
func (f Fence) fenced(tx *gorm.DB) *gorm.DB {
	q := leased(tx, f.ID, f.Token)
	if !f.ExpiredBefore.IsZero() {
		q = q.Where("lease_expires_at < ?", f.ExpiredBefore)
	}
	return q
}

// RequeueJob returns a leased job to the queue, runnable from notBefore,
// and its submission to queued. The error wraps domain.ErrLeaseLost when
// the fence no longer holds.
func (tx *Tx) RequeueJob(f Fence, submissionID, reason string, notBefore time.Time) error {
	res := f.fenced(tx.g).Updates(map[string]any{"state": domain.JobQueued, "lease_token": "", "runner_id": "",
		"lease_expires_at": nil, "last_error": reason, "not_before": notBefore, "updated_at": tx.db.Now()})
	if res.Error != nil {
		return fmt.Errorf("requeue job %d: %w", f.ID, translate(res.Error))
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("requeue job %d: %w", f.ID, domain.ErrLeaseLost)
	}
	if submissionID != "" {
		return tx.db.markQueued(tx.g, submissionID)
	}
	return nil
}

// FailJob fails a leased job for good with message, and its submission
// too. The error wraps domain.ErrLeaseLost when the fence no longer holds.
func (tx *Tx) FailJob(f Fence, submissionID, message string) error {
	res := f.fenced(tx.g).Updates(map[string]any{"state": domain.JobFailed, "lease_token": "", "lease_expires_at": nil,
		"last_error": message, "updated_at": tx.db.Now()})
	if res.Error != nil {
		return fmt.Errorf("fail job %d: %w", f.ID, translate(res.Error))
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("fail job %d: %w", f.ID, domain.ErrLeaseLost)
	}
	if submissionID == "" {
		return nil
	}
	if err := tx.db.markFailed(tx.g, submissionID, message); err != nil {
		return err
	}
	return tx.db.addEvent(tx.g, domain.EventFailed, submissionID, map[string]any{"message": Printable(message)})
}

// ReleaseJob hands a leased job back to the queue without counting the
// attempt, and its submission to queued.
func (db *DB) ReleaseJob(ctx context.Context, id int64, token string) error {
	return db.InTx(ctx, func(tx *Tx) error {
		res := leased(tx.g, id, token).Updates(map[string]any{"state": domain.JobQueued, "lease_token": "", "runner_id": "",
			"lease_expires_at": nil, "attempt": gorm.Expr("attempt - 1"), "updated_at": db.Now()})
		if res.Error != nil {
			return fmt.Errorf("release job %d: %w", id, res.Error)
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("release job %d: %w", id, domain.ErrLeaseLost)
		}
		var row jobRow
		if err := tx.g.Where("id = ?", id).Take(&row).Error; err != nil {
			return fmt.Errorf("release job %d: %w", id, err)
		}
		if row.SubmissionID != nil {
			return db.markQueued(tx.g, *row.SubmissionID)
		}
		return nil
	})
}

// CancelJob cancels a queued or leased job: its runner learns it at the
// next heartbeat and stops, and its result, if any, is refused (the lease
// no longer holds). The job's submission fails with reason. A job in
// another state is ECONFLICT; a missing one ENOTFOUND.
func (db *DB) CancelJob(ctx context.Context, id int64, reason string) (domain.Job, error) {
	var job domain.Job
	err := db.InTx(ctx, func(tx *Tx) error {
		res := tx.g.Model(&jobRow{}).Where("id = ? AND state IN ?", id, []string{domain.JobQueued, domain.JobLeased}).
			Updates(map[string]any{"state": domain.JobCanceled, "lease_expires_at": nil, "last_error": Printable(reason), "updated_at": db.Now()})
		if res.Error != nil {
			return fmt.Errorf("cancel job %d: %w", id, res.Error)
		}
		var row jobRow
		if err := tx.g.Where("id = ?", id).Take(&row).Error; err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		job = row.job()
		if res.RowsAffected != 1 {
			return domain.Errorf(domain.ECONFLICT, "job %d is %s; only a queued or running job can be canceled", id, row.State)
		}
		if job.SubmissionID == "" {
			return nil
		}
		if err := db.markFailed(tx.g, job.SubmissionID, reason); err != nil {
			return err
		}
		return db.addEvent(tx.g, domain.EventFailed, job.SubmissionID, map[string]any{"message": Printable(reason), "canceled": true})
	})
	return job, err
}

// ExpiredLeases returns up to limit leased jobs whose lease expired before now.
func (db *DB) ExpiredLeases(ctx context.Context, now time.Time, limit int) ([]domain.Job, error) {
	var rows []jobRow
	if err := db.gorm.WithContext(ctx).Where("state = ? AND lease_expires_at < ?", domain.JobLeased, now).
		Order("id").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("find expired leases: %w", translate(err))
	}
	return jobs(rows), nil
}

// JobDepth counts jobs per state.
func (db *DB) JobDepth(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		State string
		N     int64
	}
	if err := db.gorm.WithContext(ctx).Model(&jobRow{}).Select("state, count(*) AS n").Group("state").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count jobs: %w", translate(err))
	}
	out := map[string]int64{}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// Job reads one job; a missing one is ENOTFOUND.
func (db *DB) Job(ctx context.Context, id int64) (domain.Job, error) {
	var row jobRow
	if err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.Job{}, fmt.Errorf("read job %d: %w", id, translate(err))
	}
	return row.job(), nil
}

// PendingJobs lists queued and leased jobs in claim order, at most limit.
func (db *DB) PendingJobs(ctx context.Context, limit int) ([]domain.Job, error) {
	var rows []jobRow
	err := db.gorm.WithContext(ctx).Where("state IN ?", []string{domain.JobQueued, domain.JobLeased}).
		Order("priority DESC, turn, id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list pending jobs: %w", translate(err))
	}
	return jobs(rows), nil
}

func jobs(rows []jobRow) []domain.Job {
	out := make([]domain.Job, len(rows))
	for i, r := range rows {
		out[i] = r.job()
	}
	return out
}
