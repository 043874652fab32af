package web

import (
	"cmp"
	"context"
	"encoding/csv"
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
	// Columns are the exercises the table shows: every one, or the one
	// filtered.
	Columns  []exerciseRow
	Exercise string
	Learner  string
	Section  string
	Sections []string
	Lines    []gradebookLine
	// Learners is how many learners match; First and Last number the
	// page's (from 1), Page and Pages the page.
	Learners, First, Last, Page, Pages int
	PrevURL, NextURL                   string
	CSVURL                             string
}

// gradebookLine is one learner's row of the page: a cell per column.
type gradebookLine struct {
	Learner, FullName, Section string
	Cells                      []gradebookCell
	Score, MaxScore            float64
	ManualPending              bool
}

// gradebookCell is one learner × exercise; Extended is the learner's
// extension's deadline (nil: none).
type gradebookCell struct {
	domain.GradebookRow
	Extended *time.Time
}

// gradebookPageLearners is how many learners a page of the gradebook shows.
const gradebookPageLearners = 50

func (h *handler) gradebookPage(c *gin.Context) {
	ctx, lang := c.Request.Context(), c.GetString(ctxLang)
	f, err := h.gradebookFilter(c)
	if err != nil {
		h.fail(c, err)
		return
	}
	d := gradebookData{Exercise: f.ExerciseID, Learner: f.Learner, Section: f.Section, CSVURL: "/api/v1/gradebook.csv", Page: 1}
	if p := c.Query("page"); p != "" {
		if d.Page, err = strconv.Atoi(p); err != nil || d.Page < 1 {
			h.fail(c, domain.Errorf(domain.EINVALID, "page %q: want a page number from 1", p))
			return
		}
	}
	if d.Sections, err = h.Sections.Sections(ctx); err != nil {
		h.fail(c, err)
		return
	}
	// Each active extension's deadline, by learner and exercise: the
	// scores already count it; the page says so.
	extended, err := h.extendedDeadlines(ctx, f.ExerciseID)
	if err != nil {
		h.fail(c, err)
		return
	}
	for _, ex := range h.Catalog.List() {
		row := exerciseRow{ID: ex.ID, Title: exerciseTitle(ex, lang), MaxPoints: ex.MaxPoints(nil)}
		d.Exercises = append(d.Exercises, row)
		if f.ExerciseID == "" || f.ExerciseID == ex.ID {
			d.Columns = append(d.Columns, row)
		}
	}
	q := c.Request.URL.Query()
	q.Del("lang")
	q.Del("page")
	if enc := q.Encode(); enc != "" {
		d.CSVURL += "?" + enc
	}
	if d.Learners, err = h.Reports.GradebookLearners(ctx, f); err != nil {
		h.fail(c, err)
		return
	}
	// A page past the end shows the last one.
	d.Pages = max(1, (d.Learners+gradebookPageLearners-1)/gradebookPageLearners)
	d.Page = min(d.Page, d.Pages)
	f.MaxLearners, f.Offset = gradebookPageLearners, (d.Page-1)*gradebookPageLearners
	err = h.Reports.Gradebook(ctx, f, func(r domain.GradebookRow) error {
		n := len(d.Lines)
		if n == 0 || d.Lines[n-1].Cells[0].UserID != r.UserID {
			d.Lines = append(d.Lines, gradebookLine{Learner: r.Learner, FullName: r.FullName, Section: r.Section})
			n++
		}
		line := &d.Lines[n-1]
		line.Cells = append(line.Cells, gradebookCell{GradebookRow: r, Extended: extended[[2]string{r.Learner, r.ExerciseID}]})
		if r.Attempts > 0 {
			line.Score += r.Score
		}
		line.ManualPending = line.ManualPending || r.ManualPending()
		return nil
	})
	if err != nil {
		h.fail(c, err)
		return
	}
	for i := range d.Lines {
		for _, col := range d.Columns {
			d.Lines[i].MaxScore += col.MaxPoints
		}
	}
	if len(d.Lines) > 0 {
		d.First = f.Offset + 1
		d.Last = f.Offset + len(d.Lines)
	}
	pageURL := func(n int) string {
		pq := c.Request.URL.Query()
		pq.Set("page", strconv.Itoa(n))
		return "/dashboard/gradebook?" + pq.Encode()
	}
	if d.Page > 1 {
		d.PrevURL = pageURL(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.NextURL = pageURL(d.Page + 1)
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
	var questions []string // "exercise/cell" column names, in order
	if q := c.Query("questions"); q != "" {
		if f.Questions, err = strconv.ParseBool(q); err != nil {
			h.Problem(c, domain.Errorf(domain.EINVALID, "questions %q: want 1 (a column per question) or 0", q))
			return
		}
	}
	if f.Questions {
		questions = h.gradebookQuestions(f)
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
	// name (the roster's full name), then score_before_penalty and the
	// opt-in question columns, are last, for the same reason.
	header := []string{"learner", "exercise", "policy", "score", "max_score", "attempts", "submission_id", "graded_at", "section", "status", "manual_waiting", "name",
		"score_before_penalty"}
	_ = w.Write(append(header, questions...))
	n := 0
	err = h.Reports.Gradebook(ctx, f, func(r domain.GradebookRow) error {
		if err := w.Write(gradebookRecord(r, questions)); err != nil {
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

// gradebookRecord is r's line of the CSV, with the points of each of the
// question columns that is r's exercise's.
func gradebookRecord(r domain.GradebookRow, questions []string) []string {
	rec := []string{csvSafe(r.Learner), r.ExerciseID, r.Policy, "", "", strconv.Itoa(r.Attempts), r.SubmissionID, "", csvSafe(r.Section), r.Status,
		strconv.Itoa(r.ManualWaiting), csvSafe(r.FullName), ""}
	if r.Attempts > 0 {
		rec[3] = strconv.FormatFloat(r.Score, 'f', -1, 64)
		rec[4] = strconv.FormatFloat(r.MaxScore, 'f', -1, 64)
		rec[12] = strconv.FormatFloat(r.RawScore, 'f', -1, 64)
	}
	if r.GradedAt != nil {
		rec[7] = r.GradedAt.UTC().Format(time.RFC3339)
	}
	for _, col := range questions {
		v := ""
		if ex, cell, _ := strings.Cut(col, "/"); ex == r.ExerciseID {
			if p, ok := r.Points[cell]; ok {
				v = strconv.FormatFloat(p, 'f', -1, 64)
			}
		}
		rec = append(rec, v)
	}
	return rec
}

// gradebookQuestions names the export's question columns: each question
// (automatically graded, then manual) of each exercise f lists, as
// "exercise/cell".
func (h *handler) gradebookQuestions(f domain.GradebookFilter) []string {
	var out []string
	for _, id := range f.Exercises {
		if f.ExerciseID != "" && id != f.ExerciseID {
			continue
		}
		ex, err := h.Catalog.Get(id)
		if err != nil {
			continue
		}
		for _, g := range ex.Graded {
			out = append(out, id+"/"+g.ID)
		}
		for _, m := range ex.Manual {
			out = append(out, id+"/"+m.ID)
		}
	}
	return out
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
