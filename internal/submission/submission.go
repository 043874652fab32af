// Package submission is the intake of learner notebooks: validate the
// upload, rebuild the notebook to execute from the exercise template, and
// store the submission with its queued job in one transaction.
package submission

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-multierror"

	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grading"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/queue"
	"github.com/npugrade/npugrade/internal/store"
)

// Service accepts submissions.
type Service struct {
	DB      *store.DB
	Queue   *queue.Queue
	Catalog *exercise.Catalog
	Limits  notebook.Limits
}

// Request is one upload.
type Request struct {
	User           grading.User
	ExerciseID     string
	Notebook       []byte
	IdempotencyKey string
}

// Submit validates and stores an upload. created is false when the
// idempotency key returned an earlier submission.
func (s *Service) Submit(ctx context.Context, r Request) (sub grading.Submission, created bool, err error) {
	ex, exErr := s.Catalog.Get(r.ExerciseID)
	nb, nbErr := notebook.Parse(r.Notebook, s.Limits)
	if errors.Is(nbErr, notebook.ErrTooLarge) {
		return grading.Submission{}, false, grading.Errorf(grading.ETOOLARGE, "%v", nbErr)
	}
	if exErr != nil || nbErr != nil {
		// Report every problem at once: an unknown exercise and a broken notebook.
		var all *multierror.Error
		if r.ExerciseID == "" {
			all = multierror.Append(all, errors.New("the form field \"exercise\" is required"))
		} else if exErr != nil {
			all = multierror.Append(all, fmt.Errorf("unknown exercise %q", r.ExerciseID))
		}
		if nbErr != nil {
			all = multierror.Append(all, nbErr)
		}
		return grading.Submission{}, false, problems("the submission is not valid", all)
	}
	rebuilt, _, err := notebook.Rebuild(ex.Answer, nb)
	if err != nil {
		return grading.Submission{}, false, fmt.Errorf("rebuild notebook for %s: %w", ex.ID, err)
	}
	payload, err := notebook.Encode(rebuilt)
	if err != nil {
		return grading.Submission{}, false, err
	}
	sub, created, err = s.DB.CreateSubmission(ctx, store.NewSubmission{
		UserID: r.User.ID, ExerciseID: ex.ID, ExerciseVersion: ex.Version, Upload: r.Notebook,
		Rebuilt: payload, IdempotencyKey: r.IdempotencyKey, Requires: ex.Requires,
		MaxAttempts: ex.MaxAttempts, Enqueue: s.Queue.Enqueue,
	})
	if err != nil {
		return grading.Submission{}, false, err
	}
	if created {
		s.Queue.Notify()
	}
	return sub, created, nil
}

// problems flattens a multierror into one EINVALID error listing each problem.
func problems(msg string, err error) error {
	e := &grading.Error{Code: grading.EINVALID, Message: msg}
	var me *multierror.Error
	if errors.As(err, &me) {
		for _, p := range me.Errors {
			var inner *multierror.Error
			if errors.As(p, &inner) {
				for _, q := range inner.Errors {
					e.Problems = append(e.Problems, q.Error())
				}
				continue
			}
			e.Problems = append(e.Problems, p.Error())
		}
	} else if err != nil {
		e.Problems = []string{err.Error()}
	}
	return e
}
