// Package submission is the intake of learner notebooks: validate the
// upload, rebuild the notebook to execute from the exercise template, and
// store the submission with its queued job in one transaction.
package submission

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
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
	User           domain.User
	ExerciseID     string
	Notebook       []byte
	IdempotencyKey string
}

// Submit validates and stores an upload. created is false when the
// idempotency key returned an earlier submission.
func (s *Service) Submit(ctx context.Context, r Request) (sub domain.Submission, created bool, err error) {
	ex, exErr := s.Catalog.Get(r.ExerciseID)
	nb, nbErr := notebook.Parse(r.Notebook, s.Limits)
	if errors.Is(nbErr, notebook.ErrTooLarge) {
		return domain.Submission{}, false, domain.Errorf(domain.ETOOLARGE, "%v", nbErr)
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
		return domain.Submission{}, false, problems("the submission is not valid", all)
	}
	if r.IdempotencyKey == "" || !s.replayed(ctx, r) {
		if err := s.admit(ctx, ex, r.User); err != nil {
			return domain.Submission{}, false, err
		}
	}
	// The probe seed is drawn per job from the exercise's pool; the rebuilt
	// notebook records it for scoring.
	rebuilt, _, err := notebook.RebuildSeeded(ex.Answer, nb, ex.SeedFor(nonce()))
	if err != nil {
		return domain.Submission{}, false, fmt.Errorf("rebuild notebook for %s: %w", ex.ID, err)
	}
	payload, err := notebook.Encode(rebuilt)
	if err != nil {
		return domain.Submission{}, false, err
	}
	sub, created, err = s.DB.CreateSubmission(ctx, store.NewSubmission{
		UserID: r.User.ID, ExerciseID: ex.ID, ExerciseVersion: ex.Version, Upload: r.Notebook,
		Rebuilt: payload, IdempotencyKey: r.IdempotencyKey, Requires: ex.Requires,
		MaxAttempts: ex.MaxAttempts, Enqueue: s.Queue.Enqueue,
	})
	if err != nil {
		return domain.Submission{}, false, err
	}
	if created {
		s.Queue.Notify()
	}
	return sub, created, nil
}

// RateLimitError is the error of a submission over the exercise's rate
// limit; RetryAfter says when the next one is accepted.
type RateLimitError struct {
	Err        *domain.Error
	RetryAfter time.Duration
}

// Unwrap lets errors.As find the *domain.Error.
func (e *RateLimitError) Unwrap() error { return e.Err }

func (e *RateLimitError) Error() string { return e.Err.Error() }

func (s *Service) replayed(ctx context.Context, r Request) bool {
	_, err := s.DB.SubmissionByKey(ctx, r.User.ID, r.IdempotencyKey)
	return err == nil
}

// admit enforces the exercise's max_submissions and rate_limit for one learner.
// Instructors and admins are not limited (they test exercises).
func (s *Service) admit(ctx context.Context, ex *exercise.Exercise, u domain.User) error {
	if u.Role.CanSeeAll() || (ex.MaxSubmissions == 0 && ex.RateLimit == nil) {
		return nil
	}
	if ex.MaxSubmissions > 0 {
		n, err := s.DB.CountSubmissions(ctx, u.ID, ex.ID, time.Time{})
		if err != nil {
			return err
		}
		if n >= int64(ex.MaxSubmissions) {
			return domain.Errorf(domain.ECONFLICT, "you have used all %d submissions of exercise %s", ex.MaxSubmissions, ex.ID)
		}
	}
	if rl := ex.RateLimit; rl != nil {
		per := time.Duration(rl.Per)
		since := s.DB.Now().Add(-per)
		times, err := s.DB.SubmissionTimes(ctx, u.ID, ex.ID, since)
		if err != nil {
			return err
		}
		if len(times) >= rl.Count {
			// The window frees up when the oldest counted submission leaves it.
			wait := times[len(times)-rl.Count].Add(per).Sub(s.DB.Now())
			if wait < time.Second {
				wait = time.Second
			}
			return &RateLimitError{
				Err:        domain.Errorf(domain.ERATELIMIT, "at most %d submissions of exercise %s per %s; try again in %s", rl.Count, ex.ID, per, wait.Round(time.Second)),
				RetryAfter: wait,
			}
		}
	}
	return nil
}

func nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// problems flattens a multierror into one EINVALID error listing each problem.
func problems(msg string, err error) error {
	e := &domain.Error{Code: domain.EINVALID, Message: msg}
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
