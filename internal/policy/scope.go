package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
)

// Deadlines reads cohorts' own policies for the exercises they offer
// (package store's *DB implements it).
type Deadlines interface {
	// CohortOffer is how cohortID offers exerciseID (nil: with the
	// exercise's own policy).
	CohortOffer(ctx context.Context, cohortID int64, exerciseID string) (*domain.CohortExercise, error)
}

// ForCohort is ex as cohortID offers it: with the cohort's own deadline,
// late penalty and cap on submissions where it sets them
// (cohort_exercises), which a learner's extension still moves. ex itself
// is not changed; a nil db or cohort 0 is ex.
func ForCohort(ctx context.Context, db Deadlines, ex *exercise.Exercise, cohortID int64) (*exercise.Exercise, error) {
	if db == nil || cohortID == 0 || ex == nil {
		return ex, nil
	}
	o, err := db.CohortOffer(ctx, cohortID, ex.ID)
	if err != nil || o == nil {
		return ex, err
	}
	own := *ex
	if o.Deadline != nil {
		own.Deadline = o.Deadline
	}
	if o.LatePenalty != nil {
		steps, err := CohortLatePenalty(o.LatePenalty)
		if err != nil {
			return ex, fmt.Errorf("cohort %d's late penalty of %s: %w", cohortID, ex.ID, err)
		}
		own.LatePenalty = steps
	}
	if o.MaxSubmissions != nil {
		own.MaxSubmissions = *o.MaxSubmissions
	}
	return &own, nil
}

// CohortLatePenalty reads a cohort's late-penalty steps (exercise.json's
// late_penalty form), every bad step named.
func CohortLatePenalty(raw json.RawMessage) ([]exercise.LateStep, error) {
	var steps []exercise.LateStep
	if err := json.Unmarshal(raw, &steps); err != nil {
		return nil, domain.Errorf(domain.EINVALID, "late penalty: want a list of {\"after\": \"24h\", \"multiplier\": 0.5}: %v", err)
	}
	var bad []string
	for i, st := range steps {
		if st.Multiplier < 0 || st.Multiplier > 1 || st.After < 0 {
			bad = append(bad, fmt.Sprintf("late penalty step %d: after must be >= 0 and multiplier in [0, 1]", i+1))
		}
	}
	if len(bad) > 0 {
		return nil, &domain.Error{Code: domain.EINVALID, Message: "the late penalty is not valid", Problems: bad}
	}
	if steps == nil {
		steps = []exercise.LateStep{}
	}
	return steps, nil
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
