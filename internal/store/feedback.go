package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/domain"
)

// Feedback releases and regrade requests (migration 00013).

type feedbackReleaseRow struct {
	ID           int64
	ExerciseID   string
	UserID       int64
	ReleasedByID *int64
	ReleasedBy   string
	ReleasedAt   time.Time
}

func (feedbackReleaseRow) TableName() string { return "feedback_releases" }

type cohortReleaseRow struct {
	ExerciseID   string `gorm:"primaryKey"`
	CohortID     int64  `gorm:"primaryKey"`
	ReleasedByID *int64
	ReleasedBy   string
	ReleasedAt   time.Time
}

func (cohortReleaseRow) TableName() string { return "cohort_feedback_releases" }

// ReleaseFeedback releases an exercise's feedback to one learner (userID)
// or to everyone (0), with its audit entry, in one transaction. Releasing
// again keeps the first release. Under a staff scope that is not every
// cohort, "everyone" is everyone in the scope's cohorts: one release per
// cohort.
func (db *DB) ReleaseFeedback(ctx context.Context, exerciseID string, userID int64, learner string, actor domain.User) (domain.FeedbackRelease, error) {
	if sc, ok := domain.ScopeOf(ctx); ok && !sc.All && userID == 0 {
		return db.releaseToCohorts(ctx, exerciseID, sc.Cohorts, actor)
	}
	row := feedbackReleaseRow{ExerciseID: exerciseID, UserID: userID, ReleasedBy: actor.Name, ReleasedAt: db.Now()}
	if actor.ID != 0 {
		id := actor.ID
		row.ReleasedByID = &id
	}
	if row.ReleasedBy == "" {
		row.ReleasedBy = "cli"
	}
	subject, detail := exerciseID+" to everyone", "all learners"
	if userID != 0 {
		subject, detail = exerciseID+" to "+learner, "learner "+learner
	}
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
			return fmt.Errorf("release feedback of %s: %w", exerciseID, err)
		}
		return db.audit(tx, actor, domain.AuditFeedbackRelease, subject, detail)
	})
	if err != nil {
		return domain.FeedbackRelease{}, translate(err)
	}
	var got feedbackReleaseRow
	if err := db.gorm.WithContext(ctx).Where("exercise_id = ? AND user_id = ?", exerciseID, userID).Take(&got).Error; err != nil {
		return domain.FeedbackRelease{}, fmt.Errorf("read feedback release of %s: %w", exerciseID, translate(err))
	}
	return domain.FeedbackRelease{Exercise: exerciseID, Learner: learner, All: userID == 0, ReleasedBy: got.ReleasedBy, ReleasedAt: got.ReleasedAt}, nil
}

// releaseToCohorts releases an exercise's feedback to everyone in each
// of cohorts, with one audit entry.
func (db *DB) releaseToCohorts(ctx context.Context, exerciseID string, cohorts []int64, actor domain.User) (domain.FeedbackRelease, error) {
	if len(cohorts) == 0 {
		return domain.FeedbackRelease{}, domain.Errorf(domain.EFORBIDDEN, "you teach no cohort to release feedback to")
	}
	by := actor.Name
	if by == "" {
		by = "cli"
	}
	var byID *int64
	if actor.ID != 0 {
		id := actor.ID
		byID = &id
	}
	var slugs []string
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, c := range cohorts {
			row := cohortReleaseRow{ExerciseID: exerciseID, CohortID: c, ReleasedByID: byID, ReleasedBy: by, ReleasedAt: db.Now()}
			if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
				return fmt.Errorf("release feedback of %s to cohort %d: %w", exerciseID, c, err)
			}
		}
		if err := tx.Model(&cohortRow{}).Where("id IN ?", cohorts).Order("slug").Pluck("slug", &slugs).Error; err != nil {
			return fmt.Errorf("name the cohorts of a release: %w", err)
		}
		return db.audit(tx, actor, domain.AuditFeedbackRelease, exerciseID+" to everyone in "+strings.Join(slugs, ", "), "cohorts "+strings.Join(slugs, ", "))
	})
	if err != nil {
		return domain.FeedbackRelease{}, translate(err)
	}
	return domain.FeedbackRelease{Exercise: exerciseID, All: true, Cohort: strings.Join(slugs, ", "), ReleasedBy: by, ReleasedAt: db.Now()}, nil
}

// FeedbackReleased reports whether an exercise's feedback is released to
// userID, whose submission is in cohortID: to them, to everyone in that
// cohort, or to everyone.
func (db *DB) FeedbackReleased(ctx context.Context, exerciseID string, userID, cohortID int64) (bool, error) {
	var n, m int64
	g := db.gorm.WithContext(ctx)
	err := g.Model(&feedbackReleaseRow{}).Where("exercise_id = ? AND user_id IN ?", exerciseID, []int64{0, userID}).Count(&n).Error
	if err == nil && n == 0 {
		err = g.Model(&cohortReleaseRow{}).Where("exercise_id = ? AND cohort_id = ?", exerciseID, cohortID).Count(&m).Error
	}
	if err != nil {
		return false, fmt.Errorf("read feedback releases of %s: %w", exerciseID, translate(err))
	}
	return n+m > 0, nil
}

// FeedbackReleases lists an exercise's releases, oldest first.
func (db *DB) FeedbackReleases(ctx context.Context, exerciseID string) ([]domain.FeedbackRelease, error) {
	var rows []feedbackReleaseRow
	q := db.gorm.WithContext(ctx).Where("exercise_id = ?", exerciseID)
	if cond, args := usersInScope(ctx, "user_id"); args != nil || cond != "1 = 1" {
		q = q.Where("user_id = 0 OR "+cond, args...) // a release to everyone is everyone's
	}
	if err := q.Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read feedback releases of %s: %w", exerciseID, translate(err))
	}
	out := make([]domain.FeedbackRelease, len(rows))
	for i, r := range rows {
		out[i] = domain.FeedbackRelease{Exercise: r.ExerciseID, All: r.UserID == 0, ReleasedBy: r.ReleasedBy, ReleasedAt: r.ReleasedAt}
		if r.UserID != 0 {
			var u userRow
			_ = db.gorm.WithContext(ctx).Where("id = ?", r.UserID).Take(&u).Error // a name is cosmetic
			out[i].Learner = u.Name
		}
	}
	// Releases to a cohort's everyone, of the cohorts in scope.
	var crs []struct {
		ExerciseID string
		ReleasedBy string
		ReleasedAt time.Time
		Slug       string
	}
	cond, args := inScope(ctx, "r.cohort_id")
	err := db.gorm.WithContext(ctx).Table("cohort_feedback_releases r").Select("r.exercise_id, r.released_by, r.released_at, c.slug").
		Joins("JOIN cohorts c ON c.id = r.cohort_id").Where("r.exercise_id = ?", exerciseID).Where(cond, args...).
		Order("r.released_at, c.slug").Scan(&crs).Error
	if err != nil {
		return nil, fmt.Errorf("read cohort feedback releases of %s: %w", exerciseID, translate(err))
	}
	for _, r := range crs {
		out = append(out, domain.FeedbackRelease{Exercise: r.ExerciseID, All: true, Cohort: r.Slug, ReleasedBy: r.ReleasedBy, ReleasedAt: r.ReleasedAt})
	}
	return out, nil
}

type regradeRequestRow struct {
	ID             int64
	SubmissionID   string
	CellID         string
	UserID         int64
	Message        lossless
	State          string
	Answer         lossless
	AnsweredByID   *int64
	AnsweredBy     string
	AnsweredAt     *time.Time
	OverridePoints *float64
	OverrideReason lossless
	CreatedAt      time.Time
}

func (regradeRequestRow) TableName() string { return "regrade_requests" }

func (r regradeRequestRow) request(learner, exerciseID string) domain.RegradeRequest {
	return domain.RegradeRequest{ID: r.ID, SubmissionID: r.SubmissionID, Exercise: exerciseID, CellID: r.CellID, Learner: learner,
		Message: string(r.Message), State: r.State, Answer: string(r.Answer), AnsweredBy: r.AnsweredBy, AnsweredAt: r.AnsweredAt,
		OverridePoints: r.OverridePoints, OverrideReason: string(r.OverrideReason), CreatedAt: r.CreatedAt}
}

// CreateRegradeRequest records a learner's question about one cell, with
// its audit entry, in one transaction.
func (db *DB) CreateRegradeRequest(ctx context.Context, req domain.RegradeRequest, learner domain.User) (domain.RegradeRequest, error) {
	row := regradeRequestRow{SubmissionID: req.SubmissionID, CellID: req.CellID, UserID: learner.ID, Message: lossless(req.Message),
		State: domain.RegradeRequestOpen, CreatedAt: db.Now()}
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("record regrade request on %s: %w", req.SubmissionID, err)
		}
		return db.audit(tx, learner, domain.AuditRegradeRequest, "submission "+req.SubmissionID+" cell "+req.CellID,
			fmt.Sprintf("request %d", row.ID))
	})
	if err != nil {
		return domain.RegradeRequest{}, translate(err)
	}
	return db.RegradeRequest(ctx, row.ID)
}

// RegradeRequest returns one request.
func (db *DB) RegradeRequest(ctx context.Context, id int64) (domain.RegradeRequest, error) {
	var row regradeRequestRow
	q := db.gorm.WithContext(ctx).Where("id = ?", id)
	if cond, args := inScope(ctx, "cohort_id"); args != nil || cond != "1 = 1" {
		q = q.Where("submission_id IN (SELECT id FROM submissions WHERE "+cond+")", args...)
	}
	err := q.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.RegradeRequest{}, domain.Errorf(domain.ENOTFOUND, "regrade request %d not found", id)
	}
	if err != nil {
		return domain.RegradeRequest{}, fmt.Errorf("read regrade request %d: %w", id, translate(err))
	}
	out, err := db.withRequestNames(ctx, []regradeRequestRow{row})
	if err != nil {
		return domain.RegradeRequest{}, err
	}
	return out[0], nil
}

// RegradeRequestFilter selects requests: of one submission, one learner,
// and/or in one state.

// RegradeRequests lists requests, oldest first (the queue's order), at most 500.
func (db *DB) RegradeRequests(ctx context.Context, f domain.RegradeRequestFilter) ([]domain.RegradeRequest, error) {
	q := db.gorm.WithContext(ctx).Order("created_at, id").Limit(500)
	if f.SubmissionID != "" {
		q = q.Where("submission_id = ?", f.SubmissionID)
	}
	if f.UserID != 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	if f.State != "" {
		q = q.Where("state = ?", f.State)
	}
	if cond, args := inScope(ctx, "cohort_id"); args != nil || cond != "1 = 1" {
		q = q.Where("submission_id IN (SELECT id FROM submissions WHERE "+cond+")", args...)
	}
	var rows []regradeRequestRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list regrade requests: %w", translate(err))
	}
	return db.withRequestNames(ctx, rows)
}

func (db *DB) withRequestNames(ctx context.Context, rows []regradeRequestRow) ([]domain.RegradeRequest, error) {
	out := make([]domain.RegradeRequest, len(rows))
	names, exercises := map[int64]string{}, map[string]string{}
	for i, r := range rows {
		if _, ok := names[r.UserID]; !ok {
			var u userRow
			_ = db.gorm.WithContext(ctx).Where("id = ?", r.UserID).Take(&u).Error // a name is cosmetic
			names[r.UserID] = u.Name
		}
		if _, ok := exercises[r.SubmissionID]; !ok {
			var s submissionRow
			if err := db.gorm.WithContext(ctx).Select("id", "exercise_id").Where("id = ?", r.SubmissionID).Take(&s).Error; err != nil {
				return nil, fmt.Errorf("read submission %s: %w", r.SubmissionID, translate(err))
			}
			exercises[r.SubmissionID] = s.ExerciseID
		}
		out[i] = r.request(names[r.UserID], exercises[r.SubmissionID])
	}
	return out, nil
}

// RequestAnswer is an instructor's answer to regrade request ID; Override,
// when set, is the question's new points (with Reason).
type RequestAnswer struct {
	ID       int64
	Answer   string
	Override *float64
	Reason   string
}

// AnswerRegradeRequest records an instructor's answer to an open request
// (ECONFLICT when it was answered already), with its audit entry, in one
// transaction. An answer with an override is written by WriteManualChange
// (ManualChange.Answer), in the override's transaction.
func (db *DB) AnswerRegradeRequest(ctx context.Context, a RequestAnswer, by domain.User) (domain.RegradeRequest, error) {
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return db.answerRequest(tx, a, "", "", by)
	})
	if err != nil {
		return domain.RegradeRequest{}, translate(err)
	}
	return db.RegradeRequest(ctx, a.ID)
}

// answerRequest marks request a.ID answered and audit-logs it inside tx.
// With submissionID set the request must be on that submission's cell
// cellID (an override answers the request it overrides for). ECONFLICT
// when it is not open: the caller's transaction then rolls back, the
// override with it.
func (db *DB) answerRequest(tx *gorm.DB, a RequestAnswer, submissionID, cellID string, by domain.User) error {
	upd := map[string]any{"state": domain.RegradeRequestAnswered, "answer": lossless(a.Answer), "answered_by": by.Name,
		"answered_at": db.Now(), "override_points": a.Override, "override_reason": lossless(a.Reason)}
	if by.ID != 0 {
		upd["answered_by_id"] = by.ID
	}
	q := tx.Model(&regradeRequestRow{}).Where("id = ? AND state = ?", a.ID, domain.RegradeRequestOpen)
	if submissionID != "" {
		q = q.Where("submission_id = ? AND cell_id = ?", submissionID, cellID)
	}
	res := q.Updates(upd)
	if res.Error != nil {
		return fmt.Errorf("answer regrade request %d: %w", a.ID, res.Error)
	}
	if res.RowsAffected != 1 {
		return domain.Errorf(domain.ECONFLICT, "regrade request %d is not open (answered already, or unknown)", a.ID)
	}
	detail := "answered"
	if a.Override != nil {
		detail = fmt.Sprintf("answered with an override to %g points: %s", *a.Override, a.Reason)
	}
	return db.audit(tx, by, domain.AuditRegradeAnswer, fmt.Sprintf("regrade request %d", a.ID), detail)
}
