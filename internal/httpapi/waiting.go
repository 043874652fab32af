package httpapi

import (
	"context"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/fleet"
)

// waitingFor says what a queued submission waits for when no live runner
// can take it ("" otherwise, and for any other status): the learner
// sees why it is not graded yet instead of a spinner.
func (s *Server) waitingFor(ctx context.Context, sub domain.Submission, chinese bool) string {
	if sub.Status != domain.StatusQueued {
		return ""
	}
	ex, err := s.Catalog.Get(sub.ExerciseID)
	if err != nil {
		return ""
	}
	runners, err := s.DB.Runners(ctx, s.DB.Now().Add(-time.Minute))
	if err != nil {
		return ""
	}
	return fleet.WaitingFor(ex.Requires, runners, chinese)
}
