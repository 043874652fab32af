package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// UploadWindow is one rate limit on a learner's uploads: at most Count
// attempts per Per, of one exercise (Exercise set) or of all of them.
type UploadWindow struct {
	Exercise string
	Count    int
	Per      time.Duration
}

// Upload kinds: a check's attempts are counted apart from a submission's
// (each has its own limits; a burst of checks never blocks a submission).
const (
	UploadSubmission = "submission"
	UploadCheck      = "check"
)

// UploadRefused says which window is full and when it frees up.
type UploadRefused struct {
	Window     UploadWindow
	RetryAfter time.Duration
}

type uploadAttemptRow struct {
	ID         int64
	UserID     int64
	ExerciseID string
	Kind       string
	CreatedAt  time.Time
}

func (uploadAttemptRow) TableName() string { return "upload_attempts" }

// RecordUpload checks a learner's windows and, when none is full, records
// the attempt; a full window returns it and records nothing. Check and
// record happen under a lock on the learner's row, so concurrent uploads
// (on any server sharing the database) cannot both take the last place.
func (db *DB) RecordUpload(ctx context.Context, userID int64, exerciseID string, windows []UploadWindow) (*UploadRefused, error) {
	return db.recordAttempt(ctx, userID, exerciseID, UploadSubmission, windows)
}

// RecordCheck is RecordUpload for a check: its windows count checks only,
// and the attempt it records is a check's.
func (db *DB) RecordCheck(ctx context.Context, userID int64, exerciseID string, windows []UploadWindow) (*UploadRefused, error) {
	return db.recordAttempt(ctx, userID, exerciseID, UploadCheck, windows)
}

func (db *DB) recordAttempt(ctx context.Context, userID int64, exerciseID, kind string, windows []UploadWindow) (*UploadRefused, error) {
	var refused *UploadRefused
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := db.lockUser(tx, userID); err != nil {
			return err
		}
		// Write first: on SQLite the write lock is then taken (waiting
		// for another process's) before anything is read, so two servers
		// on one file cannot both read a window with one place left.
		now := db.Now()
		if err := db.insertUpload(tx, userID, exerciseID, kind, now); err != nil {
			return err
		}
		for _, w := range windows {
			if w.Count <= 0 || w.Per <= 0 {
				continue
			}
			q := tx.Model(&uploadAttemptRow{}).Where("user_id = ? AND created_at > ? AND kind = ?", userID, now.Add(-w.Per), kind)
			if w.Exercise != "" {
				q = q.Where("exercise_id = ?", w.Exercise)
			}
			var times []time.Time
			if err := q.Order("created_at DESC").Limit(w.Count+1).Pluck("created_at", &times).Error; err != nil {
				return fmt.Errorf("count uploads of user %d: %w", userID, err)
			}
			if len(times) > w.Count {
				// Over with this one: undo it. The window frees up when
				// the oldest of the last Count leaves it.
				wait := times[w.Count].Add(w.Per).Sub(now)
				refused = &UploadRefused{Window: w, RetryAfter: max(wait, time.Second)}
				return errUploadRefused
			}
		}
		return nil
	})
	if errors.Is(err, errUploadRefused) {
		return refused, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, nil
}

var errUploadRefused = errors.New("upload refused")

// CountRefusedUpload records an upload refused before it could be
// checked (too large, not a form): it counts against the rate limits.
func (db *DB) CountRefusedUpload(ctx context.Context, userID int64, exerciseID string) error {
	return db.insertUpload(db.gorm.WithContext(ctx), userID, exerciseID, UploadSubmission, db.Now())
}

func (db *DB) insertUpload(tx *gorm.DB, userID int64, exerciseID, kind string, now time.Time) error {
	if len(exerciseID) > 200 {
		exerciseID = exerciseID[:200]
	}
	if err := tx.Create(&uploadAttemptRow{UserID: userID, ExerciseID: Printable(exerciseID), Kind: kind, CreatedAt: now}).Error; err != nil {
		return fmt.Errorf("record upload of user %d: %w", userID, err)
	}
	return nil
}

// lockUser serialises transactions about one user: a row lock on
// Postgres; SQLite has a single writer connection already.
func (db *DB) lockUser(tx *gorm.DB, userID int64) error {
	if db.Dialect != "postgres" {
		return nil
	}
	var id int64
	if err := tx.Raw("SELECT id FROM users WHERE id = ? FOR UPDATE", userID).Scan(&id).Error; err != nil {
		return fmt.Errorf("lock user %d: %w", userID, err)
	}
	return nil
}
