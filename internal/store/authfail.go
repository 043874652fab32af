package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Failed authentications per client address (migration 00009), shared by
// every server on the database so that a guesser spreading its tries over
// several servers is throttled as one.

type authFailureRow struct {
	Addr        string `gorm:"primaryKey"`
	WindowStart time.Time
	Failures    int
}

func (authFailureRow) TableName() string { return "auth_failures" }

// maxAddrBytes bounds a stored client address (an IP with a zone at most).
const maxAddrBytes = 128

// AuthFailures returns how many authentications failed from addr in its
// current window and when that window started; zero when none did
// within window.
func (db *DB) AuthFailures(ctx context.Context, addr string, window time.Duration) (int, time.Time, error) {
	var row authFailureRow
	err := db.gorm.WithContext(ctx).Where("addr = ?", clipAddr(addr)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read failed authentications of %s: %w", addr, err)
	}
	if db.Now().Sub(row.WindowStart) >= window {
		return 0, time.Time{}, nil
	}
	return row.Failures, row.WindowStart, nil
}

// RecordAuthFailure counts one failed authentication from addr and
// returns the failures in its window (a new window when the last one is
// over) and the window's start. Counting is one upsert: concurrent
// failures on any server each count.
func (db *DB) RecordAuthFailure(ctx context.Context, addr string, window time.Duration) (int, time.Time, error) {
	addr = clipAddr(addr)
	now := db.Now()
	expired := now.Add(-window)
	var row authFailureRow
	err := db.InTx(ctx, func(tx *Tx) error {
		err := tx.g.Exec(`INSERT INTO auth_failures (addr, window_start, failures) VALUES (?, ?, 1)
ON CONFLICT (addr) DO UPDATE SET
  failures = CASE WHEN auth_failures.window_start <= ? THEN 1 ELSE auth_failures.failures + 1 END,
  window_start = CASE WHEN auth_failures.window_start <= ? THEN excluded.window_start ELSE auth_failures.window_start END`,
			addr, now, expired, expired).Error
		if err != nil {
			return err
		}
		return tx.g.Where("addr = ?", addr).Take(&row).Error
	})
	db.auth.forgetAddr(addr) // kept checks hold the address's failures
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("count a failed authentication of %s: %w", addr, err)
	}
	return row.Failures, row.WindowStart, nil
}

// PruneAuthFailures forgets the addresses whose window ended before
// window ago.
func (db *DB) PruneAuthFailures(ctx context.Context, window time.Duration) error {
	err := db.gorm.WithContext(ctx).Where("window_start < ?", db.Now().Add(-window)).Delete(&authFailureRow{}).Error
	db.auth.forget()
	if err != nil {
		return fmt.Errorf("prune failed authentications: %w", err)
	}
	return nil
}

func clipAddr(addr string) string {
	if len(addr) > maxAddrBytes {
		addr = addr[:maxAddrBytes]
	}
	return Printable(addr)
}
