package domain

import (
	"encoding/json"
	"time"
)

// Role says what a user may do. A runner token is accepted only on runner routes.
type Role string

// Roles.
const (
	RoleLearner    Role = "learner"
	RoleInstructor Role = "instructor"
	RoleAdmin      Role = "admin"
	RoleRunner     Role = "runner"
)

// Valid reports whether r is a known role.
func (r Role) Valid() bool {
	switch r {
	case RoleLearner, RoleInstructor, RoleAdmin, RoleRunner:
		return true
	}
	return false
}

// CanSeeAll reports whether r may read every learner's submissions.
func (r Role) CanSeeAll() bool { return r == RoleInstructor || r == RoleAdmin }

// User is a person or a runner holding API tokens.
type User struct {
	ID        int64
	Name      string
	Role      Role
	CreatedAt time.Time
	// FullName and Section come from a roster import; both
	// may be empty.
	FullName string
	Section  string
}

// Submission statuses, as the API reports them.
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
	StatusGraded  = "graded"
	StatusFailed  = "failed" // infrastructure failure after the last attempt
	// StatusNeedsManual: the automatic part is graded (score and cells),
	// and a manual cell still waits for a person.
	StatusNeedsManual = "needs-manual"
)

// Scored reports whether a submission in status has a score (the
// automatic part at least).
func Scored(status string) bool { return status == StatusGraded || status == StatusNeedsManual }

// Verdicts of one graded cell.
const (
	VerdictPass             = "pass"
	VerdictMismatch         = "mismatch"
	VerdictError            = "error"
	VerdictTimeout          = "timeout"
	VerdictNotRun           = "not-run"
	VerdictMissing          = "missing"
	VerdictTampered         = "tampered"
	VerdictIncompleteOutput = "incomplete-output"
	VerdictMemoryLimit      = "memory-limit"
	// VerdictNeedsManual: a manual cell no person has graded yet;
	// VerdictManual: graded by a person against its rubric.
	VerdictNeedsManual = "needs-manual"
	VerdictManual      = "manual"
)

// Submission is one uploaded notebook for one exercise.
type Submission struct {
	ID              string
	UserID          int64
	UserName        string
	ExerciseID      string
	ExerciseVersion string
	NotebookSHA256  string
	Status          string
	Score           float64
	// RawScore is Score before the late penalty (equal when on time).
	RawScore       float64
	MaxScore       float64
	Message        string
	Profile        string
	RunnerID       string
	EnvFingerprint string
	GraderVersion  string
	CreatedAt      time.Time
	StartedAt      *time.Time
	GradedAt       *time.Time
	Cells          []CellResult
	// Check is true for an uncounted check: graded like a submission but
	// no attempt, not in the gradebook, no score event.
	Check bool
	// CohortID is the cohort the submission was made in (decided at
	// intake; migration 00029).
	CohortID int64
}

// CellResult is the verdict of one graded cell.
type CellResult struct {
	CellID    string  `json:"id"`
	Verdict   string  `json:"verdict"`
	Points    float64 `json:"points"`
	MaxPoints float64 `json:"max_points"`
	Message   string  `json:"message"`
	// Counted is false for cells that do not count on the runner's profile
	// (an NPU-only question graded on a CPU runner).
	Counted  bool   `json:"counted"`
	Observed string `json:"observed,omitempty"`
	Expected string `json:"expected,omitempty"`
	Diff     string `json:"diff,omitempty"`
}

// Job states. Only the queue package writes them.
const (
	JobQueued    = "queued"
	JobLeased    = "leased"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCanceled  = "canceled"
)

// Job kinds.
const (
	JobGrade     = "grade"
	JobReference = "reference"
	// JobRegrade re-executes a graded submission for a staged regrade; its
	// result goes to the regrade, not to the submission.
	JobRegrade = "regrade"
)

// Requirement is what a job or a cell needs of a runner: the `requires`
// object of exercise.json and of the grader cell metadata
// (docs/grader-metadata.md). Empty fields need nothing. envprobe's
// Report.Satisfies decides whether a runner meets it.
type Requirement struct {
	// Accelerator is "" (any runner), "cpu" (the cpu profile, for cells whose
	// output is recorded on CPU torch) or "npu" (any supported NPU profile).
	Accelerator string `json:"accelerator,omitempty"`
	// Product is "A2", "A3" or "950"; it implies an NPU.
	Product string `json:"product,omitempty"`
	// TorchAir is the minimum TorchAir release, e.g. "7.3.0"; it implies an
	// NPU. Releases compare numerically, so "26.0.0" satisfies "7.3.0".
	TorchAir string `json:"torchair,omitempty"`
	// Feature is a feature name from the version table, e.g.
	// "deadlock_check"; it implies an NPU.
	Feature string `json:"feature,omitempty"`
	// Python and Torch are the environment an exercise was written for:
	// minimum versions, ">=3.10" and ">=2.1" (a bare "2.1" means the
	// same). They need no accelerator: the cpu grading environment and an
	// NPU runner's both satisfy them; Debian's torch 1.13 does not.
	Python string `json:"python,omitempty"`
	Torch  string `json:"torch,omitempty"`
	// Backend is a torch.compile backend the runner's torch must list,
	// e.g. "npugraph_ex" (the cpu environment has a stand-in of it).
	Backend string `json:"backend,omitempty"`
}

// IsZero reports whether r asks for nothing.
func (r Requirement) IsZero() bool { return r == Requirement{} }

// NeedsNPU reports whether only an NPU runner can satisfy r.
func (r Requirement) NeedsNPU() bool {
	return r.Accelerator == "npu" || r.Product != "" || r.TorchAir != "" || r.Feature != ""
}

// Lease is a claimed job as the runner sees it.
type Lease struct {
	JobID          int64           `json:"job_id"`
	Token          string          `json:"lease_token"`
	ExpiresAt      time.Time       `json:"lease_expires_at"`
	Attempt        int             `json:"attempt"`
	Kind           string          `json:"kind"`
	ExerciseID     string          `json:"exercise"`
	SubmissionID   string          `json:"submission_id,omitempty"`
	Notebook       json.RawMessage `json:"notebook"`
	CellTimeout    float64         `json:"cell_timeout_s"`
	JobTimeout     float64         `json:"job_timeout_s"`
	Requires       Requirement     `json:"requires"`
	ExerciseDigest string          `json:"exercise_version"`
}

// ExecutionResult is what a runner sends back for a job.
type ExecutionResult struct {
	// Notebook is the executed notebook (nil when execution never produced one).
	Notebook json.RawMessage `json:"notebook,omitempty"`
	// Log is the executor's stderr tail, for instructors.
	Log string `json:"log,omitempty"`
	// Profile and EnvFingerprint identify the runner environment.
	Profile        string `json:"profile"`
	EnvFingerprint string `json:"env_fingerprint,omitempty"`
	// Killed is set when the whole run hit its deadline or a limit and was
	// killed; Reason says which ("job timeout 5m0s exceeded").
	Killed bool   `json:"killed,omitempty"`
	Reason string `json:"reason,omitempty"`
	// MemoryLimitHit and the cell it happened in, when known.
	MemoryLimitHit bool   `json:"memory_limit_hit,omitempty"`
	InfraError     string `json:"infra_error,omitempty"`
	DurationMS     int64  `json:"duration_ms"`
}

// Job is one unit of runner work: execute a notebook (a learner's
// submission, a staged regrade's re-execution, or an answer whose outputs
// become a reference). Package queue decides its transitions; package
// store keeps it in the jobs table.
type Job struct {
	ID int64
	// SubmissionID is the submission a grade job scores ("" for reference
	// and regrade jobs: a regrade's result goes to the regrade).
	SubmissionID   string
	Kind           string
	ExerciseID     string
	State          string
	Requires       Requirement
	Priority       int
	Attempt        int
	MaxAttempts    int
	PayloadSHA256  string // the notebook the runner executes (a blob)
	LeaseToken     string
	RunnerID       string
	LeaseExpiresAt *time.Time
	NotBefore      time.Time
	LastError      string
	// Profile is the runner profile a reference job records.
	Profile   string
	CreatedAt time.Time
	UpdatedAt time.Time
}
