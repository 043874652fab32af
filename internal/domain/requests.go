package domain

import "time"

// FeedbackRelease is an exercise's feedback released by an instructor, to
// every learner (All) or to one (policy feedback "on_release").
type FeedbackRelease struct {
	Exercise string `json:"exercise"`
	All      bool   `json:"all"`
	// Cohort is the cohort a release to everyone is for (its slug): an
	// instructor's release reaches the cohorts they teach; "" is every
	// cohort (an admin's, or one from the command line).
	Cohort     string    `json:"cohort,omitempty"`
	Learner    string    `json:"learner,omitempty"`
	ReleasedBy string    `json:"released_by"`
	ReleasedAt time.Time `json:"released_at"`
}

// Regrade request states.
const (
	RegradeRequestOpen     = "open"
	RegradeRequestAnswered = "answered"
)

// RegradeRequest is a learner's question about one graded cell of their
// submission, and the instructor's answer.
type RegradeRequest struct {
	ID           int64      `json:"id"`
	SubmissionID string     `json:"submission_id"`
	Exercise     string     `json:"exercise"`
	CellID       string     `json:"cell"`
	Learner      string     `json:"learner"`
	Message      string     `json:"message"`
	State        string     `json:"state"`
	Answer       string     `json:"answer,omitempty"`
	AnsweredBy   string     `json:"answered_by,omitempty"`
	AnsweredAt   *time.Time `json:"answered_at,omitempty"`
	// OverridePoints is the cell's new points when the answer changed them.
	OverridePoints *float64  `json:"override_points,omitempty"`
	OverrideReason string    `json:"override_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// RegradeRequestFilter selects regrade requests ("" / 0: any).
type RegradeRequestFilter struct {
	SubmissionID string
	UserID       int64
	State        string
}
