package lti

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/policy"
)

// AGS gradingProgress and activityProgress values npugrade sends.
const (
	FullyGraded   = "FullyGraded"
	PendingManual = "PendingManual"
	Submitted     = "Submitted"
)

// GradeStore is what the notifier reads and writes (store.DB).
type GradeStore interface {
	Submission(ctx context.Context, id string) (domain.Submission, error)
	LTIContextsOfCohort(ctx context.Context, cohortID int64) ([]domain.LTIContext, error)
	LTIPlatformByID(ctx context.Context, id int64) (domain.LTIPlatform, error)
	LTISubject(ctx context.Context, issuer string, userID int64) (string, error)
	OweLTIScore(ctx context.Context, s domain.LTIScore) (bool, error)
	CohortsOf(ctx context.Context, userID int64) ([]domain.Membership, error)
}

// Counter says which submission counts (policy.Service).
type Counter interface {
	Counted(ctx context.Context, ex *exercise.Exercise, userID int64) (policy.Counted, error)
}

// Grades is the outbox's notifier for grade passback: for a learner's
// graded, needs-manual or score-changed submission in a cohort linked to
// LMS courses it records, per course, the counted score the course's
// line item should show (store.OweLTIScore: idempotent, a new version
// only when the counted score changed). The Sender posts them. Checks
// and failures send nothing.
type Grades struct {
	DB      GradeStore
	Counter Counter
	Catalog *exercise.Catalog
	Log     *slog.Logger
}

// Notify implements events.Notifier.
func (g *Grades) Notify(ctx context.Context, e domain.Event) error {
	var subID string
	switch e.Kind {
	case domain.EventGraded:
		subID = e.Subject
	case domain.EventScoreChanged:
		var sc domain.ScoreChanged
		if err := json.Unmarshal(e.Payload, &sc); err != nil {
			return nil // not ours to mend: a malformed event is skipped, not retried forever
		}
		subID = sc.Submission
	default:
		return nil // checked, failed, regrade-applied (its score-changed events follow)
	}
	sub, err := g.DB.Submission(ctx, subID)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	if sub.Check {
		return nil
	}
	return g.owe(ctx, sub)
}

// owe records sub's learner's counted score in every course linked to
// sub's cohort where the learner has launched from.
func (g *Grades) owe(ctx context.Context, sub domain.Submission) error {
	contexts, err := g.DB.LTIContextsOfCohort(ctx, sub.CohortID)
	if err != nil || len(contexts) == 0 {
		return err
	}
	if learner, err := g.learnerOf(ctx, sub); err != nil || !learner {
		return err // an instructor trying the exercise has no grade in the course
	}
	ex, err := g.Catalog.Get(sub.ExerciseID)
	if err != nil {
		return nil // no longer served: nothing to count
	}
	c, err := g.Counter.Counted(ctx, ex, sub.UserID)
	if err != nil {
		return err
	}
	if c.Submission == nil {
		return nil
	}
	progress := FullyGraded
	if c.Submission.Status == domain.StatusNeedsManual {
		progress = PendingManual
	}
	for _, lc := range contexts {
		p, err := g.DB.LTIPlatformByID(ctx, lc.PlatformID)
		if err != nil {
			return err
		}
		subject, err := g.DB.LTISubject(ctx, p.Issuer, sub.UserID)
		if err != nil {
			return err
		}
		if subject == "" {
			continue // never launched from this platform: the LMS has no user to score
		}
		s := domain.LTIScore{ContextPK: lc.ID, ExerciseID: ex.ID, UserID: sub.UserID, Score: c.Submission.Score,
			MaxScore: c.Submission.MaxScore, Progress: progress, SubmissionID: c.Submission.ID}
		changed, err := g.DB.OweLTIScore(ctx, s)
		if err != nil {
			return fmt.Errorf("owe the score of %s: %w", sub.ID, err)
		}
		if changed && g.Log != nil {
			g.Log.Info("lti score owed", "context", lc.ContextID, "exercise", ex.ID, "learner", sub.UserID, "score", s.Score, "progress", progress)
		}
	}
	return nil
}

// learnerOf reports whether sub's author is a learner of sub's cohort.
func (g *Grades) learnerOf(ctx context.Context, sub domain.Submission) (bool, error) {
	ms, err := g.DB.CohortsOf(ctx, sub.UserID)
	if err != nil {
		return false, err
	}
	for _, m := range ms {
		if m.Cohort.ID == sub.CohortID {
			return m.Role == domain.RoleLearner, nil
		}
	}
	return false, nil
}
