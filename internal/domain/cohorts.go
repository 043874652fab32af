package domain

import (
	"context"
	"encoding/json"
	"time"
)

// DefaultCohort is the slug of the cohort every existing learner,
// instructor and submission belongs to (migration 00029) and that new
// users join unless told otherwise.
const DefaultCohort = "default"

// Cohort is a course instance (torchair-2027-spring): it groups learners
// and staff, the exercises offered and their deadlines. Staff roles are
// per cohort.
type Cohort struct {
	ID        int64
	Slug      string
	Title     string
	CreatedAt time.Time
}

// CohortMember is a user's place in one cohort.
type CohortMember struct {
	UserID int64
	Name   string
	Role   Role // RoleLearner or RoleInstructor
}

// Membership is one cohort a user belongs to, with their role in it.
type Membership struct {
	Cohort Cohort
	Role   Role // RoleLearner or RoleInstructor
}

// CohortExercise is an exercise as one cohort offers it, with the
// cohort's own policy where it sets one (nil: the exercise's).
type CohortExercise struct {
	CohortID   int64
	ExerciseID string
	Deadline   *time.Time
	// LatePenalty is the cohort's late-penalty steps, as exercise.json's
	// late_penalty (JSON; nil: the exercise's; [] none).
	LatePenalty json.RawMessage
	// MaxSubmissions is the cohort's cap on graded submissions per
	// learner (nil: the exercise's; 0 none).
	MaxSubmissions *int
}

// Scope is which cohorts' submissions and learners a user may read as
// staff: All for an admin, else the cohorts they are an instructor of
// (none for a learner, who reads only their own). It is computed once per
// request from the user's memberships and passed to every staff read.
type Scope struct {
	All     bool
	Cohorts []int64
}

// Staff reports whether the scope reads anyone's submissions at all.
func (s Scope) Staff() bool { return s.All || len(s.Cohorts) > 0 }

// Has reports whether cohort id is within the scope.
func (s Scope) Has(id int64) bool {
	if s.All {
		return true
	}
	for _, c := range s.Cohorts {
		if c == id {
			return true
		}
	}
	return false
}

// Narrow returns the scope limited to cohort id (a picked cohort): the
// empty scope when id is outside it.
func (s Scope) Narrow(id int64) Scope {
	if !s.Has(id) {
		return Scope{Cohorts: []int64{}}
	}
	return Scope{Cohorts: []int64{id}}
}

// IDs is the restriction a read applies: nil for every cohort (All),
// else the cohort ids (empty: none).
func (s Scope) IDs() []int64 {
	if s.All {
		return nil
	}
	if s.Cohorts == nil {
		return []int64{}
	}
	return s.Cohorts
}

type scopeKey struct{}

// WithScope is ctx carrying a staff member's scope: the request's, set
// once by the HTTP layers when they authenticate a staff member, and
// read by every staff read below them (the store restricts its queries
// to it), so that no handler can forget it.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeOf is the scope ctx carries; ok is false when none was set (a
// learner's request, reading only their own, or a command line).
func ScopeOf(ctx context.Context) (s Scope, ok bool) {
	s, ok = ctx.Value(scopeKey{}).(Scope)
	return s, ok
}
