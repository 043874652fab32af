// Package intake takes learner notebooks in: validate the
// upload, rebuild the notebook to execute from the exercise template, and
// store the submission with its queued job in one transaction.
package intake

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/store"
)

// Store is what intake reads and writes of the database.
type Store interface {
	CountRefusedUpload(ctx context.Context, userID int64, exerciseID string) error
	CountSubmissions(ctx context.Context, userID int64, exerciseID string, since time.Time) (int64, error)
	CreateSubmission(ctx context.Context, ns store.NewSubmission) (sub domain.Submission, created bool, err error)
	RecordUpload(ctx context.Context, userID int64, exerciseID string, windows []store.UploadWindow) (*store.UploadRefused, error)
	RecordCheck(ctx context.Context, userID int64, exerciseID string, windows []store.UploadWindow) (*store.UploadRefused, error)
	SubmissionByKey(ctx context.Context, userID int64, key string) (domain.Submission, error)
	// SubmissionCohort decides the cohort of a new submission (see
	// store.DB.SubmissionCohort).
	SubmissionCohort(ctx context.Context, userID int64, exerciseID, slug string) (int64, error)
	// ActiveJobs counts a learner's jobs queued or running.
	ActiveJobs(ctx context.Context, userID int64) (int64, error)
	// CohortOffer is how a cohort offers an exercise: its own cap on
	// submissions, among others (policy.ForCohort).
	CohortOffer(ctx context.Context, cohortID int64, exerciseID string) (*domain.CohortExercise, error)
}

// Service accepts submissions.
type Service struct {
	DB      Store
	Queue   *jobs.Queue
	Catalog *exercise.Catalog
	Limits  notebook.Limits
	// MaxActive caps a learner's submissions and checks waiting for or in
	// grading at once (0: DefaultMaxActive; negative: none), so one
	// learner cannot fill the queue and every runner slot.
	MaxActive int
	// UploadLimit bounds each learner's uploads over all exercises,
	// refused ones included (zero: DefaultUploadLimit; a negative Count:
	// none).
	UploadLimit store.UploadWindow
	// Concurrent bounds the uploads this process validates at once, so
	// that memory stays bounded however many arrive (zero: 4).
	Concurrent int
	// References finds an exercise's reference outputs (grade.Submissions:
	// committed files, then those recorded in the database). An exercise
	// with none usable on any profile refuses uploads until they are
	// recorded; nil: not checked.
	References References

	gateOnce sync.Once
	gate     chan struct{}

	// templates holds each exercise's answer prepared for rebuilding
	// (exercise id → *notebook.Template), made on its first upload.
	templates sync.Map
}

// References finds the reference outputs of an exercise on a profile.
type References interface {
	Reference(ctx context.Context, ex *exercise.Exercise, profile string) (*exercise.Reference, error)
}

// gradable reports a conflict when the reference outputs of every profile
// of ex were recorded from another version of its answer (it changed and
// they were not recorded again): such a submission could only fail.
// References not recorded yet at all are not refused (a reference job may
// record them, as for a new exercise). It is checked before the
// attempt is counted, so the refusal costs the learner nothing. Other
// errors (the database) let the upload through: grading decides then.
func (s *Service) gradable(ctx context.Context, ex *exercise.Exercise) error {
	if s.References == nil {
		return nil
	}
	for _, p := range ex.ReferenceProfiles() {
		if _, err := s.References.Reference(ctx, ex, p); err == nil || !errors.Is(err, exercise.ErrStaleReference) {
			return nil
		}
	}
	return domain.Errorf(domain.ECONFLICT, "练习 %s 的参考答案已更新，参考输出尚未重新录制，暂时不能评分；请稍后再提交，本次提交未计入次数。"+
		"(Exercise %s: its answer changed and its reference outputs have not been recorded again; submit later, this upload used no attempt.)", ex.ID, ex.ID)
}

// template returns ex's answer prepared for rebuilding uploads. An
// exercise re-imported under the same id has a new answer, and so gets a
// new template.
func (s *Service) template(ex *exercise.Exercise) (*notebook.Template, error) {
	if t, ok := s.templates.Load(ex.ID); ok && t.(*notebook.Template).Answer() == ex.Answer {
		return t.(*notebook.Template), nil
	}
	t, err := notebook.NewTemplate(ex.Answer)
	if err != nil {
		return nil, err
	}
	s.templates.Store(ex.ID, t)
	return t, nil
}

// DefaultMaxActive is a learner's default cap on submissions and checks
// queued or in grading at once.
const DefaultMaxActive = 10

// busy refuses an upload of a learner who already has the cap of
// submissions and checks waiting for or in grading (staff are not
// limited). Concurrent uploads may pass it together, by a few.
func (s *Service) busy(ctx context.Context, u domain.User) error {
	max := s.MaxActive
	if max == 0 {
		max = DefaultMaxActive
	}
	if max < 0 || u.Role.CanSeeAll() {
		return nil
	}
	n, err := s.DB.ActiveJobs(ctx, u.ID)
	if err != nil || n < int64(max) {
		return err
	}
	return &RateLimitError{Err: domain.Errorf(domain.ERATELIMIT, "%d of your uploads are waiting to be graded, the most at once; send this one when one of them is graded", n),
		RetryAfter: 30 * time.Second}
}

// DefaultUploadLimit is a learner's limit on uploads, refused ones
// included: far more than anyone iterating on an exercise needs, far
// less than a script can send.
var DefaultUploadLimit = store.UploadWindow{Count: 30, Per: 10 * time.Minute}

// acquire takes one of the Concurrent validation places, waiting while
// ctx allows.
func (s *Service) acquire(ctx context.Context) (release func(), err error) {
	s.gateOnce.Do(func() {
		n := s.Concurrent
		if n <= 0 {
			n = 4
		}
		s.gate = make(chan struct{}, n)
	})
	select {
	case s.gate <- struct{}{}:
		return func() { <-s.gate }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to validate an upload: %w", ctx.Err())
	}
}

// CountRefused records an upload refused before Submit saw it (too
// large, not a form): it counts against the learner's limits too.
func (s *Service) CountRefused(ctx context.Context, u domain.User, exerciseID string) {
	if !u.Role.CanSeeAll() {
		_ = s.DB.CountRefusedUpload(ctx, u.ID, exerciseID)
	}
}

// Request is one upload.
type Request struct {
	User           domain.User
	ExerciseID     string
	Notebook       []byte
	IdempotencyKey string
	// Check asks for an uncounted check: graded exactly like a
	// submission, but no attempt is used and no score is kept; the
	// exercise's checks policy limits it instead (CheckPolicy).
	Check bool
	// Cohort is the slug of the cohort the learner submits in (the form
	// field "cohort"); "" or a cohort they are not a member of: their
	// latest cohort offering the exercise, else the default.
	Cohort string
}

// Submit validates and stores an upload. created is false when the
// idempotency key returned an earlier submission.
func (s *Service) Submit(ctx context.Context, r Request) (sub domain.Submission, created bool, err error) {
	if r.Check {
		return s.check(ctx, r)
	}
	if r.IdempotencyKey != "" {
		// A replay is the earlier submission, whatever was sent again.
		if sub, err := s.DB.SubmissionByKey(ctx, r.User.ID, r.IdempotencyKey); err == nil {
			return sub, false, nil
		}
	}
	ex, exErr := s.Catalog.Get(r.ExerciseID)
	if exErr == nil {
		if err := s.gradable(ctx, ex); err != nil {
			return domain.Submission{}, false, err
		}
	}
	// The attempt counts before the notebook is even read, so refused
	// uploads are throttled like accepted ones. With no limit to check
	// it is recorded by the statement that stores the submission, or,
	// when there is none, once the upload is refused.
	later, err := s.limit(ctx, r.User, r.ExerciseID, ex)
	if err != nil {
		return domain.Submission{}, false, err
	}
	if later {
		defer func() {
			if !created {
				_ = s.DB.CountRefusedUpload(context.WithoutCancel(ctx), r.User.ID, r.ExerciseID)
			}
		}()
	}
	return s.submit(ctx, r, ex, exErr, later)
}

// submit is Submit once the upload's limits have been checked; record
// says CreateSubmission records the attempt.
func (s *Service) submit(ctx context.Context, r Request, ex *exercise.Exercise, exErr error, record bool) (sub domain.Submission, created bool, err error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return domain.Submission{}, false, err
	}
	defer release()
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
	cohort, err := s.DB.SubmissionCohort(ctx, r.User.ID, ex.ID, r.Cohort)
	if err != nil {
		return domain.Submission{}, false, err
	}
	// The cohort may cap submissions its own way.
	own, err := policy.ForCohort(ctx, s.DB, ex, cohort)
	if err != nil {
		return domain.Submission{}, false, err
	}
	if r.Check {
		// A check uses no attempt, so max_submissions does not stop it.
	} else if err := s.admit(ctx, own, r.User); err != nil {
		return domain.Submission{}, false, err
	}
	if err := s.busy(ctx, r.User); err != nil {
		return domain.Submission{}, false, err
	}
	// The probe seed is drawn per job from the exercise's pool; the rebuilt
	// notebook records it for scoring.
	tmpl, err := s.template(ex)
	if err != nil {
		return domain.Submission{}, false, fmt.Errorf("prepare the template of %s: %w", ex.ID, err)
	}
	payload, integ, err := tmpl.RebuildEncoded(nb, ex.SeedFor(nonce()))
	if err != nil {
		return domain.Submission{}, false, fmt.Errorf("rebuild notebook for %s: %w", ex.ID, err)
	}
	if other := s.uploadedFor(ex, nb, integ); other != nil {
		return domain.Submission{}, false, newWrongExercise(ex, other)
	}
	// The findings are kept with the submission: grading scores them
	// without rebuilding the upload again.
	integrity, err := json.Marshal(integ)
	if err != nil {
		return domain.Submission{}, false, fmt.Errorf("encode integrity findings: %w", err)
	}
	job := s.Queue.GradeJob(ex.ID, ex.Requires, ex.MaxAttempts)
	sub, created, err = s.DB.CreateSubmission(ctx, store.NewSubmission{
		UserID: r.User.ID, ExerciseID: ex.ID, ExerciseVersion: ex.Version, Upload: r.Notebook,
		Rebuilt: payload, Integrity: integrity, IdempotencyKey: r.IdempotencyKey, Job: job,
		MaxSubmissions: maxSubmissions(own, r.User), RecordAttempt: record, Check: r.Check, CohortID: cohort,
	})
	if err != nil {
		return domain.Submission{}, false, err
	}
	if created {
		s.Queue.Enqueued(job)
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

// limit records the upload against the learner's limits — all uploads,
// and the exercise's rate_limit — or refuses it with when to retry.
// Instructors and admins are not limited (they test exercises). With no
// limit that applies it records nothing and returns later: the caller
// records the attempt (every upload of a learner is on record, so a
// limit configured later counts it).
func (s *Service) limit(ctx context.Context, u domain.User, exerciseID string, ex *exercise.Exercise) (later bool, err error) {
	if u.Role.CanSeeAll() {
		return false, nil
	}
	var windows []store.UploadWindow
	switch all := s.UploadLimit; {
	case all.Count == 0:
		windows = append(windows, DefaultUploadLimit)
	case all.Count > 0: // negative: no limit over all exercises
		all.Exercise = ""
		windows = append(windows, all)
	}
	if ex != nil && ex.RateLimit != nil {
		windows = append(windows, store.UploadWindow{Exercise: ex.ID, Count: ex.RateLimit.Count, Per: time.Duration(ex.RateLimit.Per)})
	}
	if len(windows) == 0 {
		return true, nil
	}
	refused, err := s.DB.RecordUpload(ctx, u.ID, exerciseID, windows)
	if err != nil || refused == nil {
		return false, err
	}
	w, wait := refused.Window, refused.RetryAfter
	msg := fmt.Sprintf("at most %d uploads per %s; try again in %s", w.Count, w.Per, wait.Round(time.Second))
	if w.Exercise != "" {
		msg = fmt.Sprintf("at most %d submissions of exercise %s per %s; try again in %s", w.Count, w.Exercise, w.Per, wait.Round(time.Second))
	}
	return false, &RateLimitError{Err: domain.Errorf(domain.ERATELIMIT, "%s", msg), RetryAfter: wait}
}

// maxSubmissions is the cap CreateSubmission enforces atomically for u
// (0: none; instructors and admins are not limited, they test exercises).
func maxSubmissions(ex *exercise.Exercise, u domain.User) int {
	if u.Role.CanSeeAll() || ex.MaxSubmissions < 0 {
		return 0
	}
	return ex.MaxSubmissions
}

// admit refuses early, before the notebook is rebuilt, a learner who has
// used the exercise's max_submissions; CreateSubmission checks again
// atomically (concurrent uploads can all pass this read).
func (s *Service) admit(ctx context.Context, ex *exercise.Exercise, u domain.User) error {
	if u.Role.CanSeeAll() || ex.MaxSubmissions == 0 {
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
