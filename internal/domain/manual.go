package domain

import "time"

// ManualGrade is one manual grading decision on one cell of a submission:
// a rubric grade of a manual cell, an instructor's override
// of any cell's points, or a rubric change re-applied.
type ManualGrade struct {
	ID           int64     `json:"id"`
	SubmissionID string    `json:"submission_id"`
	CellID       string    `json:"cell"`
	Kind         string    `json:"kind"`
	Items        []string  `json:"items"`
	Adjustment   float64   `json:"adjustment"`
	Comment      string    `json:"comment"`
	Points       float64   `json:"points"`
	MaxPoints    float64   `json:"max_points"`
	GraderID     int64     `json:"-"`
	Grader       string    `json:"grader"`
	GradedAt     time.Time `json:"graded_at"`
}
