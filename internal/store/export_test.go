package store

// MarkFailed is markFailed outside a job transition, for the external
// tests of how failure reasons are stored.
func (db *DB) MarkFailed(submissionID, message string) error {
	return db.markFailed(db.gorm, submissionID, message)
}
