package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// deviceGrantRow is a device-code sign-in (migration 00027).
type deviceGrantRow struct {
	ID           int64
	DeviceHash   string
	UserCode     string
	ClientName   string
	ClientAddr   string
	Status       string
	UserID       *int64
	IntervalS    int `gorm:"column:interval_s"`
	Polls        int
	LastPolledAt *time.Time
	CreatedAt    time.Time
	ExpiresAt    time.Time
}

func (deviceGrantRow) TableName() string { return "device_grants" }

func (r deviceGrantRow) grant() domain.DeviceGrant {
	return domain.DeviceGrant{ID: r.ID, UserCode: r.UserCode, ClientName: r.ClientName, Status: r.Status,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
}

// NewDeviceGrant is a grant to record: the device code's hash, the
// normalised user code, and the client that asked.
type NewDeviceGrant struct {
	DeviceHash, UserCode, ClientName, ClientAddr string
	Interval, TTL                                time.Duration
	// PerAddr grants at most may be created from ClientAddr per Window.
	PerAddr int
	Window  time.Duration
}

// deviceGrantKeep is how long an expired grant is kept (its user code
// stays taken, its client is told expired_token) before it is deleted.
const deviceGrantKeep = time.Hour

// CreateDeviceGrant records g. An address that created PerAddr grants
// within Window is ERATELIMIT; a user code already taken is ECONFLICT
// (the caller draws another). Expired grants older than deviceGrantKeep
// are deleted on the way, so the table stays as small as its traffic.
func (db *DB) CreateDeviceGrant(ctx context.Context, g NewDeviceGrant) (domain.DeviceGrant, error) {
	now := db.Now()
	row := deviceGrantRow{DeviceHash: g.DeviceHash, UserCode: g.UserCode, ClientName: g.ClientName, ClientAddr: clipAddr(g.ClientAddr),
		Status: domain.DevicePending, IntervalS: int(g.Interval / time.Second), CreatedAt: now, ExpiresAt: now.Add(g.TTL)}
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("expires_at < ?", now.Add(-deviceGrantKeep)).Delete(&deviceGrantRow{}).Error; err != nil {
			return fmt.Errorf("delete expired device grants: %w", err)
		}
		var n int64
		if err := tx.Model(&deviceGrantRow{}).Where("client_addr = ? AND created_at > ?", row.ClientAddr, now.Add(-g.Window)).
			Count(&n).Error; err != nil {
			return fmt.Errorf("count device grants: %w", err)
		}
		if g.PerAddr > 0 && n >= int64(g.PerAddr) {
			return domain.Errorf(domain.ERATELIMIT, "too many sign-in codes from this address; try again in %s", g.Window)
		}
		if err := tx.Create(&row).Error; err != nil {
			if errors.Is(err, gorm.ErrDuplicatedKey) {
				return domain.Errorf(domain.ECONFLICT, "user code taken")
			}
			return fmt.Errorf("insert device grant: %w", err)
		}
		return nil
	})
	if err != nil {
		return domain.DeviceGrant{}, err
	}
	return row.grant(), nil
}

// DeviceGrantByCode finds the grant of a normalised user code; an
// unknown one is ENOTFOUND.
func (db *DB) DeviceGrantByCode(ctx context.Context, userCode string) (domain.DeviceGrant, error) {
	var row deviceGrantRow
	err := db.gorm.WithContext(ctx).Where("user_code = ?", userCode).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.DeviceGrant{}, domain.Errorf(domain.ENOTFOUND, "no sign-in code %s", userCode)
	}
	if err != nil {
		return domain.DeviceGrant{}, fmt.Errorf("find device grant: %w", err)
	}
	return row.grant(), nil
}

// DecideDeviceGrant approves (for userID) or denies the pending grant of
// userCode. One that is unknown, expired or decided already is
// ECONFLICT: only a pending grant can be decided, once.
func (db *DB) DecideDeviceGrant(ctx context.Context, userCode string, userID int64, approve bool) error {
	status := domain.DeviceDenied
	if approve {
		status = domain.DeviceApproved
	}
	res := db.gorm.WithContext(ctx).Model(&deviceGrantRow{}).
		Where("user_code = ? AND status = ? AND expires_at > ?", userCode, domain.DevicePending, db.Now()).
		Updates(map[string]any{"status": status, "user_id": userID})
	if res.Error != nil {
		return fmt.Errorf("decide device grant: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.Errorf(domain.ECONFLICT, "the sign-in code is unknown, expired or used")
	}
	return nil
}

// DeviceSlack is how much earlier than its interval a poll may arrive
// without being slow_down: a client that waits the interval between
// polls sees network delays vary.
const DeviceSlack = time.Second

// deviceSlowDown is what slow_down adds to a grant's interval (RFC 8628
// §3.5).
const deviceSlowDown = 5 * time.Second

// PollDeviceGrant answers a client's poll of the grant whose device code
// hashes to deviceHash (see domain.DevicePoll). An approved grant is
// consumed by the poll that issues its token, in one transaction with
// the token: exactly one poll, on any server, receives it.
func (db *DB) PollDeviceGrant(ctx context.Context, deviceHash string) (domain.DevicePoll, error) {
	var out domain.DevicePoll
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var row deviceGrantRow
		err := tx.Where("device_hash = ?", deviceHash).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			out.Outcome = domain.PollInvalid
			return nil
		}
		if err != nil {
			return fmt.Errorf("find device grant: %w", err)
		}
		out, err = db.pollGrant(tx, row)
		return err
	})
	return out, err
}

func (db *DB) pollGrant(tx *gorm.DB, row deviceGrantRow) (domain.DevicePoll, error) {
	now := db.Now()
	out := domain.DevicePoll{Interval: time.Duration(row.IntervalS) * time.Second}
	switch {
	case row.Status == domain.DeviceConsumed:
		out.Outcome = domain.PollInvalid
	case row.Status == domain.DeviceDenied:
		out.Outcome = domain.PollDenied
	case !now.Before(row.ExpiresAt):
		out.Outcome = domain.PollExpired
	case row.Status == domain.DeviceApproved:
		return db.issueGrant(tx, row, out)
	default:
		return db.pollPending(tx, row, out)
	}
	return out, nil
}

// pollPending counts a poll of a pending grant: one within its interval
// of the last (or racing another server's) is slow_down, and lengthens
// the interval.
func (db *DB) pollPending(tx *gorm.DB, row deviceGrantRow, out domain.DevicePoll) (domain.DevicePoll, error) {
	now := db.Now()
	early := row.LastPolledAt != nil && now.Sub(*row.LastPolledAt) < out.Interval-DeviceSlack
	if !early {
		res := tx.Model(&deviceGrantRow{}).Where("id = ? AND polls = ?", row.ID, row.Polls).
			Updates(map[string]any{"polls": row.Polls + 1, "last_polled_at": now})
		if res.Error != nil {
			return out, fmt.Errorf("count device poll: %w", res.Error)
		}
		if res.RowsAffected == 1 {
			out.Outcome = domain.PollPending
			return out, nil
		}
	}
	out.Interval += deviceSlowDown
	err := tx.Model(&deviceGrantRow{}).Where("id = ?", row.ID).
		Updates(map[string]any{"polls": gorm.Expr("polls + 1"), "last_polled_at": now,
			"interval_s": gorm.Expr("interval_s + ?", int(deviceSlowDown/time.Second))}).Error
	if err != nil {
		return out, fmt.Errorf("slow device poll down: %w", err)
	}
	out.Outcome = domain.PollSlowDown
	return out, nil
}

// issueGrant consumes an approved grant and issues its learner token.
func (db *DB) issueGrant(tx *gorm.DB, row deviceGrantRow, out domain.DevicePoll) (domain.DevicePoll, error) {
	res := tx.Model(&deviceGrantRow{}).Where("id = ? AND status = ?", row.ID, domain.DeviceApproved).
		Update("status", domain.DeviceConsumed)
	if res.Error != nil {
		return out, fmt.Errorf("consume device grant: %w", res.Error)
	}
	if res.RowsAffected == 0 || row.UserID == nil {
		out.Outcome = domain.PollInvalid // another poll took it
		return out, nil
	}
	var u userRow
	if err := tx.Where("id = ?", *row.UserID).Take(&u).Error; err != nil {
		return out, fmt.Errorf("find the approving user: %w", err)
	}
	token, _, err := db.createToken(tx, u.ID, domain.ScopeLearner, row.ClientName)
	if err != nil {
		return out, err
	}
	out.Outcome, out.Token, out.User = domain.PollIssued, token, toUser(u)
	out.User.Role = domain.RoleLearner
	return out, nil
}
