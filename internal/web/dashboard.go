package web

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/fleet"
)

type dashboardData struct {
	PerDay    []domain.DayCount
	PerDaySVG any
	Queue     []bar
	QueueSVG  any
	Latency   domain.Latency
	Runners   []fleet.Runner
	// Unserved are the exercises no runner online can grade (waiting.go).
	Unserved  []unservedRow
	Exercises []exerciseRow
	Recent    []domain.Submission
	// Section filters the per-day chart and the recent submissions.
	Section  string
	Sections []string
}

// queueNow are the job states the queue's depth is made of.
var queueNow = []string{domain.JobQueued, domain.JobLeased}

func (h *handler) dashboard(c *gin.Context) {
	ctx, lang := c.Request.Context(), c.GetString(ctxLang)
	d := dashboardData{Section: c.Query("section")}
	var err error
	if d.Sections, err = h.Sections.Sections(ctx); err != nil {
		h.fail(c, err)
		return
	}
	loc := viewerZone(c.Request)
	if d.PerDay, err = h.Sections.SectionSubmissionsPerDay(ctx, 14, d.Section, loc); err != nil {
		h.fail(c, err)
		return
	}
	var days []bar
	for _, dc := range d.PerDay {
		days = append(days, bar{Label: dc.Day.Format("01-02"), Value: float64(dc.Count)})
	}
	d.PerDaySVG = columnChart(chart{Title: translate(lang, "dash.per_day"), XLabel: translate(lang, "axis.day") + " (" + zoneLabel(time.Now().In(loc)) + ")",
		YLabel: translate(lang, "axis.submissions"), Bars: days, Fill: "#2f6fb0"})
	depth, err := h.Queue.PendingDepth(ctx)
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, st := range queueNow {
		d.Queue = append(d.Queue, bar{Label: translate(lang, "job."+st), Value: float64(depth[st])})
	}
	hist, err := h.Reports.QueueHistory(ctx, 24*time.Hour, time.Hour)
	if err != nil {
		h.fail(c, err)
		return
	}
	var points []bar
	for _, p := range hist {
		points = append(points, bar{Label: p.At.In(loc).Format("15:04"), Value: float64(p.Waiting)})
	}
	d.QueueSVG = columnChart(chart{Title: translate(lang, "dash.queue24"), XLabel: translate(lang, "axis.hour") + " (" + zoneLabel(time.Now().In(loc)) + ")",
		YLabel: translate(lang, "axis.waiting"), Bars: points, Fill: "#7a5cb0"})
	if d.Latency, err = h.Reports.GradingLatency(ctx, 500); err != nil {
		h.fail(c, err)
		return
	}
	if d.Runners, err = h.Fleet.Runners(ctx, time.Time{}); err != nil {
		h.fail(c, err)
		return
	}
	for _, ex := range h.Catalog.List() {
		d.Exercises = append(d.Exercises, exerciseRow{ID: ex.ID, Title: exerciseTitle(ex, lang), MaxPoints: ex.MaxPoints(nil)})
	}
	d.Unserved = unserved(h.Catalog.List(), d.Runners, lang == langZH)
	if d.Recent, err = h.Sections.SectionRecentSubmissions(ctx, 20, d.Section); err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "dashboard", translate(lang, "dash.title"), "dashboard", d)
}

// gradebookCohort is the one cohort a gradebook lists: the one picked
// (the scope narrowed by ?cohort=), else an instructor's first cohort;
// 0 (every learner) for an admin who picked none. An instructor who
// teaches no cohort gets cohort -1: no learners.
func gradebookCohort(ctx context.Context) int64 {
	sc, ok := domain.ScopeOf(ctx)
	switch {
	case !ok || sc.All:
		return 0
	case len(sc.Cohorts) == 0:
		return -1
	}
	return sc.Cohorts[0]
}

// countsOf returns which submission counts for ex under its policy.
func countsOf(ex *exercise.Exercise) string {
	if ex.Counts == exercise.CountsLatest {
		return domain.CountLatest
	}
	return domain.CountBest
}

func (h *handler) gradebookFilter(c *gin.Context) (domain.GradebookFilter, error) {
	f := domain.GradebookFilter{ExerciseID: c.Query("exercise"), Learner: strings.TrimSpace(c.Query("learner")), Section: c.Query("section"),
		Cohort: gradebookCohort(c.Request.Context())}
	for _, ex := range h.Catalog.List() {
		f.Exercises = append(f.Exercises, ex.ID)
	}
	if f.ExerciseID != "" {
		if _, err := h.Catalog.Get(f.ExerciseID); err != nil {
			return f, domain.Errorf(domain.EINVALID, "unknown exercise %q", f.ExerciseID)
		}
	}
	f.Counts = func(id string) string {
		ex, err := h.Catalog.Get(id)
		if err != nil {
			return domain.CountBest
		}
		return countsOf(ex)
	}
	return f, nil
}

type exerciseStatsData struct {
	ID, Title   string
	MaxPoints   float64
	Learners    int
	Histogram   any
	PassRate    any
	Questions   []domain.QuestionStat
	Failures    []domain.FailureStat
	Counts      string
	HasFailures bool
	// Manual are the manual cells, each with its grading page.
	Manual []string
	// Feedback is the exercise's feedback policy and Releases its releases.
	Feedback string
	Releases []domain.FeedbackRelease
	Released bool
	// Section filters every statistic of the page; Pending
	// counts the counted submissions waiting for manual grading.
	Section  string
	Sections []string
	Pending  int
}

func (h *handler) exerciseStats(c *gin.Context) {
	ctx, lang := c.Request.Context(), c.GetString(ctxLang)
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	d := exerciseStatsData{ID: ex.ID, Title: exerciseTitle(ex, lang), MaxPoints: ex.MaxPoints(nil), Counts: countsOf(ex)}
	for _, m := range ex.Manual {
		d.Manual = append(d.Manual, m.ID)
	}
	d.Feedback, d.Released, d.Section = ex.Feedback, c.Query("released") == "1", c.Query("section")
	if d.Sections, err = h.Sections.Sections(ctx); err != nil {
		h.fail(c, err)
		return
	}
	if d.Releases, err = h.Releases.Releases(ctx, ex.ID); err != nil {
		h.fail(c, err)
		return
	}
	bins := make([]bar, 10)
	for i := range bins {
		bins[i].Label = fmt.Sprintf("%d–%d", i*10, i*10+10)
	}
	f, _ := h.gradebookFilter(c)
	f.ExerciseID, f.Learner = ex.ID, ""
	err = h.Reports.Gradebook(ctx, f, func(r domain.GradebookRow) error {
		if r.Attempts == 0 || r.MaxScore <= 0 {
			return nil
		}
		d.Learners++
		if r.ManualPending() {
			d.Pending++
		}
		i := int(10 * r.Score / r.MaxScore)
		bins[min(max(i, 0), 9)].Value++
		return nil
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	d.Histogram = columnChart(chart{Title: translate(lang, "ex.hist"), XLabel: translate(lang, "axis.score_pct"),
		YLabel: translate(lang, "axis.learners"), Bars: bins, Fill: "#2f8f5b"})
	if d.Questions, err = h.Reports.QuestionStats(ctx, ex.ID, d.Section); err != nil {
		h.fail(c, err)
		return
	}
	// Hardest questions first: the lowest pass rate at the top.
	slices.SortStableFunc(d.Questions, func(a, b domain.QuestionStat) int { return cmp.Compare(passRate(a), passRate(b)) })
	var rates []bar
	for _, q := range d.Questions {
		pct := 0.0
		if q.Total > 0 {
			pct = 100 * float64(q.Passed) / float64(q.Total)
		}
		rates = append(rates, bar{Label: q.CellID, Value: pct, Text: fmt.Sprintf("%.0f%% (%d/%d)", pct, q.Passed, q.Total)})
	}
	d.PassRate = rowChart(chart{Title: translate(lang, "ex.passrate"), XLabel: translate(lang, "axis.pass_pct"), Bars: rates, Fill: "#2f6fb0"})
	if d.Failures, err = h.Reports.CommonFailures(ctx, ex.ID, d.Section, 10); err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "exercise_stats", translate(lang, "ex.title")+" · "+d.Title, "dashboard", d)
}

func passRate(q domain.QuestionStat) float64 {
	if q.Total == 0 {
		return 0
	}
	return float64(q.Passed) / float64(q.Total)
}

type gradebookData struct {
	Exercises []exerciseRow
	Exercise  string
	Learner   string
	Section   string
	Sections  []string
	// Extended holds each active extension's deadline, by learner and
	// exercise: the scores already count it; the page says so.
	Extended  map[[2]string]*time.Time
	Rows      []domain.GradebookRow
	Truncated bool
	CSVURL    string
}

const gradebookPageRows = 500

var errEnough = errors.New("enough rows")

func (h *handler) gradebookPage(c *gin.Context) {
	ctx, lang := c.Request.Context(), c.GetString(ctxLang)
	f, err := h.gradebookFilter(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	d := gradebookData{Exercise: f.ExerciseID, Learner: f.Learner, Section: f.Section, CSVURL: "/api/v1/gradebook.csv"}
	if d.Sections, err = h.Sections.Sections(ctx); err != nil {
		h.fail(c, err)
		return
	}
	if d.Extended, err = h.extendedDeadlines(ctx, f.ExerciseID); err != nil {
		h.fail(c, err)
		return
	}
	for _, ex := range h.Catalog.List() {
		d.Exercises = append(d.Exercises, exerciseRow{ID: ex.ID, Title: exerciseTitle(ex, lang)})
	}
	if q := c.Request.URL.Query(); len(q) > 0 {
		q.Del("lang")
		if enc := q.Encode(); enc != "" {
			d.CSVURL += "?" + enc
		}
	}
	// The database reads one more learner than the page shows, no more:
	// the page says there are more without reading the whole class.
	perLearner := len(f.Exercises)
	if f.ExerciseID != "" {
		perLearner = 1
	}
	f.MaxLearners = gradebookPageRows/max(perLearner, 1) + 1
	err = h.Reports.Gradebook(ctx, f, func(r domain.GradebookRow) error {
		if len(d.Rows) == gradebookPageRows {
			d.Truncated = true
			return errEnough
		}
		d.Rows = append(d.Rows, r)
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "gradebook", translate(lang, "gb.title"), "gradebook", d)
}

// gradebookCSV streams GET /api/v1/gradebook.csv: one row per learner ×
// exercise with the counted score. It accepts an instructor or admin
// bearer token or a signed-in browser; learners get 403.
func (h *handler) gradebookCSV(c *gin.Context) {
	ctx := c.Request.Context()
	var u domain.User
	var err error
	if hdr := c.GetHeader("Authorization"); hdr != "" {
		token, ok := strings.CutPrefix(hdr, "Bearer ")
		if !ok {
			err = domain.Errorf(domain.EUNAUTHORIZED, "an Authorization: Bearer <token> header is required")
		} else {
			u, err = h.userByToken(c, strings.TrimSpace(token))
		}
	} else {
		id, _ := c.Cookie(sessionCookie)
		var s domain.WebSession
		if s, err = h.Sessions.WebSessionByID(ctx, id); err == nil {
			u = s.User
		} else if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
			err = domain.Errorf(domain.EUNAUTHORIZED, "a bearer token or a signed-in session is required")
		}
	}
	if err != nil {
		if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
			c.Header("WWW-Authenticate", `Bearer realm="npugrade"`)
		}
		h.Problem(c, err)
		return
	}
	if !u.Role.CanSeeAll() {
		h.Problem(c, domain.Errorf(domain.EFORBIDDEN, "the gradebook needs the instructor or admin role"))
		return
	}
	if ctx, err = h.Policy.Scoped(ctx, u, c.Query("cohort")); err != nil {
		h.Problem(c, err)
		return
	}
	c.Request = c.Request.WithContext(ctx)
	f, err := h.gradebookFilter(c)
	if err != nil {
		h.Problem(c, err)
		return
	}
	// The export streams for as long as it has rows, past the server's
	// WriteTimeout.
	_ = http.NewResponseController(c.Writer).SetWriteDeadline(time.Now().Add(10 * time.Minute))
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="gradebook.csv"`)
	c.Header("Cache-Control", "no-store")
	c.Status(http.StatusOK)
	w := csv.NewWriter(c.Writer)
	// section and status, then manual_waiting, come last, so the
	// earlier columns keep their places; status is needs-manual while the
	// counted score is the automatic part's and a manual question waits for
	// a person; manual_waiting counts the learner's submissions that wait.
	// name (the roster's full name) is last, for the same reason.
	_ = w.Write([]string{"learner", "exercise", "policy", "score", "max_score", "attempts", "submission_id", "graded_at", "section", "status", "manual_waiting", "name"})
	n := 0
	err = h.Reports.Gradebook(ctx, f, func(r domain.GradebookRow) error {
		rec := []string{csvSafe(r.Learner), r.ExerciseID, r.Policy, "", "", strconv.Itoa(r.Attempts), r.SubmissionID, "", csvSafe(r.Section), r.Status,
			strconv.Itoa(r.ManualWaiting), csvSafe(r.FullName)}
		if r.Attempts > 0 {
			rec[3] = strconv.FormatFloat(r.Score, 'f', -1, 64)
			rec[4] = strconv.FormatFloat(r.MaxScore, 'f', -1, 64)
		}
		if r.GradedAt != nil {
			rec[7] = r.GradedAt.UTC().Format(time.RFC3339)
		}
		if err := w.Write(rec); err != nil {
			return err
		}
		if n++; n%1000 == 0 {
			w.Flush()
			return w.Error()
		}
		return nil
	})
	if err != nil {
		// The 200 is sent: aborting the response (no final chunk) is how
		// the client learns the file is incomplete; a clean end would
		// pass a short gradebook off as the whole one.
		h.Log.Error("gradebook csv export failed mid-way; response aborted", "rows", n, "err", err)
		panic(http.ErrAbortHandler)
	}
	w.Flush()
}

// csvSafe keeps a spreadsheet from reading a learner's name as a formula.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func (h *handler) staffSubmission(c *gin.Context) {
	ctx, lang, u := c.Request.Context(), c.GetString(ctxLang), sessionOf(c).User
	sub, err := h.Policy.Readable(ctx, u, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	d := submissionPageData{Sub: sub, Final: final(sub.Status), Staff: true, ExerciseTitle: sub.ExerciseID}
	if ex, err := h.Catalog.Get(sub.ExerciseID); err == nil {
		d.ExerciseTitle = exerciseTitle(ex, lang)
		d.Labels = questionLabels(ex, lang, sub.Cells, true)
	}
	raw, err := h.Policy.Executed(ctx, u, sub)
	switch {
	case domain.ErrorCode(err) == domain.ENOTFOUND:
	case err != nil:
		h.fail(c, err)
		return
	default:
		d.Executed = true
		if d.Notebook, err = renderNotebook(raw, sub.Cells); err != nil {
			d.NotebookError = err.Error()
		}
		d.ProbeSeed, d.HasProbeSeed = probeSeedOf(raw)
	}
	if d.Requests, err = h.Appeals.Of(ctx, u, sub.ID); err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "submission", translate(lang, "submission.title")+" · "+sub.UserName+" · "+d.ExerciseTitle, "dashboard", d)
}

func (h *handler) staffNotebook(c *gin.Context) {
	ctx, u := c.Request.Context(), sessionOf(c).User
	sub, err := h.Policy.Readable(ctx, u, c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	raw, err := h.Policy.Executed(ctx, u, sub)
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+sub.ID+`.executed.ipynb"`)
	c.Data(http.StatusOK, "application/x-ipynb+json", raw)
}
