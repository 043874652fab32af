package policy

import (
	"context"
	"fmt"
	"sort"
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
	CohortBySlug(ctx context.Context, slug string) (domain.Cohort, error)
	Cohorts(ctx context.Context) ([]domain.Cohort, error)
	CohortsOf(ctx context.Context, userID int64) ([]domain.Membership, error)
}

// Scope is u's staff scope, narrowed to the cohort slug when given (""
// for every cohort u sees): an admin sees every cohort, an instructor the
// cohorts they are an instructor member of, anyone else none. A slug u
// does not see is EINVALID, worded as for a cohort that does not exist.
func (p *Service) Scope(ctx context.Context, u domain.User, slug string) (domain.Scope, error) {
	var sc domain.Scope
	switch {
	case !u.Role.CanSeeAll():
		sc = domain.Scope{Cohorts: []int64{}}
	case p.Scopes == nil:
		sc = domain.Scope{All: true}
	default:
		var err error
		if sc, err = p.Scopes.StaffScope(ctx, u); err != nil {
			return domain.Scope{}, err
		}
	}
	if slug == "" {
		return sc, nil
	}
	if p.Scopes != nil {
		c, err := p.Scopes.CohortBySlug(ctx, slug)
		if err == nil && sc.Has(c.ID) {
			return sc.Narrow(c.ID), nil
		}
		if err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
			return domain.Scope{}, err
		}
	}
	return domain.Scope{}, &domain.Error{Code: domain.EINVALID, Message: "the request is not valid",
		Problems: []string{fmt.Sprintf("cohort=%q: no such cohort", slug)}}
}

// Scoped is ctx carrying u's scope (see Scope) when u is staff; a
// learner's ctx is returned as is (their reads are of their own).
func (p *Service) Scoped(ctx context.Context, u domain.User, slug string) (context.Context, error) {
	if !u.Role.CanSeeAll() {
		return ctx, nil
	}
	sc, err := p.Scope(ctx, u, slug)
	if err != nil {
		return ctx, err
	}
	return domain.WithScope(ctx, sc), nil
}

// scopeOf is the scope of u's reads: the one ctx carries, else (a caller
// that set none) computed here, so a staff read never goes unscoped.
func (p *Service) scopeOf(ctx context.Context, u domain.User) domain.Scope {
	if sc, ok := domain.ScopeOf(ctx); ok {
		return sc
	}
	sc, err := p.Scope(ctx, u, "")
	if err != nil {
		return domain.Scope{Cohorts: []int64{}}
	}
	return sc
}

// Cohorts lists the cohorts u sees as staff (every one for an admin),
// for the cohort picker and GET /api/v1/cohorts; a learner's are the
// cohorts they belong to.
func (p *Service) Cohorts(ctx context.Context, u domain.User) ([]domain.Cohort, error) {
	if p.Scopes == nil {
		return nil, nil
	}
	if u.Role == domain.RoleAdmin {
		return p.Scopes.Cohorts(ctx)
	}
	ms, err := p.Scopes.CohortsOf(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	var out []domain.Cohort
	for _, m := range ms {
		if !u.Role.CanSeeAll() || m.Role == domain.RoleInstructor {
			out = append(out, m.Cohort)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// inScope reports whether learnerID belongs to a cohort of u's scope.
func (p *Service) inScope(ctx context.Context, u domain.User, learnerID int64) bool {
	sc := p.scopeOf(ctx, u)
	if sc.All || p.Scopes == nil {
		return true
	}
	ms, err := p.Scopes.CohortsOf(ctx, learnerID)
	if err != nil {
		return false
	}
	for _, m := range ms {
		if sc.Has(m.Cohort.ID) {
			return true
		}
	}
	return false
}

// Placement decides which cohort a learner's next submission of an
// exercise is in (package store's *DB implements it).
type Placement interface {
	SubmissionCohort(ctx context.Context, userID int64, exerciseID, slug string) (int64, error)
}

// ForLearner is ex as it applies to u's next submission: with the
// deadline of the cohort it would be made in (ForCohort). It is ex when
// that cannot be told (no Placement, or a database error: the pages
// still show the exercise's own deadline).
func (p *Service) ForLearner(ctx context.Context, u domain.User, ex *exercise.Exercise) *exercise.Exercise {
	if p.Placement == nil || p.Deadlines == nil {
		return ex
	}
	cohort, err := p.Placement.SubmissionCohort(ctx, u.ID, ex.ID, "")
	if err != nil {
		return ex
	}
	own, err := ForCohort(ctx, p.Deadlines, ex, cohort)
	if err != nil {
		return ex
	}
	return own
}
