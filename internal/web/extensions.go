package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
)

// Extensions grants, lists and revokes per-learner extensions and says
// which policy applies to a learner (grade.Extensions; the API uses the
// same service).
type Extensions interface {
	Grant(ctx context.Context, actor domain.User, exerciseID string, req grade.ExtensionRequest) (grade.ExtensionResult, error)
	Revoke(ctx context.Context, actor domain.User, exerciseID, learner string) (grade.ExtensionResult, error)
	List(ctx context.Context, exerciseID string, revoked bool) ([]domain.Extension, error)
	Policy(ctx context.Context, ex *exercise.Exercise, userID int64) (exercise.Policy, *domain.Extension, error)
}

type extensionsData struct {
	ID, Title string
	Deadline  *time.Time
	List      []domain.Extension
	Message   string
	Problems  []string
	// The form's values, kept when it is shown again with its problems.
	Learner, NewDeadline string
	LateMode             string // same (the exercise's schedule), none or steps
	Steps                []lateRow
	Done                 string // what was just done, for the notice
	// Learners are the picker's choices; Zone names the zone the deadline
	// is entered in (the viewer's).
	Learners []domain.User
	Zone     string
}

// lateRow is one step of the form's late penalty: after Hours hours late,
// the score is multiplied by Multiplier.
type lateRow struct{ Hours, Multiplier string }

// lateRows is how many steps the form offers.
const lateRows = 3

func (h *handler) extensionsPage(c *gin.Context) {
	h.renderExtensions(c, http.StatusOK, extensionsData{Done: c.Query("done")})
}

func (h *handler) renderExtensions(c *gin.Context, status int, d extensionsData) {
	lang := c.GetString(ctxLang)
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	if d.List, err = h.Extensions.List(c.Request.Context(), ex.ID, true); err != nil {
		h.fail(c, err)
		return
	}
	d.ID, d.Title, d.Deadline = ex.ID, exerciseTitle(ex, lang), ex.Deadline
	if d.Learners, err = h.Sections.Learners(c.Request.Context()); err != nil {
		h.fail(c, err)
		return
	}
	d.Zone = zoneLabel(time.Now().In(viewerZone(c.Request)))
	if d.LateMode == "" {
		d.LateMode = "same"
	}
	for len(d.Steps) < lateRows {
		d.Steps = append(d.Steps, lateRow{})
	}
	switch d.Done {
	case "granted", "revoked":
		d.Done = translate(lang, "ext.done."+d.Done)
	default:
		d.Done = ""
	}
	h.render(c, status, "extensions", translate(lang, "ext.title")+" · "+ex.ID, "dashboard", d)
}

func (h *handler) grantExtension(c *gin.Context) {
	lang := c.GetString(ctxLang)
	d := extensionsData{Learner: strings.TrimSpace(c.PostForm("learner")), NewDeadline: c.PostForm("deadline"), LateMode: c.PostForm("late_mode")}
	after, mult := c.PostFormArray("late_after"), c.PostFormArray("late_multiplier")
	for i := 0; i < lateRows && (i < len(after) || i < len(mult)); i++ {
		var r lateRow
		if i < len(after) {
			r.Hours = strings.TrimSpace(after[i])
		}
		if i < len(mult) {
			r.Multiplier = strings.TrimSpace(mult[i])
		}
		d.Steps = append(d.Steps, r)
	}
	// A zone-less time (the datetime-local field) is in the viewer's zone,
	// the one the page shows.
	req := grade.ExtensionRequest{Learner: d.Learner, Deadline: inZone(d.NewDeadline, viewerZone(c.Request))}
	steps, problems := lateFromForm(lang, d.LateMode, d.Steps, strings.TrimSpace(c.PostForm("late_penalty")))
	if len(problems) > 0 {
		d.Message, d.Problems = translate(lang, "ext.invalid"), problems
		h.renderExtensions(c, http.StatusUnprocessableEntity, d)
		return
	}
	req.LatePenalty = steps
	if _, err := h.Extensions.Grant(c.Request.Context(), sessionOf(c).User, c.Param("id"), req); err != nil {
		if code := domain.ErrorCode(err); code != domain.EINVALID {
			h.fail(c, err)
			return
		}
		d.Message = translate(lang, "ext.invalid")
		for _, p := range domain.ErrorProblems(err) {
			d.Problems = append(d.Problems, problemText(lang, p))
		}
		h.renderExtensions(c, http.StatusUnprocessableEntity, d)
		return
	}
	c.Redirect(http.StatusSeeOther, "/dashboard/exercises/"+url.PathEscape(c.Param("id"))+"/extensions?done=granted")
}

func (h *handler) revokeExtension(c *gin.Context) {
	if _, err := h.Extensions.Revoke(c.Request.Context(), sessionOf(c).User, c.Param("id"), c.Param("learner")); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/dashboard/exercises/"+url.PathEscape(c.Param("id"))+"/extensions?done=revoked")
}

// lateSteps reads an extension's stored schedule for display.
func lateSteps(raw json.RawMessage) []exercise.LateStep {
	var steps []exercise.LateStep
	_ = json.Unmarshal(raw, &steps) // written by grade.Extensions from valid steps
	return steps
}

// extendedDeadlines is every active extension of the exercise ("" = of
// every exercise), by learner and exercise, for the gradebook.
func (h *handler) extendedDeadlines(ctx context.Context, exerciseID string) (map[[2]string]*time.Time, error) {
	out := map[[2]string]*time.Time{}
	if h.Extensions == nil {
		return out, nil
	}
	for _, ex := range h.Catalog.List() {
		if exerciseID != "" && ex.ID != exerciseID {
			continue
		}
		list, err := h.Extensions.List(ctx, ex.ID, false)
		if err != nil {
			return nil, err
		}
		for _, e := range list {
			deadline := e.Deadline
			out[[2]string{e.Learner, e.ExerciseID}] = &deadline
		}
	}
	return out, nil
}

// inZone writes a zone-less "2006-01-02T15:04" as RFC 3339 in loc; any
// other text is passed on for grade.ParseDeadline to judge.
func inZone(s string, loc *time.Location) string {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return s
}

// lateFromForm reads the form's late penalty: the exercise's (nil), none,
// or the filled steps. A JSON schedule in late_penalty (the form before
// it had fields; scripts) still counts when given.
func lateFromForm(lang, mode string, rows []lateRow, raw string) (*[]exercise.LateStep, []string) {
	if raw != "" {
		var steps []exercise.LateStep
		if err := json.Unmarshal([]byte(raw), &steps); err != nil {
			return nil, []string{"late_penalty: " + err.Error()}
		}
		return &steps, nil
	}
	switch mode {
	case "", "same":
		return nil, nil
	case "none":
		return &[]exercise.LateStep{}, nil
	case "steps":
	default:
		return nil, []string{fmt.Sprintf(translate(lang, "ext.bad_mode"), mode)}
	}
	steps := []exercise.LateStep{}
	var problems []string
	for i, r := range rows {
		if r.Hours == "" && r.Multiplier == "" {
			continue
		}
		h, errH := strconv.ParseFloat(r.Hours, 64)
		m, errM := strconv.ParseFloat(r.Multiplier, 64)
		if errH != nil || h < 0 || h > 24*366 {
			problems = append(problems, fmt.Sprintf(translate(lang, "ext.bad_hours"), i+1, r.Hours))
		}
		if errM != nil {
			problems = append(problems, fmt.Sprintf(translate(lang, "ext.bad_mult"), i+1, r.Multiplier))
		}
		if errH == nil && errM == nil {
			steps = append(steps, exercise.LateStep{After: exercise.Duration(time.Duration(h * float64(time.Hour))), Multiplier: m})
		}
	}
	if len(problems) == 0 && len(steps) == 0 {
		problems = append(problems, translate(lang, "ext.no_steps"))
	}
	return &steps, problems
}
