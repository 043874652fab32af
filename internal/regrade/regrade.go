// Package regrade stages regrades: when an exercise's answer, probes or
// rules change (its version differs from the one a submission was graded
// with), an instructor stages a regrade of the affected submissions, reads
// the score changes per learner, and applies or discards it.
//
// A recompare regrade scores the stored executed notebooks again against
// the current references and rules, at once; a reexecute regrade queues a
// job per submission (kind "regrade") and is ready when the last one is
// back. Nothing changes a submission's score until the regrade is applied;
// applying keeps the old scores in score_history.
//
// A regrade also covers the exercise's failed submissions (grading failed,
// e.g. because its reference outputs were stale then): a reexecute regrade
// queues each again like a graded one, and applying it makes the
// submission graded with its new score; a recompare regrade cannot score
// them (they have no run) and counts them in Regrade.SkippedFailed. A
// failed submission is never one of the learner's attempts, before or
// after (store.DB.CountSubmissions).
package regrade

import (
	"context"
	"errors"
	"fmt"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
)

// Store is what a regrade reads and writes of the database.
type Store interface {
	grade.SubmissionStore
	ApplyRegrade(ctx context.Context, id int64) (domain.Regrade, error)
	Blob(ctx context.Context, sha string) ([]byte, error)
	DiscardRegrade(ctx context.Context, id int64) (domain.Regrade, error)
	ExecutedNotebook(ctx context.Context, id string) ([]byte, error)
	FailedSubmissions(ctx context.Context, exerciseID string) ([]domain.Submission, error)
	GradedSubmissions(ctx context.Context, exerciseID string, userID int64) ([]domain.Submission, error)
	InTx(ctx context.Context, fn func(tx *store.Tx) error) error
	RegradeByID(ctx context.Context, id int64) (domain.Regrade, error)
}

// Service stages, applies and discards regrades.
type Service struct {
	DB      Store
	Queue   *jobs.Queue
	Catalog *exercise.Catalog
}

// Request stages a regrade.
type Request struct {
	Exercise string `json:"exercise"`
	Mode     string `json:"mode"`
	// All regrades every graded submission, not only those graded with
	// another version of the exercise. Failed submissions are covered
	// either way (they were never graded with any version).
	All bool `json:"all"`
}

// Stage finds the affected submissions and computes (recompare) or queues
// (reexecute) their new scores.
func (s *Service) Stage(ctx context.Context, req Request, by domain.User) (domain.Regrade, error) {
	var problems []string
	ex, err := s.Catalog.Get(req.Exercise)
	if err != nil {
		problems = append(problems, fmt.Sprintf("unknown exercise %q", req.Exercise))
	}
	if req.Mode != domain.RegradeRecompare && req.Mode != domain.RegradeReexecute {
		problems = append(problems, fmt.Sprintf("mode %q: want recompare or reexecute", req.Mode))
	}
	if len(problems) > 0 {
		return domain.Regrade{}, &domain.Error{Code: domain.EINVALID, Message: "the regrade request is not valid", Problems: problems}
	}
	subs, err := s.DB.GradedSubmissions(ctx, ex.ID, 0)
	if err != nil {
		return domain.Regrade{}, err
	}
	failed, err := s.DB.FailedSubmissions(ctx, ex.ID)
	if err != nil {
		return domain.Regrade{}, err
	}
	version := scoring.GraderVersion(ex)
	st := staged{jobs: map[int]*domain.Job{}, payloads: map[int][]byte{}}
	for _, sub := range append(subs, failed...) {
		isFailed := sub.Status == domain.StatusFailed
		if !isFailed && !req.All && sub.GraderVersion == version {
			continue
		}
		if isFailed && req.Mode == domain.RegradeRecompare {
			st.skipped++ // no run to score again: a reexecute regrade queues it
			continue
		}
		switch req.Mode {
		case domain.RegradeRecompare:
			g, err := s.recompare(ctx, ex, sub)
			if errors.Is(err, errNoRun) {
				continue // nothing to compare; a reexecute regrade covers it
			}
			if err != nil {
				return domain.Regrade{}, fmt.Errorf("recompare %s: %w", sub.ID, err)
			}
			st.items = append(st.items, store.NewRegradeItem{Submission: sub, Result: &g})
		case domain.RegradeReexecute:
			job, payload, err := s.job(ctx, ex, sub)
			if err != nil {
				return domain.Regrade{}, fmt.Errorf("re-execute %s: %w", sub.ID, err)
			}
			st.jobs[len(st.items)], st.payloads[len(st.items)] = job, payload
			st.items = append(st.items, store.NewRegradeItem{Submission: sub})
		}
	}
	r := domain.Regrade{ExerciseID: ex.ID, Mode: req.Mode, ExerciseVersion: ex.Version, GraderVersion: version, SkippedFailed: st.skipped}
	id, err := s.write(ctx, r, by, st)
	if err != nil {
		return domain.Regrade{}, fmt.Errorf("create regrade of %s: %w", ex.ID, err)
	}
	if len(st.jobs) > 0 {
		s.Queue.Notify()
	}
	return s.DB.RegradeByID(ctx, id)
}

// staged is a regrade before it is written: its items, and the
// re-execution job (with its payload) of the items at those indexes.
type staged struct {
	items    []store.NewRegradeItem
	jobs     map[int]*domain.Job
	payloads map[int][]byte
	skipped  int
}

// write enqueues the re-execution jobs and records the regrade in one
// transaction: the regrade never names a job that is not queued.
func (s *Service) write(ctx context.Context, r domain.Regrade, by domain.User, st staged) (int64, error) {
	var id int64
	err := s.DB.InTx(ctx, func(tx *store.Tx) error {
		for i := range st.items { // in order: the queue runs them first come
			job, ok := st.jobs[i]
			if !ok {
				continue
			}
			sha, err := tx.PutBlob(st.payloads[i])
			if err != nil {
				return err
			}
			job.PayloadSHA256 = sha
			if err := s.Queue.Enqueue(tx, job); err != nil {
				return err
			}
			st.items[i].JobID = job.ID
		}
		var err error
		id, err = tx.CreateRegrade(r, by.ID, st.items)
		return err
	})
	return id, err
}

var errNoRun = errors.New("the submission has no executed notebook")

// recompare scores a submission's stored run under the current version,
// through the one grading use case: the same integrity findings and the
// same references (committed files, then recorded ones) as a fresh grade.
func (s *Service) recompare(ctx context.Context, ex *exercise.Exercise, sub domain.Submission) (store.Grade, error) {
	executed, err := s.DB.ExecutedNotebook(ctx, sub.ID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Grade{}, errNoRun
	}
	if err != nil {
		return store.Grade{}, err
	}
	return (&grade.Submissions{DB: s.DB}).Grade(ctx, ex, sub, executed,
		domain.ExecutionResult{Profile: sub.Profile, EnvFingerprint: sub.EnvFingerprint})
}

func (s *Service) upload(ctx context.Context, sub domain.Submission) (*notebook.Notebook, error) {
	raw, err := s.DB.Blob(ctx, sub.NotebookSHA256)
	if err != nil {
		return nil, err
	}
	nb, err := notebook.ParseStored(raw)
	if err != nil {
		return nil, fmt.Errorf("re-read upload of %s: %w", sub.ID, err)
	}
	return nb, nil
}

// job builds the re-execution job of a submission: its upload rebuilt from
// the current answer, with a fresh probe seed from the current pool.
func (s *Service) job(ctx context.Context, ex *exercise.Exercise, sub domain.Submission) (*domain.Job, []byte, error) {
	upload, err := s.upload(ctx, sub)
	if err != nil {
		return nil, nil, err
	}
	rebuilt, _, err := notebook.RebuildSeeded(ex.Answer, upload, ex.SeedFor("regrade/"+sub.ID+"/"+ex.Version))
	if err != nil {
		return nil, nil, err
	}
	payload, err := notebook.Encode(rebuilt)
	if err != nil {
		return nil, nil, err
	}
	return &domain.Job{Kind: domain.JobRegrade, ExerciseID: ex.ID, Requires: ex.Requires, MaxAttempts: ex.MaxAttempts}, payload, nil
}

// Get returns a regrade with its per-learner score changes.
func (s *Service) Get(ctx context.Context, id int64) (domain.Regrade, error) {
	return s.DB.RegradeByID(ctx, id)
}

// Apply makes a ready regrade's scores the submissions' scores.
func (s *Service) Apply(ctx context.Context, id int64) (domain.Regrade, error) {
	return s.DB.ApplyRegrade(ctx, id)
}

// Discard drops a regrade.
func (s *Service) Discard(ctx context.Context, id int64) (domain.Regrade, error) {
	return s.DB.DiscardRegrade(ctx, id)
}
