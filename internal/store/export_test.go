package store

import "time"

// MarkFailed is markFailed outside a job transition, for the external
// tests of how failure reasons are stored.
func (db *DB) MarkFailed(submissionID, message string) error {
	return db.markFailed(db.gorm, submissionID, message)
}

// AuthKept is how many token checks db keeps, and whether it would serve
// them now (its listener fresh).
func (db *DB) AuthKept() (int, bool) {
	db.auth.mu.Lock()
	defer db.auth.mu.Unlock()
	return db.auth.n, db.auth.fresh != nil && db.auth.fresh()
}

// AuthKeptAddrs is the client addresses of the token checks kept.
func (db *DB) AuthKeptAddrs() map[string]bool {
	db.auth.mu.Lock()
	defer db.auth.mu.Unlock()
	out := map[string]bool{}
	for addr, byKey := range db.auth.entries {
		if len(byKey) > 0 {
			out[addr] = true
		}
	}
	return out
}

// HoldIntake stops intake's statements on Postgres from starting, so that
// uploads queue up; the returned func lets them go, written together,
// and waits until n uploads are queued first.
func (db *DB) HoldIntake() (release func(n int)) {
	b := &db.intake
	b.mu.Lock()
	b.flushers += intakeFlushers
	b.mu.Unlock()
	return func(n int) {
		for {
			b.mu.Lock()
			if len(b.pending) >= n {
				b.flushers -= intakeFlushers
				if len(b.pending) > 0 {
					b.flushers++
					go db.flushIntake()
				}
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}
}

// IntakeBatches is how many uploads statements of several wrote, and how
// many such statements failed and were written again one by one.
func (db *DB) IntakeBatches() (batched, retried int64) {
	b := &db.intake
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.batched, b.retried
}
