package grade

// Extensions grant and revoke per-learner extensions:
// one learner's deadline for one exercise, and optionally their own
// late-penalty schedule, without touching the exercise. Grading reads the
// extension in force (Submissions); granting or revoking one
// rescores the learner's graded submissions of the exercise at once, the
// old scores kept in the score history, so the learner's pages and the
// gradebook show the new standing. The API and the pages both call this
// service and both write the audit log through it.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
)

// Audit actions.
const (
	AuditGranted = "extension-granted"
	AuditRevoked = "extension-revoked"
)

// ExtensionStore is what extensions read and write of the database.
type ExtensionStore interface {
	ActiveExtension(ctx context.Context, exerciseID string, userID int64) (*domain.Extension, error)
	Extensions(ctx context.Context, exerciseID string, revoked bool) ([]domain.Extension, error)
	InTx(ctx context.Context, fn func(tx *store.Tx) error) error
	UserByName(ctx context.Context, name string) (domain.User, error)
	// UserInScope: staff reach the learners of their cohorts only.
	UserInScope(ctx context.Context, userID int64) (bool, error)
}

// learnerByName finds a learner the request's staff scope reaches;
// another cohort's is not found, exactly like a missing one.
func (s *Extensions) learnerByName(ctx context.Context, name string) (domain.User, error) {
	u, err := s.DB.UserByName(ctx, name)
	if err != nil {
		return u, err
	}
	ok, err := s.DB.UserInScope(ctx, u.ID)
	if err != nil {
		return domain.User{}, err
	}
	if !ok {
		return domain.User{}, domain.Errorf(domain.ENOTFOUND, "user %q not found", name)
	}
	return u, nil
}

// Extensions grants, lists and revokes extensions over one database and catalog.
type Extensions struct {
	DB      ExtensionStore
	Catalog *exercise.Catalog
}

// ExtensionRequest is a grant: POST /api/v1/exercises/{id}/extensions.
type ExtensionRequest struct {
	// Learner is the learner's user name.
	Learner string `json:"learner"`
	// Deadline is RFC 3339 ("2026-12-24T18:00:00+08:00"); the page's
	// "2026-12-24T18:00" (no zone) is read as UTC.
	Deadline string `json:"deadline"`
	// LatePenalty replaces the exercise's schedule after the new deadline
	// (absent: the exercise's; []: none).
	LatePenalty *[]exercise.LateStep `json:"late_penalty,omitempty"`
}

// ExtensionResult is a grant or revocation with how many scores it changed.
type ExtensionResult struct {
	domain.Extension
	Rescored int `json:"rescored"`
}

// Grant validates req (every problem at once) and makes it the learner's
// active extension for exercise exerciseID, replacing any earlier one.
func (s *Extensions) Grant(ctx context.Context, actor domain.User, exerciseID string, req ExtensionRequest) (ExtensionResult, error) {
	ex, err := s.Catalog.Get(exerciseID)
	if err != nil {
		return ExtensionResult{}, err
	}
	learner, deadline, problems := s.check(ctx, ex, req)
	if len(problems) > 0 {
		return ExtensionResult{}, &domain.Error{Code: domain.EINVALID, Message: "the extension is invalid", Problems: problems}
	}
	e := domain.Extension{ExerciseID: ex.ID, UserID: learner.ID, Learner: learner.Name, Deadline: deadline, GrantedBy: actor.Name}
	if req.LatePenalty != nil {
		raw, err := json.Marshal(*req.LatePenalty)
		if err != nil {
			return ExtensionResult{}, fmt.Errorf("encode late penalty: %w", err)
		}
		e.LatePenalty = raw
	}
	if e.GrantedBy == "" {
		e.GrantedBy = "cli"
	}
	var out ExtensionResult
	err = s.DB.InTx(ctx, func(tx *store.Tx) error {
		if out.Extension, err = tx.GrantExtension(e); err != nil {
			return err
		}
		ext, err := ExtensionPolicy(&out.Extension)
		if err != nil {
			return err
		}
		if out.Rescored, err = rescore(tx, ex, learner.ID, ext, actor); err != nil {
			return err
		}
		detail := "deadline " + deadline.Format(time.RFC3339)
		if e.LatePenalty != nil {
			detail += ", late penalty " + string(e.LatePenalty)
		}
		return tx.Audit(actor, AuditGranted, learner.Name+" on "+ex.ID, fmt.Sprintf("%s; %d score(s) changed", detail, out.Rescored))
	})
	if err != nil {
		return ExtensionResult{}, err
	}
	return out, nil
}

// Revoke ends learner's active extension for exerciseID (ENOTFOUND when
// there is none) and rescores under the exercise's own policy.
func (s *Extensions) Revoke(ctx context.Context, actor domain.User, exerciseID, learnerName string) (ExtensionResult, error) {
	ex, err := s.Catalog.Get(exerciseID)
	if err != nil {
		return ExtensionResult{}, err
	}
	learner, err := s.learnerByName(ctx, learnerName)
	if err != nil {
		return ExtensionResult{}, err
	}
	by := actor.Name
	if by == "" {
		by = "cli"
	}
	var out ExtensionResult
	err = s.DB.InTx(ctx, func(tx *store.Tx) error {
		if out.Extension, err = tx.RevokeExtension(ex.ID, learner.ID, by); err != nil {
			return err
		}
		if out.Rescored, err = rescore(tx, ex, learner.ID, nil, actor); err != nil {
			return err
		}
		return tx.Audit(actor, AuditRevoked, learner.Name+" on "+ex.ID, fmt.Sprintf("extension %d; %d score(s) changed", out.ID, out.Rescored))
	})
	if err != nil {
		return ExtensionResult{}, err
	}
	out.Learner = learner.Name
	return out, nil
}

// List returns an exercise's extensions (with revoked: also past ones).
func (s *Extensions) List(ctx context.Context, exerciseID string, revoked bool) ([]domain.Extension, error) {
	if _, err := s.Catalog.Get(exerciseID); err != nil {
		return nil, err
	}
	return s.DB.Extensions(ctx, exerciseID, revoked)
}

// Policy is ex's policy as it applies to user userID, with their active
// extension (nil when none).
func (s *Extensions) Policy(ctx context.Context, ex *exercise.Exercise, userID int64) (exercise.Policy, *domain.Extension, error) {
	e, err := s.DB.ActiveExtension(ctx, ex.ID, userID)
	if err != nil {
		return ex.Policy, nil, err
	}
	ext, err := ExtensionPolicy(e)
	if err != nil {
		return ex.Policy, nil, err
	}
	return ex.Policy.Extended(ext), e, nil
}

func (s *Extensions) check(ctx context.Context, ex *exercise.Exercise, req ExtensionRequest) (domain.User, time.Time, []string) {
	var problems []string
	var learner domain.User
	if name := strings.TrimSpace(req.Learner); name == "" {
		problems = append(problems, "learner: the learner's user name is required")
	} else if u, err := s.learnerByName(ctx, name); err != nil {
		problems = append(problems, fmt.Sprintf("learner: %s", domain.ErrorMessage(err)))
	} else if u.Role != domain.RoleLearner {
		problems = append(problems, fmt.Sprintf("learner: %q is a %s, not a learner", u.Name, u.Role))
	} else {
		learner = u
	}
	deadline, err := ParseDeadline(req.Deadline)
	switch {
	case err != nil:
		problems = append(problems, "deadline: "+err.Error())
	case ex.Deadline == nil:
		problems = append(problems, fmt.Sprintf("deadline: exercise %s has no deadline to extend", ex.ID))
	case !deadline.After(*ex.Deadline):
		problems = append(problems, fmt.Sprintf("deadline: %s is not after the exercise's deadline %s",
			deadline.Format(time.RFC3339), ex.Deadline.UTC().Format(time.RFC3339)))
	}
	if req.LatePenalty != nil {
		for i, st := range *req.LatePenalty {
			if st.Multiplier < 0 || st.Multiplier > 1 || st.After < 0 {
				problems = append(problems, fmt.Sprintf("late_penalty[%d]: after must be >= 0 and multiplier in [0, 1]", i))
			}
		}
		if len(*req.LatePenalty) > 50 {
			problems = append(problems, "late_penalty: at most 50 steps")
		}
	}
	return learner, deadline, problems
}

// ParseDeadline reads RFC 3339, or a zone-less "2006-01-02T15:04" as UTC
// (what an HTML datetime-local field sends).
func ParseDeadline(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("a deadline is required (RFC 3339, e.g. 2026-12-24T18:00:00Z)")
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date and time (RFC 3339, e.g. 2026-12-24T18:00:00Z)", s)
}

// rescore re-applies the late penalty of ex under ext to the learner's
// scored submissions (scoring computes each score, the store writes the
// ones that changed) and returns how many changed.
func rescore(tx *store.Tx, ex *exercise.Exercise, userID int64, ext *exercise.Extension, actor domain.User) (int, error) {
	p := ex.Policy.Extended(ext)
	subs, err := tx.ScoredSubmissions(ex.ID, userID)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, sub := range subs {
		m := p.LateMultiplier(sub.CreatedAt)
		score, msg := scoring.Points(sub.Cells)*m, scoring.LateNote(sub.Message, m)
		if math.Abs(score-sub.Score) < 1e-9 && msg == sub.Message {
			continue
		}
		if err := tx.ChangeScore(sub.ID, store.ScoreChange{Reason: domain.ScoreReasonExtension, Actor: actor,
			Score: score, Message: msg, KeepHistory: true}); err != nil {
			return changed, err
		}
		changed++
	}
	return changed, nil
}
