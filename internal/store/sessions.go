package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
)

// Browser sessions of the web pages. The cookie carries a random session
// id; the table holds only its SHA-256 (as for API tokens), the user, the
// per-session CSRF token and the expiry.

type webSessionRow struct {
	IDHash    string `gorm:"column:id_hash;primaryKey"`
	UserID    int64
	CSRFToken string `gorm:"column:csrf_token"`
	CreatedAt time.Time
	ExpiresAt time.Time
}

func (webSessionRow) TableName() string { return "web_sessions" }

// CreateWebSession starts a session for userID lasting ttl and returns the
// secret id for the cookie (shown once; only its hash is stored).
func (db *DB) CreateWebSession(ctx context.Context, userID int64, ttl time.Duration) (string, domain.WebSession, error) {
	id := auth.RandomID(32)
	now := db.Now()
	row := webSessionRow{IDHash: auth.HashToken(id), UserID: userID, CSRFToken: auth.RandomID(24), CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := db.gorm.WithContext(ctx).Create(&row).Error; err != nil {
		return "", domain.WebSession{}, fmt.Errorf("create session for user %d: %w", userID, err)
	}
	var u userRow
	if err := db.gorm.WithContext(ctx).Where("id = ?", userID).Take(&u).Error; err != nil {
		return "", domain.WebSession{}, fmt.Errorf("read user %d: %w", userID, err)
	}
	return id, domain.WebSession{User: toUser(u), CSRFToken: row.CSRFToken, ExpiresAt: row.ExpiresAt}, nil
}

// WebSessionByID resolves a session cookie. Unknown and expired sessions,
// and sessions of users whose every token was revoked, are EUNAUTHORIZED:
// revoking a user's tokens also signs their browsers out.
func (db *DB) WebSessionByID(ctx context.Context, id string) (domain.WebSession, error) {
	if id == "" {
		return domain.WebSession{}, domain.Errorf(domain.EUNAUTHORIZED, "no session")
	}
	var row struct {
		CSRFToken     string    `gorm:"column:csrf_token"`
		ExpiresAt     time.Time `gorm:"column:expires_at"`
		UserID        int64     `gorm:"column:user_id"`
		UserName      string    `gorm:"column:user_name"`
		UserRole      string    `gorm:"column:user_role"`
		UserCreatedAt time.Time `gorm:"column:user_created_at"`
	}
	err := db.gorm.WithContext(ctx).Table("web_sessions").
		Select("web_sessions.csrf_token, web_sessions.expires_at, users.id AS user_id, users.name AS user_name, "+
			"users.role AS user_role, users.created_at AS user_created_at").
		Joins("JOIN users ON users.id = web_sessions.user_id").
		Where("web_sessions.id_hash = ? AND web_sessions.expires_at > ?", auth.HashToken(id), db.Now()).
		Where("EXISTS (SELECT 1 FROM tokens WHERE tokens.user_id = users.id AND tokens.revoked_at IS NULL)").
		Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.WebSession{}, domain.Errorf(domain.EUNAUTHORIZED, "the session has expired or was signed out")
	}
	if err != nil {
		return domain.WebSession{}, fmt.Errorf("look up session: %w", err)
	}
	u := userRow{ID: row.UserID, Name: row.UserName, Role: row.UserRole, CreatedAt: row.UserCreatedAt}
	return domain.WebSession{User: toUser(u), CSRFToken: row.CSRFToken, ExpiresAt: row.ExpiresAt}, nil
}

// DeleteWebSession signs a browser out; an unknown id is not an error.
func (db *DB) DeleteWebSession(ctx context.Context, id string) error {
	if err := db.gorm.WithContext(ctx).Where("id_hash = ?", auth.HashToken(id)).Delete(&webSessionRow{}).Error; err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteExpiredWebSessions removes sessions past their expiry.
func (db *DB) DeleteExpiredWebSessions(ctx context.Context) (int64, error) {
	res := db.gorm.WithContext(ctx).Where("expires_at <= ?", db.Now()).Delete(&webSessionRow{})
	if res.Error != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", res.Error)
	}
	return res.RowsAffected, nil
}
