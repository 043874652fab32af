package web

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/intake"
)

// exerciseTitle is the exercise's title in the page language.
func exerciseTitle(ex *exercise.Exercise, lang string) string {
	if lang == langEN && ex.TitleEN != "" {
		return ex.TitleEN
	}
	return ex.Title
}

type exerciseRow struct {
	ID, Title string
	MaxPoints float64
	Status    string  // latest submission's status, "" when none
	Score     float64 // of the submission that counts (best or latest)
	ScoreMax  float64
	Graded    int
	HasGrade  bool
	LatestID  string
	LatestAt  time.Time
}

func (h *handler) exercises(c *gin.Context) {
	ctx, lang, u := c.Request.Context(), c.GetString(ctxLang), sessionOf(c).User
	latest, err := h.Policy.Latest(ctx, u)
	if err != nil {
		h.fail(c, err)
		return
	}
	standings, err := h.Policy.Standings(ctx, u.ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	var rows []exerciseRow
	for _, ex := range h.Catalog.List() {
		r := exerciseRow{ID: ex.ID, Title: exerciseTitle(ex, lang), MaxPoints: ex.MaxPoints(nil)}
		if s, ok := latest[ex.ID]; ok {
			r.Status, r.LatestID, r.LatestAt = s.Status, s.ID, s.CreatedAt
		}
		if st, ok := standings[ex.ID]; ok && st.Submission != nil {
			r.Score, r.ScoreMax, r.Graded, r.HasGrade = st.Submission.Score, st.Submission.MaxScore, st.Attempts, true
		}
		rows = append(rows, r)
	}
	h.render(c, http.StatusOK, "exercises", translate(lang, "exercises.title"), "exercises", rows)
}

type exercisePageData struct {
	ID, Title string
	MaxPoints float64
	Questions int
	History   []domain.Submission
	Problems  []string
	Message   string
	// The exercise's policy as the learner needs it.
	Deadline *time.Time
	Late     []string // the late-penalty schedule, one line per step
	// Original is the exercise's deadline when the learner has an
	// extension (Deadline is then theirs); nil otherwise.
	Original *time.Time
	Attempts string // attempts left (or used, when unlimited)
}

func (h *handler) exercisePage(c *gin.Context) {
	h.renderExercise(c, http.StatusOK, nil)
}

// refuseUpload shows the exercise page with why the upload was refused,
// under the status policy.Status gives the error.
func (h *handler) refuseUpload(c *gin.Context, err error) {
	h.refused(c, err, func(status int) { h.renderExercise(c, status, err) })
}

func (h *handler) renderExercise(c *gin.Context, status int, uploadErr error) {
	ctx, lang, u := c.Request.Context(), c.GetString(ctxLang), sessionOf(c).User
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	hist, err := h.Policy.History(ctx, u, ex.ID, 100)
	if err != nil {
		h.fail(c, err)
		return
	}
	// The learner's cohort may set its own deadline for the exercise.
	ex = h.Policy.ForLearner(ctx, u, ex)
	d := exercisePageData{ID: ex.ID, Title: exerciseTitle(ex, lang), MaxPoints: ex.MaxPoints(nil), Questions: len(ex.Graded), History: hist,
		Deadline: ex.Deadline, Late: lateSchedule(lang, ex.LatePenalty)}
	if h.Extensions != nil {
		pol, ext, err := h.Extensions.Policy(ctx, ex, u.ID)
		if err != nil {
			h.fail(c, err)
			return
		}
		if ext != nil {
			d.Deadline, d.Late, d.Original = pol.Deadline, lateSchedule(lang, pol.LatePenalty), ex.Deadline
		}
	}
	used, err := h.Policy.Attempts(ctx, u, ex.ID)
	if err != nil {
		h.fail(c, err)
		return
	}
	d.Attempts = attemptsText(lang, used, ex.MaxSubmissions)
	if we := (*intake.WrongExerciseError)(nil); errors.As(uploadErr, &we) && lang == langZH {
		uploadErr = we.Chinese()
	}
	if uploadErr != nil {
		d.Message, d.Problems = problemText(lang, domain.ErrorMessage(uploadErr)), problemTexts(lang, domain.ErrorProblems(uploadErr))
	}
	h.render(c, status, "exercise", d.Title, "exercises", d)
}

// lateSchedule writes each late-penalty step, in order of lateness.
func lateSchedule(lang string, steps []exercise.LateStep) []string {
	sorted := slices.Clone(steps)
	slices.SortFunc(sorted, func(a, b exercise.LateStep) int { return cmp.Compare(a.After, b.After) })
	out := make([]string, len(sorted))
	for i, st := range sorted {
		out[i] = fmt.Sprintf(translate(lang, "ex.late_step"), fmtSpan(lang, time.Duration(st.After)), trimFloat(st.Multiplier))
	}
	return out
}

// fmtSpan writes a lateness in the largest whole unit (days, hours, minutes).
func fmtSpan(lang string, d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return plural(lang, "n.days", int(d/(24*time.Hour)))
	case d >= time.Hour && d%time.Hour == 0:
		return plural(lang, "n.hours", int(d/time.Hour))
	case d%time.Minute == 0:
		return plural(lang, "n.minutes", int(d/time.Minute))
	}
	return plural(lang, "n.seconds", int(d/time.Second))
}

// attemptsText says how many attempts are left (or used, without a cap).
func attemptsText(lang string, used, maxAttempts int) string {
	if maxAttempts <= 0 {
		return plural(lang, "n.attempts_used", used) + " · " + translate(lang, "ex.unlimited")
	}
	return plural(lang, "n.attempts_left", max(0, maxAttempts-used)) + " · " + plural(lang, "n.attempts_used", used)
}

func (h *handler) starter(c *gin.Context) {
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+ex.Config.Starter+`"`)
	c.Data(http.StatusOK, "application/x-ipynb+json", ex.StarterBytes)
}

// upload takes the form's notebook through the same intake as the API and
// shows the new submission, or the exercise page with every problem.
func (h *handler) upload(c *gin.Context) {
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	ok := h.multipartForm(c, h.MaxUpload, func() {
		h.Submissions.CountRefused(c.Request.Context(), sessionOf(c).User, ex.ID)
		h.refuseUpload(c, domain.Errorf(domain.ETOOLARGE, "the upload is larger than the %d byte limit", h.MaxUpload))
	})
	if !ok {
		return
	}
	defer c.Request.MultipartForm.RemoveAll()
	f, _, err := c.Request.FormFile("notebook")
	if err != nil {
		h.refuseUpload(c, &domain.Error{Code: domain.EINVALID, Message: "the submission is not valid", Problems: []string{"choose a notebook file (.ipynb)"}})
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, h.MaxUpload+1))
	if err != nil || int64(len(data)) > h.MaxUpload {
		h.Submissions.CountRefused(c.Request.Context(), sessionOf(c).User, ex.ID)
		h.refuseUpload(c, domain.Errorf(domain.ETOOLARGE, "the notebook is larger than the %d byte limit", h.MaxUpload))
		return
	}
	sub, created, err := h.Submissions.Submit(c.Request.Context(), intake.Request{User: sessionOf(c).User, ExerciseID: ex.ID, Notebook: data, Cohort: c.Request.FormValue("cohort")})
	if err != nil {
		h.refuseUpload(c, err)
		return
	}
	if created && h.OnSubmitted != nil {
		h.OnSubmitted()
	}
	c.Redirect(http.StatusSeeOther, "/submissions/"+sub.ID)
}

// ownSubmission returns a submission the signed-in user made; anyone
// else's is reported as not found, so ids cannot be probed.
func (h *handler) ownSubmission(c *gin.Context) (domain.Submission, bool) {
	sub, err := h.Policy.Readable(c.Request.Context(), sessionOf(c).User, c.Param("id"))
	if err == nil && sub.UserID != sessionOf(c).User.ID {
		// Staff read others' work on the dashboard's page.
		c.Redirect(http.StatusSeeOther, "/dashboard/submissions/"+sub.ID)
		c.Abort()
		return sub, false
	}
	if err != nil {
		h.fail(c, err)
		return sub, false
	}
	return sub, true
}

type submissionPageData struct {
	Sub           domain.Submission
	WaitingFor    string // what a queued submission waits for (waiting.go)
	ExerciseTitle string
	Final         bool
	Staff         bool
	Notebook      []cellView
	NotebookError string
	Executed      bool
	// ProbeSeed is the seed the hidden tests ran with (staff only): with it
	// `npugrade check --seed` reproduces the grade.
	ProbeSeed    int64
	HasProbeSeed bool
	// Labels name each graded cell as the notebook numbers its question
	// ("第 13 题 · 隐藏测试"), by cell id.
	Labels map[string]string
	// Requests are the regrade requests on the submission, and
	// Ask the request form as the learner filled it in when it came back
	// with its problems.
	Requests []domain.RegradeRequest
	Ask      regradeAskForm
}

// regradeAskForm is the learner's regrade request form, shown again with
// why it was not accepted.
type regradeAskForm struct {
	Cell, Message string
	Error         string
	Problems      []string
}

// questionLabels names cells by their question's number; cells the
// notebook numbers no question for keep their id, and two cells of one
// question (other than its hidden test) add their id to tell them apart.
// Staff also see the cell's id.
func questionLabels(ex *exercise.Exercise, lang string, cells []domain.CellResult, staff bool) map[string]string {
	out := map[string]string{}
	count := map[string]int{}
	for _, c := range cells {
		n, ok := ex.Question(c.CellID)
		if !ok {
			continue
		}
		label := fmt.Sprintf(translate(lang, "question.n"), n)
		if ex.IsProbe(c.CellID) {
			label += " · " + translate(lang, "question.hidden")
		}
		out[c.CellID] = label
		count[label]++
	}
	for id, label := range out {
		if count[label] > 1 || staff {
			out[id] = label + " (" + id + ")"
		}
	}
	return out
}

func final(status string) bool {
	return domain.Scored(status) || status == domain.StatusFailed
}

func (h *handler) submissionPage(c *gin.Context) {
	h.renderSubmission(c, http.StatusOK, regradeAskForm{})
}

// renderSubmission shows the learner's own submission; ask is the regrade
// request form's content (empty but for a refused request).
func (h *handler) renderSubmission(c *gin.Context, status int, ask regradeAskForm) {
	sub, ok := h.ownSubmission(c)
	if !ok {
		return
	}
	lang := c.GetString(ctxLang)
	sub = h.Policy.Redact(c.Request.Context(), sessionOf(c).User, sub)
	d := submissionPageData{Sub: sub, Final: final(sub.Status), ExerciseTitle: sub.ExerciseID, Ask: ask, WaitingFor: h.waitingFor(c, sub)}
	if ex, err := h.Catalog.Get(sub.ExerciseID); err == nil {
		d.ExerciseTitle = exerciseTitle(ex, lang)
		d.Labels = questionLabels(ex, lang, sub.Cells, false)
	}
	var err error
	if d.Requests, err = h.Appeals.Of(c.Request.Context(), sessionOf(c).User, sub.ID); err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, status, "submission", translate(lang, "submission.title")+" · "+d.ExerciseTitle, "exercises", d)
}

// submissionStatus is what the page's script polls while a submission
// is queued or running.
func (h *handler) submissionStatus(c *gin.Context) {
	sub, ok := h.ownSubmission(c)
	if !ok {
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"status": sub.Status, "label": translate(c.GetString(ctxLang), "st."+sub.Status),
		"score": sub.Score, "max_score": sub.MaxScore, "final": final(sub.Status), "waiting_for": h.waitingFor(c, sub)})
}
