package web

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/store"
)

// ownNotebook serves the signed-in learner their own executed notebook
// (feedback false) or their feedback notebook (true): the executed
// notebook with each graded cell's verdict, points and message in a
// Markdown cell after it, in the page language. Both are the learner's
// copy: no probe cells, no probe seed, no outputs of questions whose
// details are hidden, and the messages as redacted for the API. Anyone
// else's submission is not found.
func (h *handler) ownNotebook(feedback bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		sub, ok := h.ownSubmission(c)
		if !ok {
			return
		}
		nb, err := h.learnerNotebook(c, sub)
		if err != nil {
			h.fail(c, err)
			return
		}
		name := sub.ExerciseID + "-" + sub.ID + ".executed.ipynb"
		if feedback {
			sub = h.Policy.Redact(sessionOf(c).User, sub)
			nb = notebook.WithFeedback(nb, feedbackTexts(c.GetString(ctxLang), sub))
			name = sub.ExerciseID + "-" + sub.ID + ".feedback.ipynb"
		}
		raw, err := notebook.Encode(nb)
		if err != nil {
			h.fail(c, err)
			return
		}
		c.Header("Content-Disposition", `attachment; filename="`+name+`"`)
		c.Header("Cache-Control", "no-store")
		c.Data(http.StatusOK, "application/x-ipynb+json", raw)
	}
}

// learnerNotebook is the learner's copy of a submission's executed notebook.
func (h *handler) learnerNotebook(c *gin.Context, sub domain.Submission) (*notebook.Notebook, error) {
	raw, err := h.DB.ExecutedNotebook(c.Request.Context(), sub.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, domain.Errorf(domain.ENOTFOUND, "submission %s has not been executed yet", sub.ID)
	}
	if err != nil {
		return nil, err
	}
	nb, err := notebook.ParseExecuted(raw)
	if err != nil {
		return nil, fmt.Errorf("read the executed notebook of %s: %w", sub.ID, err)
	}
	return h.Policy.LearnerCopy(sub, nb), nil
}

// feedbackTexts writes one Markdown paragraph per graded cell.
func feedbackTexts(lang string, sub domain.Submission) map[string]string {
	out := map[string]string{}
	for _, cr := range sub.Cells {
		var b strings.Builder
		fmt.Fprintf(&b, "**%s · %s · %s %s / %s**", translate(lang, "feedback.cell"), cr.CellID, translate(lang, "v."+cr.Verdict),
			trimFloat(cr.Points), trimFloat(cr.MaxPoints))
		if !cr.Counted {
			fmt.Fprintf(&b, " (%s)", translate(lang, "not_counted"))
		}
		if cr.Message != "" {
			b.WriteString("\n\n" + mdEscape(translateFeedback(lang, cr.Message)))
		}
		out[cr.CellID] = b.String()
	}
	return out
}

// mdEscape keeps a message plain text in Markdown (no links, no HTML).
func mdEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `<`, `&lt;`, `>`, `&gt;`, `[`, `\[`, `]`, `\]`, "`", "\\`", `*`, `\*`, `_`, `\_`)
	return r.Replace(s)
}
