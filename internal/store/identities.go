package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

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
		return db.linkNew(tx, &u, issuer, subject, login, role)
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
	return toUser(u), nil
}

// linkNew links a first-seen identity to the user named login, created
// with role when there is none.
func (db *DB) linkNew(tx *gorm.DB, u *userRow, issuer, subject, login string, role domain.Role) error {
	err := tx.Where("name = ?", login).Take(u).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		*u = userRow{Name: login, Role: string(role), CreatedAt: db.Now()}
		if err := tx.Create(u).Error; err != nil {
			return fmt.Errorf("insert user %q: %w", login, err)
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
