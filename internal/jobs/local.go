package jobs

import (
	"context"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/runner"
)

// Local is the in-process runner's Source: the dispatcher called directly.
type Local struct {
	D        *Dispatcher
	RunnerID string
	Match    domain.Matcher
	Wait     time.Duration
}

var _ runner.Source = (*Local)(nil)

func (s *Local) wait() time.Duration {
	if s.Wait <= 0 {
		return 25 * time.Second
	}
	return s.Wait
}

// Claim implements runner.Source.
func (s *Local) Claim(ctx context.Context) (*domain.Lease, error) {
	_, _ = s.D.DB.TouchRunner(ctx, s.RunnerID) // last seen, for the fleet page
	return s.D.Claim(ctx, s.RunnerID, s.Match, s.wait())
}

// Heartbeat implements runner.Source.
func (s *Local) Heartbeat(ctx context.Context, l *domain.Lease) (bool, error) {
	c, err := s.D.Heartbeat(ctx, l.JobID, l.Token)
	return c, err
}

// Complete implements runner.Source.
func (s *Local) Complete(ctx context.Context, l *domain.Lease, res domain.ExecutionResult) error {
	return s.D.Complete(ctx, l.JobID, l.Token, s.RunnerID, res)
}

// Fail implements runner.Source.
func (s *Local) Fail(ctx context.Context, l *domain.Lease, reason string) error {
	return s.D.Fail(ctx, l.JobID, l.Token, reason)
}

// Release implements runner.Source.
func (s *Local) Release(ctx context.Context, l *domain.Lease) error {
	return s.D.Release(ctx, l.JobID, l.Token)
}
