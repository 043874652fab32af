package web

import (
	"context"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/reference"
)

// ReferenceReviews is what the staged-reference pages need (package
// reference.Reviews, the same one as /api/v1/staged-references).
type ReferenceReviews interface {
	List(ctx context.Context, f reference.ReviewFilter) ([]reference.Review, error)
	Get(ctx context.Context, id int64) (reference.Review, error)
	Accept(ctx context.Context, id int64, actor domain.User, note string) (reference.Review, error)
	Reject(ctx context.Context, id int64, actor domain.User, note string) (reference.Review, error)
}

type referencesData struct {
	Staged  []reference.Review
	Decided []reference.Review
	Review  *reference.Review
	Message string
}

func (h *handler) referencesPage(c *gin.Context) {
	ctx := c.Request.Context()
	staged, err := h.References.List(ctx, reference.ReviewFilter{State: "staged"})
	if err != nil {
		h.fail(c, err)
		return
	}
	all, err := h.References.List(ctx, reference.ReviewFilter{})
	if err != nil {
		h.fail(c, err)
		return
	}
	d := referencesData{Staged: staged}
	for _, r := range all {
		if r.State != "staged" && len(d.Decided) < 50 {
			d.Decided = append(d.Decided, r)
		}
	}
	h.render(c, http.StatusOK, "references", translate(c.GetString(ctxLang), "ref.title"), "references", d)
}

func (h *handler) stagedReferenceID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(c, domain.Errorf(domain.ENOTFOUND, "staged reference %q not found", c.Param("id")))
		return 0, false
	}
	return id, true
}

func (h *handler) stagedReferencePage(c *gin.Context) {
	id, ok := h.stagedReferenceID(c)
	if !ok {
		return
	}
	r, err := h.References.Get(c.Request.Context(), id)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.render(c, http.StatusOK, "references", translate(c.GetString(ctxLang), "ref.title"), "references", referencesData{Review: &r})
}

// decideReference accepts or rejects; the service writes the audit entry
// in the same transaction.
func (h *handler) decideReference(accept bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := h.stagedReferenceID(c)
		if !ok {
			return
		}
		decide := h.References.Reject
		if accept {
			decide = h.References.Accept
		}
		if _, err := decide(c.Request.Context(), id, sessionOf(c).User, c.PostForm("note")); err != nil {
			h.fail(c, err)
			return
		}
		c.Redirect(http.StatusSeeOther, "/dashboard/references/"+strconv.FormatInt(id, 10))
	}
}
