package accounts

// Cohorts manages course instances: an admin creates them, puts users in
// them as learners or instructors and offers exercises in them with their
// own deadlines. The command line (npugrade cohort) and the API both call
// it. Who sees which cohort is package policy's (Scope).

import (
	"context"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// CohortStore is what cohort management reads and writes (package
// store's *DB implements it).
type CohortStore interface {
	EnsureCohort(ctx context.Context, slug, title string) (domain.Cohort, error)
	CohortBySlug(ctx context.Context, slug string) (domain.Cohort, error)
	Cohorts(ctx context.Context) ([]domain.Cohort, error)
	AddCohortMember(ctx context.Context, cohortID, userID int64, role domain.Role) error
	RemoveCohortMember(ctx context.Context, cohortID, userID int64) error
	CohortMembers(ctx context.Context, cohortID int64) ([]domain.CohortMember, error)
	OfferExercise(ctx context.Context, o domain.CohortExercise) error
	UserByName(ctx context.Context, name string) (domain.User, error)
	Audit(ctx context.Context, actor domain.User, action, subject, detail string) error
}

// Cohorts is cohort management over one database.
type Cohorts struct {
	DB CohortStore
}

// Create creates cohort slug with title (an existing one is returned as
// it is).
func (s *Cohorts) Create(ctx context.Context, actor domain.User, slug, title string) (domain.Cohort, error) {
	c, err := s.DB.EnsureCohort(ctx, slug, title)
	if err != nil {
		return c, err
	}
	s.audit(ctx, actor, "cohort.create", slug, title)
	return c, nil
}

// Cohort finds cohort slug (ENOTFOUND, worded for people, when absent).
func (s *Cohorts) Cohort(ctx context.Context, slug string) (domain.Cohort, error) {
	c, err := s.DB.CohortBySlug(ctx, slug)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return c, domain.Errorf(domain.ENOTFOUND, "no cohort %q", slug)
	}
	return c, err
}

// SetMember makes the user named userName a member of cohort slug with
// role (learner or instructor; "" is learner). Admins and runner
// accounts are no cohort's members: an admin sees every cohort.
func (s *Cohorts) SetMember(ctx context.Context, actor domain.User, slug, userName string, role domain.Role) (domain.CohortMember, error) {
	if role == "" {
		role = domain.RoleLearner
	}
	if role != domain.RoleLearner && role != domain.RoleInstructor {
		return domain.CohortMember{}, domain.Errorf(domain.EINVALID, "role %q: a cohort member is a learner or an instructor", role)
	}
	c, err := s.Cohort(ctx, slug)
	if err != nil {
		return domain.CohortMember{}, err
	}
	u, err := s.DB.UserByName(ctx, userName)
	if err != nil {
		return domain.CohortMember{}, err
	}
	if u.Role != domain.RoleLearner && u.Role != domain.RoleInstructor {
		return domain.CohortMember{}, domain.Errorf(domain.EINVALID, "user %q is an %s account, not a learner or an instructor", u.Name, u.Role)
	}
	if role == domain.RoleInstructor && u.Role != domain.RoleInstructor {
		return domain.CohortMember{}, domain.Errorf(domain.EINVALID, "user %q is a learner: only an instructor account teaches a cohort", u.Name)
	}
	if err := s.DB.AddCohortMember(ctx, c.ID, u.ID, role); err != nil {
		return domain.CohortMember{}, err
	}
	s.audit(ctx, actor, "cohort.member", slug, fmt.Sprintf("%s as %s", u.Name, role))
	return domain.CohortMember{UserID: u.ID, Name: u.Name, Role: role}, nil
}

// RemoveMember takes the user named userName out of cohort slug.
func (s *Cohorts) RemoveMember(ctx context.Context, actor domain.User, slug, userName string) error {
	c, err := s.Cohort(ctx, slug)
	if err != nil {
		return err
	}
	u, err := s.DB.UserByName(ctx, userName)
	if err != nil {
		return err
	}
	if err := s.DB.RemoveCohortMember(ctx, c.ID, u.ID); err != nil {
		return err
	}
	s.audit(ctx, actor, "cohort.remove", slug, u.Name)
	return nil
}

// Offer offers exerciseID in cohort slug, due at deadline (nil: the
// exercise's own deadline).
func (s *Cohorts) Offer(ctx context.Context, actor domain.User, slug string, o domain.CohortExercise) error {
	c, err := s.Cohort(ctx, slug)
	if err != nil {
		return err
	}
	o.CohortID = c.ID
	if err := s.DB.OfferExercise(ctx, o); err != nil {
		return err
	}
	detail := o.ExerciseID
	if o.Deadline != nil {
		detail += " due " + o.Deadline.UTC().Format(time.RFC3339)
	}
	if o.LatePenalty != nil {
		detail += " late penalty " + string(o.LatePenalty)
	}
	if o.MaxSubmissions != nil {
		detail += fmt.Sprintf(" at most %d submissions", *o.MaxSubmissions)
	}
	s.audit(ctx, actor, "cohort.offer", slug, detail)
	return nil
}

// Members lists cohort slug's members by name.
func (s *Cohorts) Members(ctx context.Context, slug string) ([]domain.CohortMember, error) {
	c, err := s.Cohort(ctx, slug)
	if err != nil {
		return nil, err
	}
	return s.DB.CohortMembers(ctx, c.ID)
}

// audit records a change; the change stands when the log cannot be
// written (it is on the command line's or the API's reply).
func (s *Cohorts) audit(ctx context.Context, actor domain.User, action, subject, detail string) {
	by := actor
	if by.Name == "" {
		by.Name = "cli"
	}
	_ = s.DB.Audit(ctx, by, action, subject, detail)
}
