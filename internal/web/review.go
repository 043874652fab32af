package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
)

// Feedback release and regrade requests: the release form on
// an exercise's dashboard page, the request form and answers on the
// learner's submission page, and the instructors' queue.

// FeedbackReleases releases an exercise's feedback (package feedback).
type FeedbackReleases interface {
	Release(ctx context.Context, actor domain.User, exerciseID, learner string) (domain.FeedbackRelease, error)
	Releases(ctx context.Context, exerciseID string) ([]domain.FeedbackRelease, error)
}

// Appeals handles regrade requests (grade.Appeals; the API uses the same).
type Appeals interface {
	Ask(ctx context.Context, u domain.User, submissionID string, req grade.AppealRequest) (domain.RegradeRequest, error)
	Of(ctx context.Context, u domain.User, submissionID string) ([]domain.RegradeRequest, error)
	Queue(ctx context.Context, state string) ([]domain.RegradeRequest, error)
	Respond(ctx context.Context, by domain.User, id int64, a grade.AppealAnswer) (domain.RegradeRequest, error)
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
	req := grade.AppealRequest{Cell: c.PostForm("cell"), Message: c.PostForm("message")}
	if _, err := h.Appeals.Ask(c.Request.Context(), sessionOf(c).User, id, req); err != nil {
		// The submission page again, the form as the learner filled it in
		// and why it was not accepted (invalid, or one still open).
		h.refused(c, err, func(status int) {
			lang := c.GetString(ctxLang)
			msg := translate(lang, "rq.not_asked")
			if status != http.StatusUnprocessableEntity {
				msg += " " + problemText(lang, domain.ErrorMessage(err))
			}
			h.renderSubmission(c, status, regradeAskForm{Cell: req.Cell, Message: req.Message, Error: msg, Problems: problemTexts(lang, domain.ErrorProblems(err))})
		})
		return
	}
	c.Redirect(http.StatusSeeOther, "/submissions/"+id+"#regrade-requests")
}

type regradeQueueData struct {
	State    string
	Requests []domain.RegradeRequest
	// Failed is the request whose answer came back with Problems; Form
	// holds what the instructor typed, shown again in its form.
	Failed   int64
	Form     regradeAnswerForm
	Message  string
	Problems []string
}

// regradeAnswerForm is an answer form's fields as typed.
type regradeAnswerForm struct {
	Answer, Points, Reason string
}

func (h *handler) regradeQueuePage(c *gin.Context) {
	d := regradeQueueData{State: c.DefaultQuery("state", domain.RegradeRequestOpen)}
	h.renderRegradeQueue(c, http.StatusOK, d)
}

func (h *handler) renderRegradeQueue(c *gin.Context, status int, d regradeQueueData) {
	if d.State == "all" {
		d.State = ""
	}
	var err error
	if d.Requests, err = h.Appeals.Queue(c.Request.Context(), d.State); err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, status, "requests", translate(c.GetString(ctxLang), "rq.title"), "requests", d)
}

func (h *handler) answerRegradeForm(c *gin.Context) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "regrade request %q not found", c.Param("id")))
		return
	}
	form := regradeAnswerForm{Answer: c.PostForm("answer"), Points: c.PostForm("points"), Reason: c.PostForm("reason")}
	a := grade.AppealAnswer{Answer: form.Answer, Reason: form.Reason}
	err = nil
	if p := strings.TrimSpace(form.Points); p != "" {
		v, perr := strconv.ParseFloat(p, 64)
		if perr != nil {
			err = &domain.Error{Code: domain.EINVALID, Message: "the answer is invalid",
				Problems: []string{"points " + strconv.Quote(clipText(p, 40)) + ": not a number"}}
		}
		a.Points = &v
	}
	if err == nil {
		_, err = h.Appeals.Respond(c.Request.Context(), sessionOf(c).User, id, a)
	}
	if err != nil {
		// The queue again, this request's form as it was typed, with
		// every problem (or why it cannot be answered) above it.
		h.refused(c, err, func(status int) {
			lang := c.GetString(ctxLang)
			d := regradeQueueData{State: "all", Failed: id, Form: form, Problems: problemTexts(lang, domain.ErrorProblems(err)),
				Message: translate(lang, "rq.invalid")}
			if status != http.StatusUnprocessableEntity {
				d.Message = problemText(lang, domain.ErrorMessage(err))
			}
			h.renderRegradeQueue(c, status, d)
		})
		return
	}
	c.Redirect(http.StatusSeeOther, "/dashboard/regrade-requests?state=all#rq-"+strconv.FormatInt(id, 10))
}
