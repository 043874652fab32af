package jobs

import (
	"context"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// Pending is a job that is not finished: queued (waiting for a runner
// that satisfies its requirement) or leased.
type Pending struct {
	ID             int64
	Kind           string
	ExerciseID     string
	SubmissionID   string
	Profile        string
	State          string
	Requires       domain.Requirement
	Attempt        int
	MaxAttempts    int
	RunnerID       string
	LeaseExpiresAt *time.Time
	NotBefore      time.Time
	LastError      string
	CreatedAt      time.Time
}

// Pending lists queued and leased jobs in claim order, at most limit.
func (q *Queue) Pending(ctx context.Context, limit int) ([]Pending, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	jobs, err := q.db.PendingJobs(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Pending, len(jobs))
	for i, r := range jobs {
		out[i] = Pending{ID: r.ID, Kind: r.Kind, ExerciseID: r.ExerciseID, SubmissionID: r.SubmissionID, Profile: r.Profile,
			State: r.State, Requires: r.Requires, Attempt: r.Attempt, MaxAttempts: r.MaxAttempts, RunnerID: r.RunnerID,
			LeaseExpiresAt: r.LeaseExpiresAt, NotBefore: r.NotBefore, LastError: r.LastError, CreatedAt: r.CreatedAt}
	}
	return out, nil
}
