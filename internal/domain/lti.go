package domain

import "time"

// LTIPlatform is an LMS registered as an LTI 1.3 platform: what its
// launches are checked against and where npugrade gets AGS tokens.
type LTIPlatform struct {
	ID       int64
	Name     string
	Issuer   string
	ClientID string
	// DeploymentIDs are the deployments of npugrade at the platform
	// whose launches are accepted.
	DeploymentIDs []string
	AuthLoginURL  string
	TokenURL      string
	JWKSURL       string
	// Audience is the aud of npugrade's client assertion at the token
	// endpoint when it is not TokenURL (Canvas wants its OAuth issuer).
	Audience  string
	CreatedAt time.Time
}

// LTIKey is one of npugrade's own signing keys (PKCS #8 PEM; it never
// leaves the server, only its public half is published).
type LTIKey struct {
	KID        string
	PrivatePEM string
	CreatedAt  time.Time
	RetiredAt  *time.Time
}

// LTIContext is an LMS course (a platform's context) and the cohort it
// is taught in, with its AGS and NRPS service URLs from the last launch.
type LTIContext struct {
	ID             int64
	PlatformID     int64
	ContextID      string
	Title          string
	CohortID       int64
	LineItemsURL   string
	MembershipsURL string
}

// LTIScore is a score owed to a line item of a context: the counted
// score of a learner in an exercise, at Version.
type LTIScore struct {
	ContextPK    int64
	ExerciseID   string
	UserID       int64
	Score        float64
	MaxScore     float64
	Progress     string // AGS gradingProgress: FullyGraded or PendingManual
	SubmissionID string
	ScoredAt     time.Time
	Version      int64
	Attempts     int
}

// Audit actions of LTI registrations and key rotations (npugrade lti,
// /admin/lti).
const (
	AuditLTIPlatformAdded = "lti-platform-added"
	AuditLTIKeyRotated    = "lti-key-rotated"
)
