package web

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/similarity"
)

// Similarity builds the advisory similarity report of an exercise
// (package similarity; the API route uses the same).
type Similarity interface {
	Report(ctx context.Context, actor domain.User, exerciseID string, o similarity.Options) (similarity.Report, error)
}

type similarityData struct {
	ID, Title string
	similarity.Report
}

// similarityPage lists the pairs with their matching fragments side by
// side; learner code is only ever written as escaped text.
func (h *handler) similarityPage(c *gin.Context) {
	lang := c.GetString(ctxLang)
	ex, err := h.Catalog.Get(c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	rep, err := h.Similarity.Report(c.Request.Context(), sessionOf(c).User, ex.ID, similarity.Options{})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "similarity", translate(lang, "sim.title")+" · "+ex.ID, "dashboard",
		similarityData{ID: ex.ID, Title: exerciseTitle(ex, lang), Report: rep})
}
