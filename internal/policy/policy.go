// Package policy holds the rules on who reads what of a submission, shared
// by the API (httpapi) and the pages (web) so that the two cannot drift:
// ownership (another learner's submission is not found, so ids cannot be
// probed), redaction (the details of questions whose feedback a learner may
// not see yet), which graded submission counts (best or latest, per
// exercise), the learner-facing reads that apply them, and the one mapping
// of errors to HTTP statuses, and the instructors' feedback releases that
// open the details (feedback.go). Handlers decide nothing of this
// themselves.
package policy

import (
	"context"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/problem"
	"github.com/npugrade/npugrade/internal/store"
)

// Store is what the policies read (package store's *DB implements it).
type Store interface {
	Submission(ctx context.Context, id string) (domain.Submission, error)
	// GradedSubmissions lists graded submissions of userID, oldest first,
	// of one exercise ("" = all).
	GradedSubmissions(ctx context.Context, exerciseID string, userID int64) ([]domain.Submission, error)
	Submissions(ctx context.Context, f domain.SubmissionFilter) ([]domain.Submission, error)
	// LatestSubmissions returns userID's newest submission per exercise.
	LatestSubmissions(ctx context.Context, userID int64) (map[string]domain.Submission, error)
	CountSubmissions(ctx context.Context, userID int64, exerciseID string, since time.Time) (int64, error)
	UserByName(ctx context.Context, name string) (domain.User, error)
	// ExecutedNotebook is the stored executed notebook (ENOTFOUND without one).
	ExecutedNotebook(ctx context.Context, id string) ([]byte, error)
}

// Service applies the policies over one database and catalog.
type Service struct {
	DB      Store
	Catalog *exercise.Catalog
	// Now is the clock deadlines are judged by: the database's (store.DB.Now),
	// so that every server agrees; nil is time.Now.
	Now func() time.Time
	// Extensions finds a learner's own deadline: their
	// after_due_date details stay hidden until it. Nil: none are granted.
	Extensions Extensions
	// Releases says whether an exercise's feedback is released to a
	// learner (policy feedback "on_release"). Nil: none is.
	Releases Releases
	// Deadlines finds a cohort's own deadline for an exercise, which
	// replaces the exercise's for the cohort's submissions. Nil: none.
	Deadlines Deadlines
	// Scopes computes a staff member's scope: the cohorts whose
	// submissions they read. Nil: every staff member reads all.
	Scopes Scopes
	// Placement finds the cohort a learner submits in, whose deadline
	// their standing shows (ForLearner). Nil: the exercise's.
	Placement Placement
}

// Releases reads feedback releases (package store's *DB implements it).
type Releases interface {
	FeedbackReleased(ctx context.Context, exerciseID string, userID, cohortID int64) (bool, error)
}

// view is what one learner may see of one submission's details, decided
// once for every way the submission leaves the server (API, pages, CLI,
// executed and feedback notebooks).
type view struct {
	ex  *exercise.Exercise // nil: no longer served, every detail hidden
	now time.Time
	// released: an instructor released the exercise's feedback to the
	// learner (to everyone or to them).
	released bool
	// closed is the message shown instead of every detail while the
	// exercise's feedback policy keeps them closed; "" when open.
	closed string
}

// viewOf applies the exercise's feedback policy and its cells' visibility
// to a learner's submission: "after_due_date" opens the details at their
// deadline, "on_release" when an instructor releases them to everyone or
// to this learner; a cell shown after the due date opens at the deadline
// or at a release. A release that cannot be read counts as none.
func (p *Service) viewOf(ctx context.Context, sub domain.Submission) view {
	ex, err := p.exerciseFor(ctx, sub)
	if err != nil {
		return view{now: p.now()}
	}
	v := view{ex: ex, now: p.now()}
	if p.Releases != nil {
		ok, err := p.Releases.FeedbackReleased(ctx, ex.ID, sub.UserID, sub.CohortID)
		v.released = err == nil && ok
	}
	switch ex.Feedback {
	case exercise.FeedbackAfterDueDate:
		if ex.Deadline != nil && !v.now.After(*ex.Deadline) && !v.released {
			v.closed = "feedback on this exercise is shown after the due date (" + ex.Deadline.UTC().Format("2006-01-02 15:04 UTC") + ")"
		}
	case exercise.FeedbackOnRelease:
		if !v.released {
			v.closed = "feedback on this exercise is shown once your instructor releases it"
		}
	}
	return v
}

// visible reports whether the details of graded cell id may be shown.
func (v view) visible(id string) bool {
	return v.ex != nil && v.closed == "" && v.ex.DetailsVisible(id, v.now, v.released)
}

// hidden is the message shown instead of cell id's details.
func (v view) hidden(id string) string {
	if v.closed != "" {
		return v.closed
	}
	if v.ex != nil {
		for _, g := range v.ex.Graded {
			if g.ID != id || g.Visibility != exercise.VisibilityAfterDue {
				continue
			}
			if v.ex.Deadline != nil && !v.now.After(*v.ex.Deadline) {
				return "details of this question are shown after the due date (" + v.ex.Deadline.UTC().Format("2006-01-02 15:04 UTC") + ")"
			}
			if v.ex.Deadline == nil {
				return "details of this question are shown once your instructor releases feedback"
			}
		}
	}
	return "details of this question are hidden"
}

// Extensions reads the extension in force for a learner and exercise (nil
// for none; package store's *DB implements it).
type Extensions interface {
	ActiveExtension(ctx context.Context, exerciseID string, userID int64) (*domain.Extension, error)
}

// exerciseFor is sub's exercise as it applies to its learner: with their
// extension's deadline. When the extension cannot be read, the details
// that wait for a deadline stay hidden (the deadline is taken as not yet
// come) rather than shown early.
func (p *Service) exerciseFor(ctx context.Context, sub domain.Submission) (*exercise.Exercise, error) {
	ex, err := p.Catalog.Get(sub.ExerciseID)
	if err != nil {
		return ex, err
	}
	cex, err := ForCohort(ctx, p.Deadlines, ex, sub.CohortID)
	if err != nil {
		// As for an extension that cannot be read: not yet come.
		far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		own := *ex
		own.Deadline = &far
		return &own, nil
	}
	ex = cex
	if p.Extensions == nil || ex.Deadline == nil {
		return ex, nil
	}
	ext, err := p.Extensions.ActiveExtension(ctx, ex.ID, sub.UserID)
	var deadline time.Time
	switch {
	case err != nil:
		deadline = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	case ext == nil:
		return ex, nil
	default:
		deadline = ext.Deadline
	}
	own := *ex
	own.Deadline = &deadline
	return &own, nil
}

func (p *Service) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Readable returns submission id when u may read it: their own, or, for
// staff, one of a cohort in their scope (Scope). Another learner's is ENOTFOUND, exactly like a missing one.
// The submission is not redacted (see Submission).
func (p *Service) Readable(ctx context.Context, u domain.User, id string) (domain.Submission, error) {
	sub, err := p.DB.Submission(ctx, id)
	if err == nil && sub.UserID != u.ID && (!u.Role.CanSeeAll() || !p.scopeOf(ctx, u).Has(sub.CohortID)) {
		// Another cohort's submission is not found either: staff
		// cannot probe what their cohorts do not hold.
		err = domain.Errorf(domain.ENOTFOUND, "submission %s not found", id)
	}
	return sub, err
}

// Submission is Readable, redacted for u: what every response shows.
func (p *Service) Submission(ctx context.Context, u domain.User, id string) (domain.Submission, error) {
	sub, err := p.Readable(ctx, u, id)
	if err != nil {
		return sub, err
	}
	return p.Redact(ctx, u, sub), nil
}

// Redact is the one way a submission leaves the server: every response
// that carries one (create, idempotent replay, get, list, history, the
// pages) goes through it. It hides the details of questions whose
// feedback the learner may not see (visibility hidden, or after_due_date
// before the deadline). Staff see everything. Verdicts and points stay
// visible. An exercise no longer in the catalog hides every detail: its
// rules are unknown, so nothing is assumed visible. A learner with an
// extension waits for their own deadline. The exercise's feedback policy
// (after_due_date, on_release) closes every cell's details until then.
func (p *Service) Redact(ctx context.Context, u domain.User, sub domain.Submission) domain.Submission {
	if u.Role.CanSeeAll() || len(sub.Cells) == 0 {
		return sub
	}
	v := p.viewOf(ctx, sub)
	cells := make([]domain.CellResult, len(sub.Cells))
	for i, cr := range sub.Cells {
		if !v.visible(cr.CellID) {
			cr.Observed, cr.Expected, cr.Diff = "", "", ""
			cr.Message = v.hidden(cr.CellID)
		}
		cells[i] = cr
	}
	sub.Cells = cells
	return sub
}

// LearnerCopy is what a learner may download of a submission's executed
// notebook: notebook.LearnerCopy under the view Redact applies.
func (p *Service) LearnerCopy(ctx context.Context, sub domain.Submission, executed *notebook.Notebook) *notebook.Notebook {
	return notebook.LearnerCopy(executed, p.viewOf(ctx, sub).visible)
}

// Latest returns u's own newest submission per exercise (for status
// lines; not redacted, it carries no cell results).
func (p *Service) Latest(ctx context.Context, u domain.User) (map[string]domain.Submission, error) {
	return p.DB.LatestSubmissions(ctx, u.ID)
}

// History lists u's own submissions of one exercise, newest first, at
// most limit, redacted for u.
func (p *Service) History(ctx context.Context, u domain.User, exerciseID string, limit int) ([]domain.Submission, error) {
	subs, err := p.DB.Submissions(ctx, domain.SubmissionFilter{UserID: u.ID, ExerciseID: exerciseID, Limit: limit})
	for i := range subs {
		subs[i] = p.Redact(ctx, u, subs[i])
	}
	return subs, err
}

// Listing is whose submissions a user asks to list, and from where.
type Listing struct {
	// Learner names the learner listed ("" = everyone the user may see).
	Learner string
	// After is the id of the last submission of the previous page ("" =
	// from the newest).
	After string
}

// Filter scopes a listing to what u may see: learners list only their own
// submissions, whatever they ask; naming another learner, or continuing
// after a submission that is not theirs, is reported exactly like naming
// no one (problems, for the caller's EINVALID), so nobody learns about
// others. The caller sets the filter's exercise, status and limit.
func (p *Service) Filter(ctx context.Context, u domain.User, l Listing) (f domain.SubmissionFilter, problems []string, err error) {
	if !u.Role.CanSeeAll() {
		f.UserID = u.ID
	}
	if l.Learner != "" {
		switch learner, err := p.DB.UserByName(ctx, l.Learner); {
		case err == nil && (learner.ID == u.ID || u.Role.CanSeeAll() && p.inScope(ctx, u, learner.ID)):
			f.UserID = learner.ID
		case domain.ErrorCode(err) == domain.ENOTFOUND || err == nil:
			problems = append(problems, fmt.Sprintf("learner=%q: no such learner", l.Learner))
		default:
			return f, nil, err
		}
	}
	if l.After != "" {
		switch after, err := p.Readable(ctx, u, l.After); {
		case err == nil:
			f.After = &after
		case domain.ErrorCode(err) == domain.ENOTFOUND:
			problems = append(problems, "cursor: not a cursor this listing gave out")
		default:
			return f, nil, err
		}
	}
	return f, problems, nil
}

// List lists submissions under f, newest first, redacted for u; a learner
// gets only their own whatever f says, staff those of their scope.
func (p *Service) List(ctx context.Context, u domain.User, f domain.SubmissionFilter) ([]domain.Submission, error) {
	if !u.Role.CanSeeAll() {
		f.UserID = u.ID
	} else {
		// The store keeps the listing to the cohorts of the scope.
		ctx = domain.WithScope(ctx, p.scopeOf(ctx, u))
	}
	subs, err := p.DB.Submissions(ctx, f)
	for i := range subs {
		subs[i] = p.Redact(ctx, u, subs[i])
	}
	return subs, err
}

// Attempts counts u's submissions of one exercise (what max_submissions
// caps).
func (p *Service) Attempts(ctx context.Context, u domain.User, exerciseID string) (int, error) {
	n, err := p.DB.CountSubmissions(ctx, u.ID, exerciseID, time.Time{})
	return int(n), err
}

// Executed returns the executed notebook of sub (which u may read; see
// Readable) as u may download it: staff get it as stored, learners their
// LearnerCopy. A submission not executed yet is ENOTFOUND.
func (p *Service) Executed(ctx context.Context, u domain.User, sub domain.Submission) ([]byte, error) {
	if u.Role.CanSeeAll() {
		return p.executed(ctx, sub)
	}
	nb, err := p.LearnerNotebook(ctx, sub)
	if err != nil {
		return nil, err
	}
	return notebook.Encode(nb)
}

// LearnerNotebook is the learner's copy of sub's executed notebook
// (ENOTFOUND when it has not been executed yet).
func (p *Service) LearnerNotebook(ctx context.Context, sub domain.Submission) (*notebook.Notebook, error) {
	raw, err := p.executed(ctx, sub)
	if err != nil {
		return nil, err
	}
	nb, err := notebook.ParseExecuted(raw)
	if err != nil {
		return nil, fmt.Errorf("read the executed notebook of %s: %w", sub.ID, err)
	}
	return p.LearnerCopy(ctx, sub, nb), nil
}

func (p *Service) executed(ctx context.Context, sub domain.Submission) ([]byte, error) {
	raw, err := p.DB.ExecutedNotebook(ctx, sub.ID)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil, domain.Errorf(domain.ENOTFOUND, "submission %s has not been executed yet", sub.ID)
	}
	return raw, err
}

// Counted is a learner's standing in one exercise under its policy.
type Counted struct {
	Exercise string
	Policy   string // exercise.CountsBest or exercise.CountsLatest
	Attempts int    // graded submissions
	// Submission is the one that counts; nil when none is graded.
	Submission *domain.Submission
}

// Counts picks the submission that counts among graded ones, in the order
// they were made: the best score (the earliest of equal ones), or the
// latest under the "latest" policy. It returns -1 for none.
func Counts(policy string, graded []domain.Submission) int {
	pick := -1
	for i, s := range graded {
		if pick < 0 || policy == exercise.CountsLatest || s.Score > graded[pick].Score {
			pick = i
		}
	}
	return pick
}

// Counted returns u's standing in ex.
func (p *Service) Counted(ctx context.Context, ex *exercise.Exercise, userID int64) (Counted, error) {
	graded, err := p.DB.GradedSubmissions(ctx, ex.ID, userID)
	if err != nil {
		return Counted{}, err
	}
	return counted(ex, graded), nil
}

func counted(ex *exercise.Exercise, graded []domain.Submission) Counted {
	out := Counted{Exercise: ex.ID, Policy: ex.Counts, Attempts: len(graded)}
	if out.Policy == "" {
		out.Policy = exercise.CountsBest
	}
	if i := Counts(out.Policy, graded); i >= 0 {
		out.Submission = &graded[i]
	}
	return out
}

// Standings returns u's standing in every exercise of the catalog they
// have a graded submission of, by exercise id.
func (p *Service) Standings(ctx context.Context, userID int64) (map[string]Counted, error) {
	graded, err := p.DB.GradedSubmissions(ctx, "", userID)
	if err != nil {
		return nil, err
	}
	byExercise := map[string][]domain.Submission{}
	for _, s := range graded {
		byExercise[s.ExerciseID] = append(byExercise[s.ExerciseID], s)
	}
	out := make(map[string]Counted, len(byExercise))
	for id, subs := range byExercise {
		if ex, err := p.Catalog.Get(id); err == nil {
			out[id] = counted(ex, subs)
		}
	}
	return out, nil
}

// Status is the HTTP status of err, for the API's problem+json and the
// pages alike: a database fault is 503 (unavailable) or 507 (storage), not
// 500; ok is false for any other internal error (500), which the caller
// logs and does not show.
func Status(err error) (status int, ok bool) {
	status, _, ok = Classify(err)
	return status, ok
}

// Classify is Status with the database fault err is, if it is one: a
// *domain.Error with EUNAVAILABLE or ESTORAGE (store.Fault) whose message
// is what to show in place of the driver's words; nil for anything else.
func Classify(err error) (status int, fault *domain.Error, ok bool) {
	code := domain.ErrorCode(err)
	if f := store.Fault(err); code == domain.EINTERNAL && f != nil {
		fault, code = f, f.Code
	}
	status, ok = problem.Status(code)
	return status, fault, ok
}
