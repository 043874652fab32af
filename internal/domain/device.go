package domain

import "time"

// Token scopes. A token with ScopeFull acts with its user's role; one
// with ScopeLearner acts as a learner whatever its user's role (what a
// device sign-in issues: a notebook needs no staff rights).
const (
	ScopeFull    = ""
	ScopeLearner = "learner"
)

// Device grant states (device-code sign-in).
const (
	DevicePending  = "pending"
	DeviceApproved = "approved"
	DeviceDenied   = "denied"
	DeviceConsumed = "consumed" // its token was issued
)

// DeviceGrant is a device-code sign-in: a client waits while a signed-in
// learner approves or denies UserCode in a browser.
type DeviceGrant struct {
	ID         int64
	UserCode   string // 8 letters, without the dash shown to people
	ClientName string
	Status     string
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// Poll outcomes of a device grant (RFC 8628 §3.5's error codes, and
// DeviceIssued for the token).
const (
	PollPending  = "authorization_pending"
	PollSlowDown = "slow_down"
	PollExpired  = "expired_token"
	PollDenied   = "access_denied"
	PollInvalid  = "invalid_grant" // unknown, or its token was issued already
	PollIssued   = "issued"
)

// DevicePoll is what a client's poll of its grant found.
type DevicePoll struct {
	Outcome string // one of the Poll constants
	// Interval is the grant's polling interval, longer after PollSlowDown.
	Interval time.Duration
	// Token and User, for PollIssued: the token is shown this once.
	Token string
	User  User
}
