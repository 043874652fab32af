package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
)

// CreateUser adds a user and returns it with a fresh API token (shown once;
// only its hash is stored). A learner or instructor joins the default
// cohort with that role.
func (db *DB) CreateUser(ctx context.Context, name string, role domain.Role) (domain.User, string, error) {
	return db.CreateUserIn(ctx, name, role, defaultCohortID)
}

// CreateUserIn is CreateUser with the cohort a learner or instructor
// joins.
func (db *DB) CreateUserIn(ctx context.Context, name string, role domain.Role, cohortID int64) (domain.User, string, error) {
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
		if err := db.joinCohort(tx, cohortID, row.ID, role); err != nil {
			return err
		}
		var err error
		token, _, err = db.createToken(tx, row.ID, domain.ScopeFull, "")
		return err
	})
	if err != nil {
		return domain.User{}, "", err
	}
	return toUser(row), token, nil
}

// CreateToken issues another token for an existing user.
func (db *DB) CreateToken(ctx context.Context, userID int64) (string, error) {
	token, _, err := db.createToken(db.gorm.WithContext(ctx), userID, domain.ScopeFull, "")
	return token, err
}

// MaxTokenLabel is the longest token label, in characters.
const MaxTokenLabel = 100

// CreateScopedToken issues a token for userID with scope
// (domain.ScopeFull or domain.ScopeLearner) and label (the client it is
// for, shown in the user's list of devices). The token is shown once;
// id names it for revocation. A runner account gets no learner token:
// it is no learner.
func (db *DB) CreateScopedToken(ctx context.Context, userID int64, scope, label string) (token string, id int64, err error) {
	if scope != domain.ScopeFull && scope != domain.ScopeLearner {
		return "", 0, domain.Errorf(domain.EINVALID, "unknown token scope %q ('' or learner)", scope)
	}
	if utf8.RuneCountInString(label) > MaxTokenLabel {
		return "", 0, domain.Errorf(domain.EINVALID, "token label longer than %d characters", MaxTokenLabel)
	}
	var u userRow
	err = db.gorm.WithContext(ctx).Where("id = ?", userID).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", 0, domain.Errorf(domain.ENOTFOUND, "user %d not found", userID)
	}
	if err != nil {
		return "", 0, fmt.Errorf("find user %d: %w", userID, err)
	}
	if scope == domain.ScopeLearner && domain.Role(u.Role) == domain.RoleRunner {
		return "", 0, domain.Errorf(domain.EINVALID, "runner accounts get no learner tokens")
	}
	return db.createToken(db.gorm.WithContext(ctx), userID, scope, label)
}

func (db *DB) createToken(tx *gorm.DB, userID int64, scope, label string) (string, int64, error) {
	token, err := auth.NewToken()
	if err != nil {
		return "", 0, err
	}
	row := tokenRow{UserID: userID, Hash: auth.HashToken(token), Prefix: token[:12], Scope: scope, Label: label, CreatedAt: db.Now()}
	if err := tx.Create(&row).Error; err != nil {
		return "", 0, fmt.Errorf("insert token for user %d: %w", userID, err)
	}
	return token, row.ID, nil
}

// UserTokens lists the tokens of userID that are not revoked, oldest
// first, without their secrets.
func (db *DB) UserTokens(ctx context.Context, userID int64) ([]domain.TokenInfo, error) {
	var rows []tokenRow
	if err := db.gorm.WithContext(ctx).Where("user_id = ? AND revoked_at IS NULL", userID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list tokens of user %d: %w", userID, err)
	}
	out := make([]domain.TokenInfo, len(rows))
	for i, r := range rows {
		out[i] = domain.TokenInfo{ID: r.ID, UserID: r.UserID, Prefix: r.Prefix, Scope: r.Scope, Label: r.Label,
			CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt}
	}
	return out, nil
}

// RevokeUserToken revokes token tokenID of userID. Another user's token,
// an unknown or an already revoked one is ENOTFOUND: a user learns
// nothing of others' tokens. The revocation counts at once here and, by
// migration 00021's trigger, on every server.
func (db *DB) RevokeUserToken(ctx context.Context, userID, tokenID int64) error {
	res := db.gorm.WithContext(ctx).Model(&tokenRow{}).
		Where("id = ? AND user_id = ? AND revoked_at IS NULL", tokenID, userID).Update("revoked_at", db.Now())
	db.auth.forget()
	if res.Error != nil {
		return fmt.Errorf("revoke token %d of user %d: %w", tokenID, userID, res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.Errorf(domain.ENOTFOUND, "token %d not found", tokenID)
	}
	return nil
}

// RevokeTokens revokes every token of a user.
func (db *DB) RevokeTokens(ctx context.Context, userID int64) error {
	now := db.Now()
	err := db.gorm.WithContext(ctx).Model(&tokenRow{}).
		Where("user_id = ? AND revoked_at IS NULL", userID).Update("revoked_at", now).Error
	db.auth.forget() // at once here; other servers at its notification
	if err != nil {
		return fmt.Errorf("revoke tokens of user %d: %w", userID, err)
	}
	return nil
}

// UserByToken resolves a bearer token. Unknown and revoked tokens are EUNAUTHORIZED.
func (db *DB) UserByToken(ctx context.Context, token string) (domain.User, error) {
	a, err := db.Authenticate(ctx, token, "", 0)
	if err != nil {
		return domain.User{}, err
	}
	if !a.Valid {
		return domain.User{}, domain.Errorf(domain.EUNAUTHORIZED, "the token is not valid")
	}
	return a.User, nil
}

// TokenCheck is one authentication: the token's user, and the failed
// authentications of the client's address in its current window.
type TokenCheck struct {
	// User is the token's user, with the role the token acts with: a
	// learner-scoped token of staff acts as a learner.
	User  domain.User
	Valid bool // the token exists and is not revoked
	// Scope is the token's (domain.ScopeFull or domain.ScopeLearner).
	Scope string
	// Failures counted from the address since WindowStart (zero when its
	// window is over or it has none).
	Failures    int
	WindowStart time.Time
}

// authSelect and authFrom read a token's user and its address's
// failure count in one statement (the token by the unique index on its
// hash, the address by its primary key): one round trip per request,
// where authentication was the largest part of a claim's server CPU
// (make bench). The authenticated claim (claim.go) runs them as its
// first part.
const (
	authSelect = `u.id AS uid, u.name, u.role, u.created_at AS user_created_at, u.full_name, u.section, t.id AS tid,
    t.scope, t.last_used_at, f.failures, f.window_start`
	authFrom = `(SELECT 1 AS one) x
  LEFT JOIN tokens t ON t.hash = @hash AND t.revoked_at IS NULL
  LEFT JOIN users u ON u.id = t.user_id
  LEFT JOIN auth_failures f ON f.addr = @addr AND f.window_start > @wstart`
)

var authenticateSQL = positional("SELECT " + authSelect + "\nFROM " + authFrom)

// authScan receives authSelect's columns.
type authScan struct {
	uid, tid, fails              sql.NullInt64
	name, role, full, sec, scope sql.NullString
	created, used, start         sql.NullTime
}

func (s *authScan) dest() []any {
	return []any{&s.uid, &s.name, &s.role, &s.created, &s.full, &s.sec, &s.tid, &s.scope, &s.used, &s.fails, &s.start}
}

// authArgs are the values of authSelect's parameters.
func (db *DB) authArgs(vals map[string]any, token, addr string, window time.Duration) {
	hash := ""
	if token != "" {
		hash = auth.HashToken(token)
	}
	if addr != "" {
		addr = clipAddr(addr)
	}
	vals["hash"], vals["addr"], vals["wstart"] = hash, addr, db.Now().Add(-window)
}

// check is the TokenCheck s read; it records the token's use when due
// (and notes it in s).
func (db *DB) check(ctx context.Context, s *authScan, counted bool) TokenCheck {
	var out TokenCheck
	if counted && s.fails.Valid {
		out.Failures, out.WindowStart = int(s.fails.Int64), s.start.Time
	}
	if !s.uid.Valid {
		return out
	}
	role, ok := scopedRole(domain.Role(s.role.String), s.scope.String)
	if !ok {
		return out
	}
	out.Valid, out.Scope = true, s.scope.String
	out.User = domain.User{ID: s.uid.Int64, Name: s.name.String, Role: role, CreatedAt: s.created.Time,
		FullName: s.full.String, Section: s.sec.String}
	// Record the use for the admin's token list, at most once a
	// tokenUseResolution per token, so that busy clients (runners
	// polling) do not write on every request; the condition keeps
	// several servers from writing it more often. A failure here must
	// not refuse the request.
	now := db.Now()
	if !s.used.Valid || now.Sub(s.used.Time) >= tokenUseResolution {
		_ = db.gorm.WithContext(ctx).Model(&tokenRow{}).
			Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", s.tid.Int64, now.Add(-tokenUseResolution)).
			Update("last_used_at", now).Error
		// Written, or another server wrote it: a kept check does not ask
		// again within the resolution.
		s.used = sql.NullTime{Time: now, Valid: true}
	}
	return out
}

// scopedRole is the role a token of scope acts with for a user of role:
// a learner-scoped token of staff is a learner's, so every staff route's
// role check refuses it. An unknown scope, or a learner scope on a runner
// account (never issued), is no valid token (ok false).
func scopedRole(role domain.Role, scope string) (domain.Role, bool) {
	switch scope {
	case domain.ScopeFull:
		return role, true
	case domain.ScopeLearner:
		switch role {
		case domain.RoleLearner, domain.RoleInstructor, domain.RoleAdmin:
			return domain.RoleLearner, true
		}
	}
	return "", false
}

// Authenticate resolves token and, when addr is not empty, counts the
// failed authentications from addr within window, in one statement. On
// Postgres the check of a valid token is kept in memory while this
// server listens for changes to it (authCache), and forgotten at any, so
// a revocation counts at once on every server. An empty or unknown token is a TokenCheck with Valid
// false, not an error.
func (db *DB) Authenticate(ctx context.Context, token, addr string, window time.Duration) (TokenCheck, error) {
	vals := map[string]any{}
	db.authArgs(vals, token, addr, window)
	counted := addr != "" && window > 0
	key := authKey{hash: vals["hash"].(string), addr: vals["addr"].(string), window: window}
	if s, ok := db.auth.get(key); ok {
		// The lookup left out a window over at its time; this one may
		// have ended since.
		if s.fails.Valid && !s.start.Time.After(db.Now().Add(-window)) {
			s.fails.Valid = false
		}
		used := s.used
		out := db.check(ctx, &s, counted)
		if s.used != used {
			db.auth.touch(key, s.used)
		}
		return out, nil
	}
	gen := db.auth.begin()
	var s authScan
	if err := db.sql.QueryRowContext(ctx, db.text(authenticateSQL), authenticateSQL.args(vals)...).Scan(s.dest()...); err != nil {
		return TokenCheck{}, fmt.Errorf("look up token: %w", translate(err))
	}
	out := db.check(ctx, &s, counted)
	if out.Valid {
		db.auth.put(gen, key, s)
	}
	return out, nil
}

// tokenUseResolution is how stale tokens.last_used_at may be.
const tokenUseResolution = time.Minute

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
