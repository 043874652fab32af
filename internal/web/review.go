package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/appeal"
	"github.com/npugrade/npugrade/internal/domain"
)

// Feedback release and regrade requests (issue 18): the release form on
// an exercise's dashboard page, the request form and answers on the
// learner's submission page, and the instructors' queue.

// FeedbackReleases releases an exercise's feedback (package feedback).
type FeedbackReleases interface {
	Release(ctx context.Context, actor domain.User, exerciseID, learner string) (domain.FeedbackRelease, error)
	Releases(ctx context.Context, exerciseID string) ([]domain.FeedbackRelease, error)
}

// Appeals handles regrade requests (package appeal; the API uses the same).
type Appeals interface {
	Ask(ctx context.Context, u domain.User, submissionID string, req appeal.Request) (domain.RegradeRequest, error)
	Of(ctx context.Context, u domain.User, submissionID string) ([]domain.RegradeRequest, error)
	Queue(ctx context.Context, state string) ([]domain.RegradeRequest, error)
	Respond(ctx context.Context, by domain.User, id int64, a appeal.Answer) (domain.RegradeRequest, error)
}

func (h *handler) releaseFeedbackForm(c *gin.Context) {
	id := c.Param("id")
	if _, err := h.Releases.Release(c.Request.Context(), sessionOf(c).User, id, c.PostForm("learner")); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/dashboard/exercises/"+id+"?released=1#feedback-release")
}

func (h *handler) askRegradeForm(c *gin.Context) {
	id := c.Param("id")
	req := appeal.Request{Cell: c.PostForm("cell"), Message: c.PostForm("message")}
	if _, err := h.Appeals.Ask(c.Request.Context(), sessionOf(c).User, id, req); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/submissions/"+id+"#regrade-requests")
}

type regradeQueueData struct {
	State    string
	Requests []domain.RegradeRequest
}

func (h *handler) regradeQueuePage(c *gin.Context) {
	lang := c.GetString(ctxLang)
	state := c.DefaultQuery("state", domain.RegradeRequestOpen)
	if state == "all" {
		state = ""
	}
	list, err := h.Appeals.Queue(c.Request.Context(), state)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "requests", translate(lang, "rq.title"), "requests", regradeQueueData{State: state, Requests: list})
}

func (h *handler) answerRegradeForm(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "regrade request %q not found", c.Param("id")))
		return
	}
	a := appeal.Answer{Answer: c.PostForm("answer"), Reason: c.PostForm("reason")}
	if p := strings.TrimSpace(c.PostForm("points")); p != "" {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			h.fail(c, domain.Errorf(domain.EINVALID, "points %q is not a number", p))
			return
		}
		a.Points = &v
	}
	if _, err := h.Appeals.Respond(c.Request.Context(), sessionOf(c).User, id, a); err != nil {
		h.fail(c, err)
		return
	}
	c.Redirect(http.StatusSeeOther, "/dashboard/regrade-requests?state=all#rq-"+strconv.FormatInt(id, 10))
}
