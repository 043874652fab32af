package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// SubmissionByKey returns the submission a user made with an idempotency key.
func (db *DB) SubmissionByKey(ctx context.Context, userID int64, key string) (domain.Submission, error) {
	return db.submissionByKey(ctx, userID, key)
}

// CountSubmissions counts a user's submissions of an exercise made at or
// after since (zero: all), leaving out those that failed for infrastructure
// reasons (they are not the learner's attempts): see attempts.
func (db *DB) CountSubmissions(ctx context.Context, userID int64, exerciseID string, since time.Time) (int64, error) {
	var n int64
	q := attempts(db.gorm.WithContext(ctx).Model(&submissionRow{}).Where("user_id = ? AND exercise_id = ?", userID, exerciseID))
	if !since.IsZero() {
		q = q.Where("created_at >= ?", since)
	}
	if err := q.Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count submissions of user %d for %s: %w", userID, exerciseID, err)
	}
	return n, nil
}

// ActiveJobs counts userID's jobs still waiting for a runner or running
// (the jobs_active_by_user index serves it).
func (db *DB) ActiveJobs(ctx context.Context, userID int64) (int64, error) {
	var n int64
	if err := db.gorm.WithContext(ctx).Model(&jobRow{}).Where("user_id = ? AND state IN ?", userID, []string{domain.JobQueued, domain.JobLeased}).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count active jobs of user %d: %w", userID, err)
	}
	return n, nil
}

// attempts narrows q (on submissions) to the learner's attempts, what
// max_submissions caps: a submission whose grading failed is none, and
// stays none when a regrade later scores it (its score history then
// holds an entry whose prior status is failed); a check is none either.
func attempts(q *gorm.DB) *gorm.DB {
	return q.Where("submissions.kind = ? AND submissions.status <> ? AND NOT EXISTS (SELECT 1 FROM score_history h WHERE h.submission_id = submissions.id AND h.prior_status = ?)",
		kindSubmission, domain.StatusFailed, domain.StatusFailed)
}

// GradedSubmissions lists the scored submissions (graded, or graded for
// their automatic part and waiting for manual grading) of an exercise
// ("": of all; optionally of one user), oldest first, without cell results.
func (db *DB) GradedSubmissions(ctx context.Context, exerciseID string, userID int64) ([]domain.Submission, error) {
	return db.submissionsIn(ctx, exerciseID, userID, domain.StatusGraded, domain.StatusNeedsManual)
}

// FailedSubmissions lists the submissions of an exercise whose grading
// failed (they have no score), oldest first, without cell results.
func (db *DB) FailedSubmissions(ctx context.Context, exerciseID string) ([]domain.Submission, error) {
	return db.submissionsIn(ctx, exerciseID, 0, domain.StatusFailed)
}

func (db *DB) submissionsIn(ctx context.Context, exerciseID string, userID int64, statuses ...string) ([]domain.Submission, error) {
	q := db.gorm.WithContext(ctx).Where("status IN ? AND kind = ?", statuses, kindSubmission)
	if exerciseID != "" {
		q = q.Where("exercise_id = ?", exerciseID)
	}
	if userID != 0 {
		q = q.Where("user_id = ?", userID)
	}
	// Staff (the manual grading queue, a regrade staged by an
	// instructor) reach their cohorts' submissions only.
	q = scoped(ctx, q, "cohort_id")
	var rows []submissionRow
	if err := q.Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list %v submissions of %s: %w", statuses, exerciseID, err)
	}
	names := map[int64]string{}
	out := make([]domain.Submission, len(rows))
	for i, r := range rows {
		if _, ok := names[r.UserID]; !ok {
			var u userRow
			_ = db.gorm.WithContext(ctx).Where("id = ?", r.UserID).Take(&u).Error // a name is cosmetic
			names[r.UserID] = u.Name
		}
		out[i] = toSubmission(r, names[r.UserID])
	}
	return out, nil
}
