package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// Extension is defined in package domain (the pages show it without the store).

type extensionRow struct {
	ID          int64
	ExerciseID  string
	UserID      int64
	Deadline    time.Time
	LatePenalty *string
	GrantedBy   string
	GrantedAt   time.Time
	RevokedBy   *string
	RevokedAt   *time.Time
}

func (extensionRow) TableName() string { return "extensions" }

func toExtension(r extensionRow, learner string) domain.Extension {
	e := domain.Extension{ID: r.ID, ExerciseID: r.ExerciseID, UserID: r.UserID, Learner: learner, Deadline: r.Deadline.UTC(),
		GrantedBy: r.GrantedBy, GrantedAt: r.GrantedAt.UTC(), RevokedAt: r.RevokedAt}
	if r.LatePenalty != nil {
		e.LatePenalty = json.RawMessage(*r.LatePenalty)
	}
	if r.RevokedBy != nil {
		e.RevokedBy = *r.RevokedBy
	}
	return e
}

// GrantExtension records e as the learner's active extension for the
// exercise, revoking the one it replaces (which stays on record).
func (tx *Tx) GrantExtension(e domain.Extension) (domain.Extension, error) {
	now := tx.db.Now()
	if err := tx.g.Model(&extensionRow{}).Where("exercise_id = ? AND user_id = ? AND revoked_at IS NULL", e.ExerciseID, e.UserID).
		Updates(map[string]any{"revoked_at": now, "revoked_by": e.GrantedBy}).Error; err != nil {
		return domain.Extension{}, fmt.Errorf("replace the extension of user %d for %s: %w", e.UserID, e.ExerciseID, err)
	}
	row := extensionRow{ExerciseID: e.ExerciseID, UserID: e.UserID, Deadline: e.Deadline.UTC(), GrantedBy: e.GrantedBy, GrantedAt: now}
	if e.LatePenalty != nil {
		s := string(e.LatePenalty)
		row.LatePenalty = &s
	}
	if err := tx.g.Create(&row).Error; err != nil {
		return domain.Extension{}, fmt.Errorf("grant an extension to user %d for %s: %w", e.UserID, e.ExerciseID, translate(err))
	}
	return toExtension(row, e.Learner), nil
}

// RevokeExtension ends the learner's active extension for the exercise;
// none is ENOTFOUND.
func (tx *Tx) RevokeExtension(exerciseID string, userID int64, by string) (domain.Extension, error) {
	var row extensionRow
	err := tx.g.Where("exercise_id = ? AND user_id = ? AND revoked_at IS NULL", exerciseID, userID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Extension{}, domain.Errorf(domain.ENOTFOUND, "no active extension of this learner for exercise %s", exerciseID)
	}
	if err != nil {
		return domain.Extension{}, fmt.Errorf("find the extension of user %d for %s: %w", userID, exerciseID, err)
	}
	now := tx.db.Now()
	if err := tx.g.Model(&extensionRow{}).Where("id = ?", row.ID).
		Updates(map[string]any{"revoked_at": now, "revoked_by": by}).Error; err != nil {
		return domain.Extension{}, fmt.Errorf("revoke extension %d: %w", row.ID, err)
	}
	row.RevokedAt, row.RevokedBy = &now, &by
	return toExtension(row, ""), nil
}

// ActiveExtension returns the learner's active extension for the
// exercise, or nil.
func (db *DB) ActiveExtension(ctx context.Context, exerciseID string, userID int64) (*domain.Extension, error) {
	var rows []extensionRow
	if err := db.gorm.WithContext(ctx).Where("exercise_id = ? AND user_id = ? AND revoked_at IS NULL", exerciseID, userID).
		Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the extension of user %d for %s: %w", userID, exerciseID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	e := toExtension(rows[0], "")
	return &e, nil
}

// UserExtensions returns a learner's active extensions by exercise id.
func (db *DB) UserExtensions(ctx context.Context, userID int64) (map[string]domain.Extension, error) {
	var rows []extensionRow
	if err := db.gorm.WithContext(ctx).Where("user_id = ? AND revoked_at IS NULL", userID).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the extensions of user %d: %w", userID, err)
	}
	out := make(map[string]domain.Extension, len(rows))
	for _, r := range rows {
		out[r.ExerciseID] = toExtension(r, "")
	}
	return out, nil
}

// Extensions lists an exercise's extensions, active ones first (by
// learner), then, with revoked, the revoked ones newest first.
func (db *DB) Extensions(ctx context.Context, exerciseID string, revoked bool) ([]domain.Extension, error) {
	q := db.gorm.WithContext(ctx).Model(&extensionRow{}).Select("extensions.*").
		Joins("JOIN users ON users.id = extensions.user_id").Where("extensions.exercise_id = ?", exerciseID)
	if !revoked {
		q = q.Where("extensions.revoked_at IS NULL")
	}
	if cond, args := usersInScope(ctx, "extensions.user_id"); args != nil || cond != "1 = 1" {
		q = q.Where(cond, args...)
	}
	var rows []extensionRow
	if err := q.Order("extensions.revoked_at IS NOT NULL, extensions.revoked_at DESC, users.name, extensions.id").
		Limit(5000).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the extensions of %s: %w", exerciseID, err)
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.UserID
	}
	var users []userRow
	if len(ids) > 0 {
		if err := db.gorm.WithContext(ctx).Where("id IN ?", ids).Find(&users).Error; err != nil {
			return nil, fmt.Errorf("read the learners of the extensions of %s: %w", exerciseID, err)
		}
	}
	names := make(map[int64]string, len(users))
	for _, u := range users {
		names[u.ID] = u.Name
	}
	out := make([]domain.Extension, len(rows))
	for i, r := range rows {
		out[i] = toExtension(r, names[r.UserID])
	}
	return out, nil
}
