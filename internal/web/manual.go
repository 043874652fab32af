package web

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
)

// Manual grading pages. An instructor grades one manual cell
// of one submission at a time: the learner's cell as they wrote it and as
// it ran (rendered like the staff notebook view: Markdown sanitised,
// outputs inert, PNG images shown), the rubric as one-click items, an
// adjustment and a free comment. Next and previous walk either every
// scored submission on this question ("grade this question for
// everyone", in a pseudo-random order that is stable per grader, so
// graders do not all start at the same learner and no one grades in
// submission order) or the manual cells of this submission.

// ManualGrading is what the manual grading pages need (package grade's
// Manual service; the API uses the same).
type ManualGrading interface {
	// Scored lists the scored submissions of an exercise.
	Scored(ctx context.Context, exerciseID string) ([]domain.Submission, error)
	// Grades returns the manual decisions in force on a submission.
	Grades(ctx context.Context, submissionID string) (map[string]domain.ManualGrade, error)
	// Grade records a grader's rubric grade of a manual cell.
	Grade(ctx context.Context, ex *exercise.Exercise, subID, cellID string, in grade.ManualInput, grader domain.User) (domain.Submission, error)
}

const (
	modeQuestion   = "question"
	modeSubmission = "submission"
)

type manualPageData struct {
	Exercise      string
	ExerciseTitle string
	Cell          string
	Mode          string
	Manual        exercise.ManualCell
	Sub           domain.Submission
	View          *cellView
	Result        *domain.CellResult
	Current       *domain.ManualGrade
	Applied       map[string]bool
	Position      int
	Total         int
	Waiting       int
	Prev, Next    string
	Self          string
	Cells         []string
	Saved         bool
	Empty         bool
	// The form's adjustment and comment: the grade in force's, or what
	// the grader typed when the form comes back with its problems.
	Adjustment string
	Comment    string
	Message    string
	Problems   []string
}

// manualOrder sorts submission ids pseudo-randomly, stably per grader:
// by a hash of the grader's id and the submission's.
func manualOrder(graderID int64, ids []string) {
	key := func(id string) string {
		h := sha256.Sum256([]byte(strconv.FormatInt(graderID, 10) + "/" + id))
		return string(h[:])
	}
	sort.Slice(ids, func(i, j int) bool { return key(ids[i]) < key(ids[j]) })
}

func manualURL(ex, cell, sub, mode string) string {
	q := url.Values{}
	if sub != "" {
		q.Set("sub", sub)
	}
	if mode != "" && mode != modeQuestion {
		q.Set("mode", mode)
	}
	u := "/dashboard/manual/" + url.PathEscape(ex) + "/" + url.PathEscape(cell)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// manualQueue lists the scored submissions of ex in the grader's order and
// counts those still waiting on cell.
func (h *handler) manualQueue(c *gin.Context, ex *exercise.Exercise, cell string) ([]domain.Submission, int, error) {
	subs, err := h.Manual.Scored(c.Request.Context(), ex.ID)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(subs))
	byID := map[string]domain.Submission{}
	waiting := 0
	for i, s := range subs {
		ids[i], byID[s.ID] = s.ID, s
		if s.Status == domain.StatusNeedsManual {
			waiting++
		}
	}
	manualOrder(sessionOf(c).User.ID, ids)
	out := make([]domain.Submission, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out, waiting, nil
}

func (h *handler) manualPage(c *gin.Context) {
	d, title, err := h.manualView(c, c.Query("sub"), c.Query("mode"))
	if err != nil {
		h.fail(c, err)
		return
	}
	d.Saved = c.Query("saved") == "1"
	h.render(c, http.StatusOK, "manual", title, "dashboard", d)
}

// manualView is the grading page of the exercise's manual cell named in
// the path, on submission subID (the first one waiting when "").
func (h *handler) manualView(c *gin.Context, subID, mode string) (manualPageData, string, error) {
	ctx, lang := c.Request.Context(), c.GetString(ctxLang)
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		return manualPageData{}, "", err
	}
	m, ok := ex.ManualCell(c.Param("cell"))
	if !ok {
		return manualPageData{}, "", domain.Errorf(domain.ENOTFOUND, "exercise %s has no manual cell %q", ex.ID, c.Param("cell"))
	}
	d := manualPageData{Exercise: ex.ID, ExerciseTitle: exerciseTitle(ex, lang), Cell: m.ID, Manual: m, Mode: modeQuestion,
		Applied: map[string]bool{}, Adjustment: "0"}
	if mode == modeSubmission {
		d.Mode = modeSubmission
	}
	for _, mc := range ex.Manual {
		d.Cells = append(d.Cells, mc.ID)
	}
	queue, waiting, err := h.manualQueue(c, ex, m.ID)
	if err != nil {
		return d, "", err
	}
	d.Waiting, d.Total = waiting, len(queue)
	title := translate(lang, "mg.title") + " · " + d.ExerciseTitle + " · " + m.ID
	if subID == "" {
		// Start at the first submission this cell still waits in.
		for _, s := range queue {
			if s.Status == domain.StatusNeedsManual {
				subID = s.ID
				break
			}
		}
		if subID == "" && len(queue) > 0 {
			subID = queue[0].ID
		}
	}
	if subID == "" {
		d.Empty = true
		return d, title, nil
	}
	if d.Sub, err = h.Policy.Readable(ctx, sessionOf(c).User, subID); err == nil && d.Sub.ExerciseID != ex.ID {
		err = domain.Errorf(domain.ENOTFOUND, "submission %s not found", subID)
	}
	if err != nil {
		return d, "", err
	}
	return d, title, h.fillManual(c, &d, queue)
}

// fillManual adds the learner's cell, its result, the grade in force and
// the neighbours in the chosen order to d.
func (h *handler) fillManual(c *gin.Context, d *manualPageData, queue []domain.Submission) error {
	ctx := c.Request.Context()
	for i := range d.Sub.Cells {
		if d.Sub.Cells[i].CellID == d.Cell {
			d.Result = &d.Sub.Cells[i]
		}
	}
	raw, err := h.Policy.Executed(ctx, sessionOf(c).User, d.Sub)
	switch {
	case domain.ErrorCode(err) == domain.ENOTFOUND:
	case err != nil:
		return err
	default:
		cells, err := renderNotebook(raw, nil)
		if err != nil {
			return err
		}
		for i := range cells {
			if cells[i].GraderID == d.Cell {
				d.View = &cells[i]
			}
		}
	}
	grades, err := h.Manual.Grades(ctx, d.Sub.ID)
	if err != nil {
		return err
	}
	if g, ok := grades[d.Cell]; ok {
		d.Current = &g
		for _, it := range g.Items {
			d.Applied[it] = true
		}
		d.Adjustment, d.Comment = trimFloat(g.Adjustment), g.Comment
	}
	d.Self = manualURL(d.Exercise, d.Cell, d.Sub.ID, d.Mode)
	if d.Mode == modeSubmission {
		for i, id := range d.Cells {
			if id != d.Cell {
				continue
			}
			d.Position, d.Total = i+1, len(d.Cells)
			if i > 0 {
				d.Prev = manualURL(d.Exercise, d.Cells[i-1], d.Sub.ID, d.Mode)
			}
			if i+1 < len(d.Cells) {
				d.Next = manualURL(d.Exercise, d.Cells[i+1], d.Sub.ID, d.Mode)
			}
		}
		return nil
	}
	for i, s := range queue {
		if s.ID != d.Sub.ID {
			continue
		}
		d.Position = i + 1
		if i > 0 {
			d.Prev = manualURL(d.Exercise, d.Cell, queue[i-1].ID, d.Mode)
		}
		if i+1 < len(queue) {
			d.Next = manualURL(d.Exercise, d.Cell, queue[i+1].ID, d.Mode)
		}
	}
	return nil
}

// saveManual records the form's grade, then shows the next one ("save and
// next") or the same one again. A grade with problems shows the form
// again with them, as the grader filled it in.
func (h *handler) saveManual(c *gin.Context) {
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	in := grade.ManualInput{Items: c.PostFormArray("item"), Comment: c.PostForm("comment")}
	if in.Items == nil {
		in.Items = []string{}
	}
	subID := c.PostForm("sub")
	if a := strings.TrimSpace(c.PostForm("adjustment")); a != "" {
		if in.Adjustment, err = strconv.ParseFloat(a, 64); err != nil {
			h.refuseManual(c, subID, in, &domain.Error{Code: domain.EINVALID, Message: "the manual grade is invalid",
				Problems: []string{"adjustment " + strconv.Quote(clipText(a, 40)) + ": not a number"}})
			return
		}
	}
	if _, err := h.Manual.Grade(c.Request.Context(), ex, subID, c.Param("cell"), in, sessionOf(c).User); err != nil {
		h.refuseManual(c, subID, in, err)
		return
	}
	next := c.PostForm("next")
	if !strings.HasPrefix(next, "/dashboard/manual/") {
		next = manualURL(ex.ID, c.Param("cell"), subID, c.PostForm("mode"))
		if strings.Contains(next, "?") {
			next += "&saved=1"
		}
	}
	c.Redirect(http.StatusSeeOther, next)
}

// refuseManual shows the grading page again with the grade's problems
// (422) and the form as the grader filled it in; any other error is an
// error page.
func (h *handler) refuseManual(c *gin.Context, subID string, in grade.ManualInput, cause error) {
	if domain.ErrorCode(cause) != domain.EINVALID {
		h.fail(c, cause)
		return
	}
	d, title, err := h.manualView(c, subID, c.PostForm("mode"))
	if err != nil || d.Empty {
		h.fail(c, cause)
		return
	}
	d.Applied = map[string]bool{}
	for _, it := range in.Items {
		d.Applied[it] = true
	}
	d.Adjustment, d.Comment = c.PostForm("adjustment"), in.Comment
	d.Message, d.Problems = translate(c.GetString(ctxLang), "mg.invalid"), problemTexts(c.GetString(ctxLang), domain.ErrorProblems(cause))
	h.render(c, http.StatusUnprocessableEntity, "manual", title, "dashboard", d)
}

// clipText shortens s to at most n bytes of whole runes, for a message.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
