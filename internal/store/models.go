package store

import "time"

// Row types mirror the migrations exactly; GORM never creates or alters tables.

type userRow struct {
	ID        int64
	Name      string
	Role      string
	CreatedAt time.Time
	FullName  string // migration 00015 (rosters)
	Section   string // migration 00015 (rosters)
}

func (userRow) TableName() string { return "users" }

type tokenRow struct {
	ID         int64
	UserID     int64
	Hash       string
	Prefix     string
	Scope      string // migration 00027
	Label      string // migration 00027
	CreatedAt  time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}

func (tokenRow) TableName() string { return "tokens" }

type blobRow struct {
	SHA256    string `gorm:"column:sha256;primaryKey"`
	Size      int64
	Data      []byte
	CreatedAt time.Time
}

func (blobRow) TableName() string { return "blobs" }

type submissionRow struct {
	ID              string `gorm:"primaryKey"`
	UserID          int64
	ExerciseID      string
	ExerciseVersion string
	NotebookSHA256  string  `gorm:"column:notebook_sha256"`
	ExecutedSHA256  *string `gorm:"column:executed_sha256"`
	Status          string
	Score           float64
	RawScore        float64 // before the late penalty (migration 00033)
	MaxScore        float64
	Message         string
	Profile         string
	RunnerID        string
	EnvFingerprint  string
	GraderVersion   string
	IdempotencyKey  *string
	Integrity       *string // intake's integrity findings, JSON (migration 00005)
	Kind            string  // kindSubmission or kindCheck (migration 00026)
	CohortID        int64   // migration 00029
	CreatedAt       time.Time
	StartedAt       *time.Time
	GradedAt        *time.Time
}

func (submissionRow) TableName() string { return "submissions" }

type cellResultRow struct {
	ID           int64
	SubmissionID string
	Position     int
	CellID       string
	Verdict      string
	Points       float64
	MaxPoints    float64
	Counted      bool
	// Learner output: any bytes, stored losslessly (text.go).
	Message  lossless
	Observed lossless
	Expected lossless
	Diff     lossless
}

func (cellResultRow) TableName() string { return "cell_results" }

type runnerRow struct {
	ID        string `gorm:"primaryKey"`
	Name      string
	UserID    *int64
	Labels    string
	Profile   string
	Report    string
	Verdict   string
	Draining  bool
	LastSeen  time.Time
	CreatedAt time.Time
	Slots     int // migration 00003
	// migration 00019: warm spares
	WarmSparesPerSlot int
	WarmSpares        int
	WarmSparesReady   int
	WarmSpareMemory   int64
}

func (runnerRow) TableName() string { return "runners" }
