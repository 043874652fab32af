package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
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
	var rows []store.JobRow
	err := q.db.Gorm.WithContext(ctx).Where("state IN ?", []string{domain.JobQueued, domain.JobLeased}).
		Order("priority DESC, id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list pending jobs: %w", err)
	}
	out := make([]Pending, len(rows))
	for i, r := range rows {
		p := Pending{ID: r.ID, Kind: r.Kind, ExerciseID: r.ExerciseID, Profile: r.Profile, State: r.State,
			Attempt: r.Attempt, MaxAttempts: r.MaxAttempts, RunnerID: r.RunnerID, LeaseExpiresAt: r.LeaseExpiresAt,
			NotBefore: r.NotBefore, LastError: r.LastError, CreatedAt: r.CreatedAt}
		if r.SubmissionID != nil {
			p.SubmissionID = *r.SubmissionID
		}
		_ = json.Unmarshal([]byte(r.Requires), &p.Requires)
		out[i] = p
	}
	return out, nil
}
