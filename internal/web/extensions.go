package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
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
	Learner, NewDeadline, LatePenalty string
	Done                              string // what was just done, for the notice
}

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
	switch d.Done {
	case "granted", "revoked":
		d.Done = translate(lang, "ext.done."+d.Done)
	default:
		d.Done = ""
	}
	h.render(c, status, "extensions", translate(lang, "ext.title")+" · "+ex.ID, "dashboard", d)
}

func (h *handler) grantExtension(c *gin.Context) {
	d := extensionsData{Learner: c.PostForm("learner"), NewDeadline: c.PostForm("deadline"), LatePenalty: strings.TrimSpace(c.PostForm("late_penalty"))}
	req := grade.ExtensionRequest{Learner: d.Learner, Deadline: d.NewDeadline}
	if d.LatePenalty != "" {
		var steps []exercise.LateStep
		if err := json.Unmarshal([]byte(d.LatePenalty), &steps); err != nil {
			d.Message = translate(c.GetString(ctxLang), "ext.invalid")
			d.Problems = []string{`late_penalty: ` + err.Error() + ` (JSON such as [{"after": "24h", "multiplier": 0.5}])`}
			h.renderExtensions(c, http.StatusUnprocessableEntity, d)
			return
		}
		req.LatePenalty = &steps
	}
	if _, err := h.Extensions.Grant(c.Request.Context(), sessionOf(c).User, c.Param("id"), req); err != nil {
		if code := domain.ErrorCode(err); code != domain.EINVALID {
			h.fail(c, err)
			return
		}
		d.Message, d.Problems = translate(c.GetString(ctxLang), "ext.invalid"), domain.ErrorProblems(err)
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
