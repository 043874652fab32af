package domain

import "time"

// Which graded submission of a learner counts for an exercise.
const (
	CountBest   = "best"   // the highest score (the earliest of equal ones)
	CountLatest = "latest" // the most recent graded submission
)

// GradebookFilter selects gradebook rows.
type GradebookFilter struct {
	// Exercises are the exercise ids a row is written for, in order (the
	// catalog's); a learner without a graded submission still gets a row.
	Exercises []string
	// ExerciseID keeps one exercise ("" = all of Exercises).
	ExerciseID string
	// Learner keeps learners whose login or full name contains it
	// (case-insensitive).
	Learner string
	// Section keeps the learners of one section ("" = all).
	Section string
	// Cohort keeps the learner members of one cohort and their
	// submissions made in it (0 = every learner, every submission).
	Cohort int64
	// Counts returns an exercise's policy, CountBest or CountLatest; nil
	// or "" means CountBest.
	Counts func(exerciseID string) string
	// MaxLearners, when positive, keeps only the first learners (by
	// name) and the database reads only their submissions: a page of
	// the gradebook costs its learners, not the whole class.
	MaxLearners int
	// Offset, with MaxLearners, skips the first learners: a later page.
	Offset int
	// Questions fills each row's Points (the counted submission's points
	// per question); the store reads them a bounded batch of learners at
	// a time.
	Questions bool
}

// GradebookRow is one learner × exercise.
type GradebookRow struct {
	UserID  int64
	Learner string
	// FullName is the learner's name as the roster gives it ("" when
	// none was imported); Learner is the login.
	FullName   string
	ExerciseID string
	Policy     string
	// Section is the learner's section (from a roster import; may be empty).
	Section string
	// Attempts counts scored submissions (graded, or graded for their
	// automatic part and waiting for manual grading); 0 means no score yet.
	Attempts int
	Score    float64
	// RawScore is Score before the late penalty (equal when on time).
	RawScore float64
	MaxScore float64
	// SubmissionID is the submission that counts, and Status its status:
	// StatusGraded, or StatusNeedsManual while a manual cell waits for a
	// person (Score is then the automatic part's); "" without one.
	SubmissionID string
	Status       string
	GradedAt     *time.Time
	// ManualWaiting counts the learner's scored submissions to the
	// exercise (the counted one included) that wait for manual grading.
	ManualWaiting int
	// Points are the counted submission's points by question (cell id),
	// of its counted cells; filled only when the filter asks for them.
	Points map[string]float64
}

// Late reports whether the counted score is less than the points got: a
// late penalty applied.
func (r GradebookRow) Late() bool { return r.Attempts > 0 && r.RawScore-r.Score > 1e-9 }

// ManualPending reports whether the counted submission still waits for
// manual grading (its score is the automatic part's).
func (r GradebookRow) ManualPending() bool { return r.Status == StatusNeedsManual }

// UncountedManualPending reports whether, under the best-score policy, a
// submission that does not count now waits for manual grading: once a
// person grades it, it may become the best and so the counted score.
func (r GradebookRow) UncountedManualPending() bool {
	return r.Policy == CountBest && !r.ManualPending() && r.ManualWaiting > 0
}

// DayCount is the number of submissions created on one UTC day.
type DayCount struct {
	Day   time.Time
	Count int
}

// Latency is grading latency (submitted to graded) over recent submissions.
type Latency struct {
	N             int
	P50, P90, P99 time.Duration
	Max           time.Duration
}

// QuestionStat is how one graded cell of an exercise fares over every
// graded submission where it counted.
type QuestionStat struct {
	CellID   string
	Position int
	Total    int
	Passed   int
}

// FailureStat is one (cell, verdict, message) and how often it happened.
type FailureStat struct {
	CellID  string
	Verdict string
	Message string
	Count   int
}

// QueuePoint is how many submissions waited for a runner at one time.
type QueuePoint struct {
	At      time.Time
	Waiting int
}

// SubmissionFilter selects submissions for listings.
type SubmissionFilter struct {
	UserID     int64 // 0 = all users
	ExerciseID string
	Status     string // "" = any
	// Checks lists the uncounted checks instead of the submissions.
	Checks bool
	Limit  int
	// After continues a listing past this submission (cursor paging,
	// stable while new submissions arrive): only older ones, or as old
	// with a smaller id, are listed.
	After *Submission
}
