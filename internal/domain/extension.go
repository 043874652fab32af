package domain

import (
	"encoding/json"
	"time"
)

// Extension is one learner's own deadline for one exercise.
// LatePenalty is the schedule after that deadline as the exercise writes
// it (JSON list of {after, multiplier}); nil keeps the exercise's.
type Extension struct {
	ID          int64           `json:"id"`
	ExerciseID  string          `json:"exercise"`
	UserID      int64           `json:"-"`
	Learner     string          `json:"learner"`
	Deadline    time.Time       `json:"deadline"`
	LatePenalty json.RawMessage `json:"late_penalty,omitempty"`
	GrantedBy   string          `json:"granted_by"`
	GrantedAt   time.Time       `json:"granted_at"`
	RevokedBy   string          `json:"revoked_by,omitempty"`
	RevokedAt   *time.Time      `json:"revoked_at,omitempty"`
}
