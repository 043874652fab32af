package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
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
		nb, err := h.Policy.LearnerNotebook(c.Request.Context(), sub)
		if err != nil {
			h.fail(c, err)
			return
		}
		name := sub.ExerciseID + "-" + sub.ID + ".executed.ipynb"
		if feedback {
			sub = h.Policy.Redact(c.Request.Context(), sessionOf(c).User, sub)
			var labels map[string]string
			if ex, err := h.Catalog.Get(sub.ExerciseID); err == nil {
				labels = questionLabels(ex, c.GetString(ctxLang), sub.Cells, false)
			}
			nb = notebook.WithFeedback(nb, feedbackTexts(c.GetString(ctxLang), sub, labels))
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

// feedbackTexts writes one Markdown paragraph per graded cell, named by
// its label ("第 2 题") where the notebook numbers its question.
func feedbackTexts(lang string, sub domain.Submission, labels map[string]string) map[string]string {
	out := map[string]string{}
	for _, cr := range sub.Cells {
		var b strings.Builder
		name := labels[cr.CellID]
		if name == "" {
			name = translate(lang, "feedback.cell") + " · " + cr.CellID
		}
		fmt.Fprintf(&b, "**%s · %s %s / %s**", mdEscape(name), translate(lang, "v."+cr.Verdict),
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
