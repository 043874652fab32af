package domain

import "time"

// Regrade states and modes.
const (
	RegradeStaged    = "staged" // items are still being computed (re-executions queued)
	RegradeReady     = "ready"  // every item has its new score: preview complete
	RegradeApplied   = "applied"
	RegradeDiscarded = "discarded"

	RegradeRecompare = "recompare"
	RegradeReexecute = "reexecute"

	RegradeItemPending = "pending"
	RegradeItemDone    = "done"
	RegradeItemFailed  = "failed"
)

// RegradeSummary is one past or open regrade, without its items.
type RegradeSummary struct {
	ID         int64
	ExerciseID string
	Mode       string
	State      string
	Items      int
	CreatedAt  time.Time
	DecidedAt  *time.Time
}

// Regrade is a staged regrade with its items.
type Regrade struct {
	ID              int64         `json:"id"`
	ExerciseID      string        `json:"exercise"`
	Mode            string        `json:"mode"`
	State           string        `json:"state"`
	ExerciseVersion string        `json:"exercise_version"`
	GraderVersion   string        `json:"grader_version"`
	CreatedAt       time.Time     `json:"created_at"`
	DecidedAt       *time.Time    `json:"decided_at,omitempty"`
	Items           []RegradeItem `json:"items"`
	// SkippedFailed counts the exercise's failed submissions a recompare
	// regrade left out: they have no run to score again, and a reexecute
	// regrade queues them (always 0 for a reexecute regrade).
	SkippedFailed int `json:"skipped_failed"`
}

// RegradeItem is one affected submission: its score now and the new one.
type RegradeItem struct {
	SubmissionID   string       `json:"submission_id"`
	UserID         int64        `json:"-"`
	Learner        string       `json:"learner"`
	State          string       `json:"state"`
	JobID          *int64       `json:"job_id,omitempty"`
	OldScore       float64      `json:"old_score"`
	OldMaxScore    float64      `json:"old_max_score"`
	OldVersion     string       `json:"old_grader_version"`
	NewScore       float64      `json:"new_score"`
	NewMaxScore    float64      `json:"new_max_score"`
	Change         float64      `json:"change"`
	Message        string       `json:"message,omitempty"`
	Profile        string       `json:"profile,omitempty"`
	EnvFingerprint string       `json:"env_fingerprint,omitempty"`
	Cells          []CellResult `json:"cells,omitempty"`
	// OldStatus is the submission's status when the regrade was staged:
	// StatusFailed means it had no score (OldScore and OldMaxScore are 0).
	OldStatus string `json:"old_status,omitempty"`
}
