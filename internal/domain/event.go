package domain

import (
	"encoding/json"
	"time"
)

// Event kinds: what the outbox records, in the transaction that causes it.
const (
	EventGraded         = "graded"          // a submission was scored
	EventFailed         = "failed"          // a submission failed for good (infrastructure, or canceled)
	EventRegradeApplied = "regrade-applied" // a staged regrade replaced scores
)

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
