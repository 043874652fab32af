package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/reference"
)

// referenceReviewRoutes mounts the review of references recorded by
// runners (package reference): staged until an instructor accepts them.
func (s *Server) referenceReviewRoutes(api *gin.RouterGroup) {
	staff := s.requireRole(domain.RoleInstructor, domain.RoleAdmin)
	api.GET("/staged-references", staff, s.listStagedReferences)
	api.GET("/staged-references/:id", staff, s.getStagedReference)
	api.POST("/staged-references/:id/accept", staff, s.decideStagedReference(true))
	api.POST("/staged-references/:id/reject", staff, s.decideStagedReference(false))
}

func (s *Server) referenceReviews() *reference.Reviews { return s.Services.References }

func (s *Server) listStagedReferences(c *gin.Context) {
	out, err := s.referenceReviews().List(c.Request.Context(), reference.ReviewFilter{Exercise: c.Query("exercise"), State: c.Query("state")})
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, out)
}

func (s *Server) stagedReferenceID(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "staged reference %q not found", c.Param("id")))
		return 0, false
	}
	return id, true
}

func (s *Server) getStagedReference(c *gin.Context) {
	id, ok := s.stagedReferenceID(c)
	if !ok {
		return
	}
	r, err := s.referenceReviews().Get(c.Request.Context(), id)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}

// DecisionRequest is the optional body of an accept or reject: why.
type DecisionRequest struct {
	Note string `json:"note"`
}

func (s *Server) decideStagedReference(accept bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := s.stagedReferenceID(c)
		if !ok {
			return
		}
		var req DecisionRequest
		if c.Request.ContentLength != 0 {
			if !s.bindJSON(c, &req, func(err error) error {
				return domain.Errorf(domain.EINVALID, "the body must be empty or JSON {\"note\": \"...\"}: %v", err)
			}) {
				return
			}
		}
		svc := s.referenceReviews()
		decide := svc.Reject
		if accept {
			decide = svc.Accept
		}
		r, err := decide(c.Request.Context(), id, currentUser(c), req.Note)
		if err != nil {
			s.problem(c, err)
			return
		}
		s.Log.Info("staged reference decided", "staged_reference", id, "state", r.State, "exercise", r.Exercise,
			"profile", r.Profile, "by", currentUser(c).Name)
		c.JSON(http.StatusOK, r)
	}
}
