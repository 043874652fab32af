package store

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
