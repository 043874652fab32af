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

// identityRow links an outside sign-in (JupyterHub, an OpenID provider)
// to a user (migration 00028).
type identityRow struct {
	Issuer    string `gorm:"primaryKey"`
	Subject   string `gorm:"primaryKey"`
	UserID    int64
	CreatedAt time.Time
}

func (identityRow) TableName() string { return "external_identities" }

// ExternalUser returns the user an outside identity (issuer, subject)
// signs in as. A known identity is its linked user, whatever login it
// sends now (a renamed claim finds the same user). A new one links to
// the user named login when that user is a learner or instructor with
// no other identity (a roster import made it), else creates login with
// role. It never signs in as an admin or a runner account (EFORBIDDEN),
// and a login whose user is linked to another identity is a conflict
// (ECONFLICT): two providers' "alice" are not one person. The role of
// an existing user is not changed here.
func (db *DB) ExternalUser(ctx context.Context, issuer, subject, login string, role domain.Role) (domain.User, error) {
	return db.ExternalUserIn(ctx, issuer, subject, login, role, defaultCohortID)
}

// ExternalUserIn is ExternalUser for a sign-in that comes from a cohort's
// course (an LTI launch, its roster): a user it creates joins that cohort,
// not the default one, so they appear in their course's gradebook only.
func (db *DB) ExternalUserIn(ctx context.Context, issuer, subject, login string, role domain.Role, cohortID int64) (domain.User, error) {
	if issuer == "" || subject == "" || login == "" {
		return domain.User{}, domain.Errorf(domain.EINVALID, "an outside sign-in needs an issuer, a subject and a login name")
	}
	if role != domain.RoleLearner && role != domain.RoleInstructor {
		return domain.User{}, domain.Errorf(domain.EINVALID, "an outside sign-in is a learner or an instructor, not %q", role)
	}
	var u userRow
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var link identityRow
		err := tx.Where("issuer = ? AND subject = ?", issuer, subject).Take(&link).Error
		switch {
		case err == nil:
			if err := tx.Where("id = ?", link.UserID).Take(&u).Error; err != nil {
				return fmt.Errorf("find user %d of identity %s: %w", link.UserID, issuer, err)
			}
			return nil
		case !errors.Is(err, gorm.ErrRecordNotFound):
			return fmt.Errorf("find identity at %s: %w", issuer, err)
		}
		return db.linkNew(tx, &u, issuer, subject, login, role, cohortID)
	})
	if err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return domain.User{}, domain.Errorf(domain.ECONFLICT, "user %q signed in twice at once; try again", login)
		}
		return domain.User{}, err
	}
	if r := domain.Role(u.Role); r == domain.RoleAdmin || r == domain.RoleRunner {
		return domain.User{}, domain.Errorf(domain.EFORBIDDEN, "user %q is an %s account and cannot sign in from outside", u.Name, r)
	}
	// Revoked tokens lock a user out: an outside sign-in must not let
	// them back in (nor mint them a new token).
	var live int64
	if err := db.gorm.WithContext(ctx).Model(&tokenRow{}).Where("user_id = ? AND revoked_at IS NULL", u.ID).Count(&live).Error; err != nil {
		return domain.User{}, fmt.Errorf("tokens of %q: %w", u.Name, err)
	}
	if live == 0 {
		return domain.User{}, domain.Errorf(domain.EFORBIDDEN, "user %q has no valid token (revoked); ask an instructor", u.Name)
	}
	return toUser(u), nil
}

// linkNew links a first-seen identity to the user named login, created
// with role in cohortID when there is none.
func (db *DB) linkNew(tx *gorm.DB, u *userRow, issuer, subject, login string, role domain.Role, cohortID int64) error {
	err := tx.Where("name = ?", login).Take(u).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		*u = userRow{Name: login, Role: string(role), CreatedAt: db.Now()}
		if err := tx.Create(u).Error; err != nil {
			return fmt.Errorf("insert user %q: %w", login, err)
		}
		if err := db.joinCohort(tx, cohortID, u.ID, role); err != nil {
			return err
		}
		// A session lasts while its user holds a live token (revoking
		// them signs the user out everywhere): a new user gets one, its
		// secret never shown.
		if _, _, err := db.createToken(tx, u.ID, "", "sign-in session"); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("find user %q: %w", login, err)
	default:
		if r := domain.Role(u.Role); r == domain.RoleAdmin || r == domain.RoleRunner {
			return domain.Errorf(domain.EFORBIDDEN, "user %q is an %s account and cannot sign in from outside", login, r)
		}
		var n int64
		if err := tx.Model(&identityRow{}).Where("user_id = ?", u.ID).Count(&n).Error; err != nil {
			return fmt.Errorf("count identities of %q: %w", login, err)
		}
		if n > 0 {
			return domain.Errorf(domain.ECONFLICT, "user %q is already linked to another sign-in", login)
		}
	}
	link := identityRow{Issuer: issuer, Subject: subject, UserID: u.ID, CreatedAt: db.Now()}
	if err := tx.Create(&link).Error; err != nil {
		return fmt.Errorf("link identity at %s to %q: %w", issuer, login, err)
	}
	return nil
}

type loginStateRow struct {
	StateHash string `gorm:"primaryKey"`
	Data      string
	ExpiresAt time.Time
}

func (loginStateRow) TableName() string { return "login_states" }

// PutLoginState keeps an outside sign-in's state for ttl (only its hash
// is stored) with the data its callback needs; expired ones are dropped.
func (db *DB) PutLoginState(ctx context.Context, state, data string, ttl time.Duration) error {
	now := db.Now()
	g := db.gorm.WithContext(ctx)
	if err := g.Where("expires_at < ?", now).Delete(&loginStateRow{}).Error; err != nil {
		return fmt.Errorf("drop expired sign-in states: %w", err)
	}
	row := loginStateRow{StateHash: auth.HashToken(state), Data: data, ExpiresAt: now.Add(ttl)}
	if err := g.Create(&row).Error; err != nil {
		return fmt.Errorf("keep sign-in state: %w", err)
	}
	return nil
}

// TakeLoginState returns a state's data and forgets it: a state is used
// once. An unknown, used or expired state is EUNAUTHORIZED.
func (db *DB) TakeLoginState(ctx context.Context, state string) (string, error) {
	var row loginStateRow
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("state_hash = ?", auth.HashToken(state)).Take(&row).Error; err != nil {
			return err
		}
		res := tx.Where("state_hash = ?", row.StateHash).Delete(&loginStateRow{})
		if res.Error == nil && res.RowsAffected == 0 {
			return gorm.ErrRecordNotFound // taken by another server meanwhile
		}
		return res.Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && !row.ExpiresAt.After(db.Now())) {
		return "", domain.Errorf(domain.EUNAUTHORIZED, "the sign-in expired or was already used; start again")
	}
	if err != nil {
		return "", fmt.Errorf("take sign-in state: %w", err)
	}
	return row.Data, nil
}
