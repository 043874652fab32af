package policy

import (
	"context"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
)

// Deadlines reads cohorts' own deadlines (package store's *DB implements
// it).
type Deadlines interface {
	// CohortDeadline is cohortID's own deadline for exerciseID (nil: the
	// exercise's).
	CohortDeadline(ctx context.Context, cohortID int64, exerciseID string) (*time.Time, error)
}

// ForCohort is ex as cohortID offers it: with the cohort's own deadline
// when it sets one (cohort_exercises.deadline), which a learner's
// extension still moves. ex itself is not changed; a nil db or cohort 0
// is ex.
func ForCohort(ctx context.Context, db Deadlines, ex *exercise.Exercise, cohortID int64) (*exercise.Exercise, error) {
	if db == nil || cohortID == 0 || ex == nil {
		return ex, nil
	}
	d, err := db.CohortDeadline(ctx, cohortID, ex.ID)
	if err != nil || d == nil {
		return ex, err
	}
	own := *ex
	own.Deadline = d
	return &own, nil
}

// Scopes computes a user's staff scope (package store's *DB implements
// it).
type Scopes interface {
	StaffScope(ctx context.Context, u domain.User) (domain.Scope, error)
}
