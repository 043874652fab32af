package domain

import (
	"encoding/json"
	"time"
)

// Event kinds: what the outbox records, in the transaction that causes it.
const (
	EventGraded         = "graded"          // a submission was scored
	EventChecked        = "checked"         // a check (uncounted) was scored: no score follows it
	EventFailed         = "failed"          // a submission failed for good (infrastructure, or canceled)
	EventRegradeApplied = "regrade-applied" // a staged regrade replaced scores
	EventScoreChanged   = "score-changed"   // a scored submission's score changed (ScoreChanged)
)

// Why a score changed: the doors a score changes through after the first
// grade (ScoreChanged.Reason).
const (
	ScoreReasonManual    = "manual"         // a person graded a manual cell
	ScoreReasonOverride  = "override"       // an instructor set a cell's points
	ScoreReasonRequest   = "request-answer" // an override answering a regrade request
	ScoreReasonRubric    = "rubric"         // a changed rubric re-applied at start
	ScoreReasonExtension = "extension"      // an extension granted or revoked
	ScoreReasonRegrade   = "regrade"        // a staged regrade applied
)

// ScoreChanged is the payload of a score-changed event.
type ScoreChanged struct {
	Submission string `json:"submission"`
	Exercise   string `json:"exercise"`
	LearnerID  int64  `json:"learner_id"`
	// OldScore is nil when the submission had none (its grading had failed).
	OldScore  *float64 `json:"old_score"`
	NewScore  float64  `json:"new_score"`
	MaxScore  float64  `json:"max_score"`
	OldStatus string   `json:"old_status"`
	NewStatus string   `json:"new_status"`
	Reason    string   `json:"reason"`
	Actor     string   `json:"actor"`
}

// Event is one durable notification: written to the outbox with the change
// it reports, delivered at least once to the notifier after the commit
// (package events), so a crash between the two loses nothing.
type Event struct {
	ID   int64
	Kind string
	// Subject is what it is about: a submission id, or a regrade id.
	Subject   string
	Payload   json.RawMessage
	Attempts  int
	CreatedAt time.Time
}

// EventFilter selects events of the outbox for reading.
type EventFilter struct {
	After      int64    // only events with a greater id (the cursor)
	Kinds      []string // any of these kinds; none: all
	Submission string   // about this submission
	LearnerID  int64    // about a submission of this learner
	Exercise   string   // about a submission of this exercise
	Since      time.Time
	Limit      int // default 100, at most 1000
}
