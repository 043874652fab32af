package domain

import (
	"context"
	"time"
)

// The services below are what the HTTP layers (httpapi and web) need of
// the system besides grading and intake. They are defined here, at the
// centre, so that handlers depend on what they use and never on the
// store that implements them (package store's *DB does).

// SessionService keeps the pages' signed-in browsers. The secret id is in
// the cookie; the store holds only its hash.
type SessionService interface {
	// CreateWebSession signs userID in for ttl and returns the secret id.
	CreateWebSession(ctx context.Context, userID int64, ttl time.Duration) (string, WebSession, error)
	// WebSessionByID resolves a cookie; unknown, expired and revoked
	// sessions are EUNAUTHORIZED.
	WebSessionByID(ctx context.Context, id string) (WebSession, error)
	DeleteWebSession(ctx context.Context, id string) error
	// DeleteExpiredWebSessions removes expired sessions and counts them.
	DeleteExpiredWebSessions(ctx context.Context) (int64, error)
}

// UserService manages accounts and their API tokens (an admin's work).
type UserService interface {
	ListUsers(ctx context.Context) ([]User, error)
	// CreateUser adds a user and returns its first token (shown once).
	// A bad name or role is EINVALID, a taken name ECONFLICT.
	CreateUser(ctx context.Context, name string, role Role) (User, string, error)
	// Tokens lists every token without its secret.
	Tokens(ctx context.Context) ([]TokenInfo, error)
	CreateToken(ctx context.Context, userID int64) (string, error)
	RevokeToken(ctx context.Context, tokenID int64) error
	// UserByToken resolves an API token; an unknown or revoked one is
	// EUNAUTHORIZED.
	UserByToken(ctx context.Context, token string) (User, error)
}

// AuditLog records who did what, and lists it for admins.
type AuditLog interface {
	Audit(ctx context.Context, actor User, action, subject, detail string) error
	// AuditEvents lists the newest events first, at most limit.
	AuditEvents(ctx context.Context, limit int) ([]AuditEvent, error)
}

// ReportService answers the instructor dashboard: counts, latency,
// per-question statistics and the gradebook over every learner. Callers
// check that the reader is staff; the reports are not redacted.
type ReportService interface {
	SubmissionsPerDay(ctx context.Context, days int, loc *time.Location) ([]DayCount, error)
	// QueueHistory samples the queue depth every step over window.
	QueueHistory(ctx context.Context, window, step time.Duration) ([]QueuePoint, error)
	GradingLatency(ctx context.Context, n int) (Latency, error)
	RecentSubmissions(ctx context.Context, limit int) ([]Submission, error)
	// Gradebook streams one row per learner × exercise to emit; an error
	// from emit stops it and is returned.
	Gradebook(ctx context.Context, f GradebookFilter, emit func(GradebookRow) error) error
	// GradebookLearners counts the learners Gradebook lists for f (its
	// paging aside): what a page of the gradebook is out of.
	GradebookLearners(ctx context.Context, f GradebookFilter) (int, error)
	// QuestionStats and CommonFailures cover the scored submissions of an
	// exercise, of one section's learners when section is not "".
	QuestionStats(ctx context.Context, exerciseID, section string) ([]QuestionStat, error)
	CommonFailures(ctx context.Context, exerciseID, section string, limit int) ([]FailureStat, error)
	// Regrades lists past and open regrades, newest first.
	Regrades(ctx context.Context, limit int) ([]RegradeSummary, error)
}
