package web

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/regrade"
)

// The staged-regrade pages drive package regrade (the same service as
// the /api/v1/regrades routes): stage a regrade of an exercise, preview
// the score change per learner, then apply or discard it.

type regradeData struct {
	Exercises []exerciseRow
	Modes     []string
	Message   string
	Problems  []string
	Regrade   *domain.Regrade
	Open      bool // staged or ready: may still be applied or discarded
	Ready     bool
	Past      []domain.RegradeSummary
	// Changed are the items whose score changes, listed first; Unchanged
	// the rest, folded away: at class scale most rows do not move.
	Changed, Unchanged []domain.RegradeItem
	Raised, Lowered    int
}

// splitItems sorts a regrade's items into those whose score moves (a
// failed submission that gets one counts as moved) and the rest.
func (d *regradeData) splitItems() {
	for _, it := range d.Regrade.Items {
		switch {
		case it.Change > 0 || (it.OldStatus == domain.StatusFailed && it.State == domain.RegradeItemDone):
			d.Raised++
			d.Changed = append(d.Changed, it)
		case it.Change < 0:
			d.Lowered++
			d.Changed = append(d.Changed, it)
		case it.State != domain.RegradeItemDone:
			d.Changed = append(d.Changed, it) // pending or failed: not yet known, keep in sight
		default:
			d.Unchanged = append(d.Unchanged, it)
		}
	}
}

func (h *handler) regradePage(c *gin.Context) {
	h.renderRegrade(c, http.StatusOK, regradeData{})
}

func (h *handler) renderRegrade(c *gin.Context, status int, d regradeData) {
	lang := c.GetString(ctxLang)
	for _, ex := range h.Catalog.List() {
		d.Exercises = append(d.Exercises, exerciseRow{ID: ex.ID, Title: exerciseTitle(ex, lang)})
	}
	d.Modes = []string{domain.RegradeRecompare, domain.RegradeReexecute}
	if d.Regrade == nil {
		past, err := h.Reports.Regrades(c.Request.Context(), 50)
		if err != nil {
			h.fail(c, err)
			return
		}
		d.Past = past
	}
	h.render(c, status, "regrade", translate(lang, "rg.title"), "regrades", d)
}

func (h *handler) stageRegrade(c *gin.Context) {
	req := regrade.Request{Exercise: c.PostForm("exercise"), Mode: c.PostForm("mode"), All: c.PostForm("all") == "1"}
	r, err := h.Regrades.Stage(c.Request.Context(), req, sessionOf(c).User)
	if err != nil {
		h.refused(c, err, func(status int) {
			h.renderRegrade(c, status, regradeData{Message: domain.ErrorMessage(err), Problems: domain.ErrorProblems(err)})
		})
		return
	}
	c.Redirect(http.StatusSeeOther, "/dashboard/regrades/"+strconv.FormatInt(r.ID, 10))
}

func (h *handler) regradeID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "regrade %q not found", c.Param("id")))
		return 0, false
	}
	return id, true
}

func (h *handler) showRegrade(c *gin.Context) {
	id, ok := h.regradeID(c)
	if !ok {
		return
	}
	r, err := h.Regrades.Get(c.Request.Context(), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	d := regradeData{Regrade: &r, Ready: r.State == domain.RegradeReady,
		Open: r.State == domain.RegradeStaged || r.State == domain.RegradeReady}
	d.splitItems()
	h.renderRegrade(c, http.StatusOK, d)
}

func (h *handler) decideRegrade(apply bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := h.regradeID(c)
		if !ok {
			return
		}
		var err error
		if apply {
			_, err = h.Regrades.Apply(c.Request.Context(), id)
		} else {
			_, err = h.Regrades.Discard(c.Request.Context(), id)
		}
		if err != nil {
			h.fail(c, err)
			return
		}
		if apply {
			h.audit(c, domain.AuditRegradeApply, "regrade "+strconv.FormatInt(id, 10), "from the dashboard")
		}
		c.Redirect(http.StatusSeeOther, "/dashboard/regrades/"+strconv.FormatInt(id, 10))
	}
}
