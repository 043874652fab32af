// Package grade is npugrade's one grading use case: given an exercise, the
// integrity findings of the learner's notebook (kept from intake), the
// executed notebook with the runner's report, and a source of reference
// outputs, it produces the score. The server's completion of a grading job
// (jobs.Dispatcher), a staged regrade (regrade) and the local answer check
// (check) all call it; nothing else scores.
//
// Every later change of a score is computed here too and written through
// the store's one score-change write: manual grades and overrides
// (manual.go), extensions granted and revoked (extension.go), and the
// answers to regrade requests (appeal.go).
package grade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/reference"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
)

// References finds the reference outputs of an exercise on a runner profile.
type References interface {
	Reference(ctx context.Context, ex *exercise.Exercise, profile string) (*exercise.Reference, error)
}

// Files is the committed reference files (answers/<id>/references/<profile>.json)
// alone: what a local check has.
type Files struct{}

// Reference implements References.
func (Files) Reference(_ context.Context, ex *exercise.Exercise, profile string) (*exercise.Reference, error) {
	return ex.Reference(profile)
}

// Run is one graded run of a notebook.
type Run struct {
	Exercise *exercise.Exercise
	// Integrity is what rebuilding the upload found (tampered or deleted
	// graded cells).
	Integrity notebook.Integrity
	// Executed is the runner's notebook; nil when the run produced none.
	Executed *notebook.Notebook
	// Result is the runner's report; its Profile picks the reference
	// ("" is cpu).
	Result domain.ExecutionResult
	// SubmittedAt decides the late penalty; zero means on time.
	SubmittedAt time.Time
	// Extension is the learner's own deadline for the exercise; nil: none.
	Extension *exercise.Extension
}

// Score is a graded run.
type Score struct {
	scoring.Output
	Profile       string
	GraderVersion string
}

// Grader scores runs against the references of one source.
type Grader struct {
	References References
}

// Grade scores run.
func (g Grader) Grade(ctx context.Context, run Run) (Score, error) {
	profile := run.Result.Profile
	if profile == "" {
		profile = "cpu"
	}
	ref, err := g.References.Reference(ctx, run.Exercise, profile)
	if err != nil {
		return Score{}, err
	}
	out := scoring.Score(scoring.Input{Exercise: run.Exercise, Reference: ref, Integrity: run.Integrity,
		Executed: run.Executed, Result: run.Result, SubmittedAt: run.SubmittedAt, Extension: run.Extension})
	return Score{Output: out, Profile: profile, GraderVersion: scoring.GraderVersion(run.Exercise)}, nil
}

// SubmissionStore is what grading a submission reads of the database.
type SubmissionStore interface {
	ActiveExtension(ctx context.Context, exerciseID string, userID int64) (*domain.Extension, error)
	Blob(ctx context.Context, sha string) ([]byte, error)
	ManualGrades(ctx context.Context, submissionID string) (map[string]domain.ManualGrade, error)
	Reference(ctx context.Context, exerciseID, profile string) (store.StoredReference, error)
	SubmissionIntegrity(ctx context.Context, id string) ([]byte, error)
	// CohortOffer is how a cohort offers an exercise (nil: with the
	// exercise's own policy).
	CohortOffer(ctx context.Context, cohortID int64, exerciseID string) (*domain.CohortExercise, error)
}

// Submissions grades the server's submissions: it reads what intake
// stored (the upload and its integrity findings) and the references of
// the exercise, committed files first, then those recorded by reference
// jobs in the database.
type Submissions struct {
	DB SubmissionStore
}

// Grade scores a run of sub under ex. executed is the run's notebook as
// stored or sent (nil when the run produced none; then res must say it
// was killed).
func (s *Submissions) Grade(ctx context.Context, ex *exercise.Exercise, sub domain.Submission, executed []byte, res domain.ExecutionResult) (store.Grade, error) {
	integ, err := s.Integrity(ctx, ex, sub)
	if err != nil {
		return store.Grade{}, err
	}
	if ex, err = policy.ForCohort(ctx, s.DB, ex, sub.CohortID); err != nil {
		return store.Grade{}, err
	}
	run := Run{Exercise: ex, Integrity: integ, Result: res, SubmittedAt: sub.CreatedAt}
	// The extension in force when grading applies (a later grant or
	// revocation rescores: Extensions).
	ext, err := s.DB.ActiveExtension(ctx, ex.ID, sub.UserID)
	if err != nil {
		return store.Grade{}, err
	}
	if run.Extension, err = ExtensionPolicy(ext); err != nil {
		return store.Grade{}, err
	}
	if executed != nil {
		if run.Executed, err = notebook.ParseExecuted(executed); err != nil {
			return store.Grade{}, fmt.Errorf("parse executed notebook: %w", err)
		}
	} else if !res.Killed {
		return store.Grade{}, errors.New("the runner sent no executed notebook")
	}
	sc, err := Grader{References: s}.Grade(ctx, run)
	if err != nil {
		return store.Grade{}, err
	}
	// Manual grades and overrides on record stay in force through a new
	// run of the same submission (a regrade).
	manual, err := s.DB.ManualGrades(ctx, sub.ID)
	if err != nil {
		return store.Grade{}, err
	}
	ApplyManual(ex, sc.Cells, manual)
	killed := ""
	if res.Killed {
		killed = res.Reason
	}
	sc.Score, sc.Message = scoring.Total(sc.Cells, sc.Multiplier, killed)
	status := scoring.Status(sc.Cells)
	if sub.Check {
		// Nobody grades a check by hand: its manual cells stay marked
		// as waiting, and the check is done.
		status = domain.StatusGraded
	}
	return store.Grade{
		SubmissionID: sub.ID, Score: sc.Score, RawScore: scoring.Points(sc.Cells), MaxScore: sc.MaxScore, Message: sc.Message,
		Profile: sc.Profile, EnvFingerprint: res.EnvFingerprint, GraderVersion: sc.GraderVersion,
		Executed: res.Notebook, Cells: sc.Cells, Status: status, Check: sub.Check,
	}, nil
}

// ExtensionPolicy is a stored extension as the exercise's policy reads it
// (nil for none).
func ExtensionPolicy(e *domain.Extension) (*exercise.Extension, error) {
	if e == nil {
		return nil, nil
	}
	out := &exercise.Extension{Deadline: e.Deadline, OwnPenalty: e.LatePenalty != nil}
	if out.OwnPenalty {
		if err := json.Unmarshal(e.LatePenalty, &out.LatePenalty); err != nil {
			return nil, fmt.Errorf("decode the late penalty of extension %d: %w", e.ID, err)
		}
	}
	return out, nil
}

// Integrity returns the integrity findings of sub's upload under ex: those
// intake stored when ex is the version the submission was made for, else
// (a regrade under a newer version, or a submission older than the
// stored findings) the upload rebuilt against ex's answer.
func (s *Submissions) Integrity(ctx context.Context, ex *exercise.Exercise, sub domain.Submission) (notebook.Integrity, error) {
	if sub.ExerciseVersion == ex.Version {
		raw, err := s.DB.SubmissionIntegrity(ctx, sub.ID)
		if err != nil {
			return notebook.Integrity{}, err
		}
		if raw != nil {
			var integ notebook.Integrity
			if err := json.Unmarshal(raw, &integ); err != nil {
				return notebook.Integrity{}, fmt.Errorf("decode integrity of %s: %w", sub.ID, err)
			}
			return integ, nil
		}
	}
	upload, err := s.DB.Blob(ctx, sub.NotebookSHA256)
	if err != nil {
		return notebook.Integrity{}, err
	}
	up, err := notebook.ParseStored(upload)
	if err != nil {
		return notebook.Integrity{}, fmt.Errorf("re-read upload of %s: %w", sub.ID, err)
	}
	_, integ, err := notebook.Rebuild(ex.Answer, up)
	return integ, err
}

// Reference implements References: the committed file when there is one,
// else the one a reference job recorded in the database (reference.Stored).
func (s *Submissions) Reference(ctx context.Context, ex *exercise.Exercise, profile string) (*exercise.Reference, error) {
	return reference.Stored{DB: s.DB}.Reference(ctx, ex, profile)
}
