package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
)

// CreateUser adds a user and returns it with a fresh API token (shown once;
// only its hash is stored).
func (db *DB) CreateUser(ctx context.Context, name string, role domain.Role) (domain.User, string, error) {
	if name == "" {
		return domain.User{}, "", domain.Errorf(domain.EINVALID, "user name is required")
	}
	if !role.Valid() {
		return domain.User{}, "", domain.Errorf(domain.EINVALID, "unknown role %q (learner, instructor, admin or runner)", role)
	}
	row := userRow{Name: name, Role: string(role), CreatedAt: db.Now()}
	var token string
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return domain.Errorf(domain.ECONFLICT, "user %q already exists", name)
			}
			return fmt.Errorf("insert user %q: %w", name, err)
		}
		var err error
		token, err = db.createToken(tx, row.ID)
		return err
	})
	if err != nil {
		return domain.User{}, "", err
	}
	return toUser(row), token, nil
}

// CreateToken issues another token for an existing user.
func (db *DB) CreateToken(ctx context.Context, userID int64) (string, error) {
	return db.createToken(db.gorm.WithContext(ctx), userID)
}

func (db *DB) createToken(tx *gorm.DB, userID int64) (string, error) {
	token, err := auth.NewToken()
	if err != nil {
		return "", err
	}
	row := tokenRow{UserID: userID, Hash: auth.HashToken(token), Prefix: token[:12], CreatedAt: db.Now()}
	if err := tx.Create(&row).Error; err != nil {
		return "", fmt.Errorf("insert token for user %d: %w", userID, err)
	}
	return token, nil
}

// RevokeTokens revokes every token of a user.
func (db *DB) RevokeTokens(ctx context.Context, userID int64) error {
	now := db.Now()
	err := db.gorm.WithContext(ctx).Model(&tokenRow{}).
		Where("user_id = ? AND revoked_at IS NULL", userID).Update("revoked_at", now).Error
	if err != nil {
		return fmt.Errorf("revoke tokens of user %d: %w", userID, err)
	}
	return nil
}

// UserByToken resolves a bearer token. Unknown and revoked tokens are EUNAUTHORIZED.
func (db *DB) UserByToken(ctx context.Context, token string) (domain.User, error) {
	if token == "" {
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "a bearer token is required")
	}
	hash := auth.HashToken(token)
	var u userRow
	err := db.gorm.WithContext(ctx).Table("users").
		Joins("JOIN tokens ON tokens.user_id = users.id").
		Where("tokens.hash = ? AND tokens.revoked_at IS NULL", hash).
		Select("users.*").Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "the token is not valid")
	}
	if err != nil {
		return domain.User{}, fmt.Errorf("look up token: %w", err)
	}
	// Record the use for the admin's token list, at most once a minute per
	// token so that busy clients (runners polling) do not write on every
	// request. A failure here must not refuse the request. This process
	// skips even the conditional update within the minute after it last
	// recorded the token (each server writes at most once a minute); the
	// token itself is looked up on every request, so a revocation counts
	// at once on every server.
	now := db.Now()
	if db.tokenUses.due(hash, now) {
		_ = db.gorm.WithContext(ctx).Model(&tokenRow{}).
			Where("hash = ? AND (last_used_at IS NULL OR last_used_at < ?)", hash, now.Add(-tokenUseResolution)).
			Update("last_used_at", now).Error
	}
	return toUser(u), nil
}

// tokenUseResolution is how stale tokens.last_used_at may be.
const tokenUseResolution = time.Minute

// tokenUses remembers when this process last recorded each token's use,
// so that it writes tokens.last_used_at at most once per
// tokenUseResolution. It holds no authority: a token is still looked up
// in the database on every request.
type tokenUses struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// due reports whether this process should record the use of hash now,
// and if so notes that it does.
func (t *tokenUses) due(hash string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if at, ok := t.last[hash]; ok && now.Sub(at) < tokenUseResolution && !now.Before(at) {
		return false
	}
	if t.last == nil || len(t.last) >= maxTokenUses {
		t.last = map[string]time.Time{} // bounded: forgetting only costs one more conditional update
	}
	t.last[hash] = now
	return true
}

// maxTokenUses bounds tokenUses' memory.
const maxTokenUses = 100_000

// UserByName finds a user.
func (db *DB) UserByName(ctx context.Context, name string) (domain.User, error) {
	var u userRow
	err := db.gorm.WithContext(ctx).Where("name = ?", name).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.User{}, domain.Errorf(domain.ENOTFOUND, "user %q not found", name)
	}
	if err != nil {
		return domain.User{}, fmt.Errorf("find user %q: %w", name, err)
	}
	return toUser(u), nil
}

// ListUsers returns every user, by id.
func (db *DB) ListUsers(ctx context.Context) ([]domain.User, error) {
	var rows []userRow
	if err := db.gorm.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]domain.User, len(rows))
	for i, r := range rows {
		out[i] = toUser(r)
	}
	return out, nil
}

func toUser(r userRow) domain.User {
	return domain.User{ID: r.ID, Name: r.Name, Role: domain.Role(r.Role), CreatedAt: r.CreatedAt, FullName: r.FullName, Section: r.Section}
}
