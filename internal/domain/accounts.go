package domain

import "time"

// Audit actions: what the audit log records.
const (
	AuditLogin         = "login"
	AuditLoginFailed   = "login-failed"
	AuditUserCreated   = "user-created"
	AuditTokenCreated  = "token-created"
	AuditTokensRevoked = "tokens-revoked"
	AuditTokenRevoked  = "token-revoked"
	AuditDeviceDecided = "device-sign-in"
	AuditRegradeApply  = "regrade-applied"
	AuditRunnerDrain   = "runner-drain"
	AuditRunnerResume  = "runner-resume"
	// Manual grading, feedback release, regrade requests.
	AuditManualGrade     = "manual-grade"
	AuditRubricChanged   = "rubric-changed"
	AuditFeedbackRelease = "feedback-released"
	AuditRegradeRequest  = "regrade-requested"
	AuditRegradeAnswer   = "regrade-answered"
	AuditScoreOverride   = "score-override"
)

// AuditEvent is one entry of the audit log.
type AuditEvent struct {
	ID      int64
	At      time.Time
	ActorID int64  // 0: no signed-in user (the command line, a failed sign-in)
	Actor   string // the actor's name, or "cli"
	Action  string
	Subject string // whom or what it was done to
	Detail  string
}

// WebSession is a signed-in browser.
type WebSession struct {
	User      User
	CSRFToken string
	ExpiresAt time.Time
}

// TokenInfo describes an API token without its secret.
type TokenInfo struct {
	ID         int64
	UserID     int64
	Prefix     string
	Scope      string // ScopeFull or ScopeLearner
	Label      string // the client it was issued to (device sign-in), or ""
	CreatedAt  time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}
