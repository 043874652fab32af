package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Advisory lock keys (Postgres pg_advisory_lock): one per task that only
// one server process at a time should run.
const (
	// LockReaper is held by the process returning expired leases.
	LockReaper int64 = 727275
)

// Exclusively runs fn only if no other process holds the advisory lock
// key, holding it while fn runs, and reports whether fn ran. On Postgres
// the lock is a session lock on one pooled connection (fn's own queries
// use others); on SQLite there is one process and fn always runs.
func (db *DB) Exclusively(ctx context.Context, key int64, fn func(context.Context) error) (ran bool, err error) {
	if db.Dialect != "postgres" {
		return true, fn(ctx)
	}
	err = db.gorm.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		var got bool
		if err := conn.Raw("SELECT pg_try_advisory_lock(?)", key).Scan(&got).Error; err != nil {
			return fmt.Errorf("advisory lock %d: %w", key, err)
		}
		if !got {
			return nil
		}
		// Unlock even when ctx has ended: the connection returns to the pool.
		defer conn.WithContext(context.WithoutCancel(ctx)).Exec("SELECT pg_advisory_unlock(?)", key)
		ran = true
		return fn(ctx)
	})
	return ran, err
}
