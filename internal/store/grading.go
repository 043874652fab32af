package store

import (
	"context"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// SubmissionByKey returns the submission a user made with an idempotency key.
func (db *DB) SubmissionByKey(ctx context.Context, userID int64, key string) (domain.Submission, error) {
	return db.submissionByKey(ctx, userID, key)
}

// CountSubmissions counts a user's submissions of an exercise made at or
// after since (zero: all), leaving out those that failed for infrastructure
// reasons (they are not the learner's attempts).
func (db *DB) CountSubmissions(ctx context.Context, userID int64, exerciseID string, since time.Time) (int64, error) {
	var n int64
	q := db.gorm.WithContext(ctx).Model(&submissionRow{}).
		Where("user_id = ? AND exercise_id = ? AND status <> ?", userID, exerciseID, domain.StatusFailed)
	if !since.IsZero() {
		q = q.Where("created_at >= ?", since)
	}
	if err := q.Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count submissions of user %d for %s: %w", userID, exerciseID, err)
	}
	return n, nil
}

// SubmissionTimes returns the creation times of a user's submissions of an
// exercise since a time, oldest first (all of them count toward a rate limit).
func (db *DB) SubmissionTimes(ctx context.Context, userID int64, exerciseID string, since time.Time) ([]time.Time, error) {
	var times []time.Time
	err := db.gorm.WithContext(ctx).Model(&submissionRow{}).
		Where("user_id = ? AND exercise_id = ? AND created_at >= ?", userID, exerciseID, since).
		Order("created_at").Pluck("created_at", &times).Error
	if err != nil {
		return nil, fmt.Errorf("list submission times of user %d for %s: %w", userID, exerciseID, err)
	}
	return times, nil
}

// GradedSubmissions lists the scored submissions (graded, or graded for
// their automatic part and waiting for manual grading) of an exercise
// ("": of all; optionally of one user), oldest first, without cell results.
func (db *DB) GradedSubmissions(ctx context.Context, exerciseID string, userID int64) ([]domain.Submission, error) {
	q := db.gorm.WithContext(ctx).Where("status IN ?", []string{domain.StatusGraded, domain.StatusNeedsManual})
	if exerciseID != "" {
		q = q.Where("exercise_id = ?", exerciseID)
	}
	if userID != 0 {
		q = q.Where("user_id = ?", userID)
	}
	var rows []submissionRow
	if err := q.Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list graded submissions of %s: %w", exerciseID, err)
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
