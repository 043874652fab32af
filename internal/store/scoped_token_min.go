package store

import (
	"context"
	"fmt"
)

// CreateScopedToken issues a token for userID. This minimal version
// ignores scope and label and issues an ordinary token: the lead
// replaces it at merge with the scoped token store written in parallel
// (same signature).
func (db *DB) CreateScopedToken(ctx context.Context, userID int64, scope, label string) (token string, id int64, err error) {
	token, err = db.CreateToken(ctx, userID)
	if err != nil {
		return "", 0, fmt.Errorf("token %q for user %d: %w", label, userID, err)
	}
	var row tokenRow
	if err := db.gorm.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Take(&row).Error; err != nil {
		return "", 0, fmt.Errorf("read token of user %d: %w", userID, err)
	}
	return token, row.ID, nil
}
