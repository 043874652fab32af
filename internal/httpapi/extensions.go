package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
)

// extensionRoutes mounts per-learner extensions for staff.
func (s *Server) extensionRoutes(api *gin.RouterGroup) {
	staff := s.requireRole(domain.RoleInstructor, domain.RoleAdmin)
	api.POST("/exercises/:id/extensions", staff, s.grantExtension)
	api.GET("/exercises/:id/extensions", staff, s.listExtensions)
	api.DELETE("/exercises/:id/extensions/:learner", staff, s.revokeExtension)
}

func (s *Server) extensions() *grade.Extensions { return s.Services.Extensions }

func (s *Server) grantExtension(c *gin.Context) {
	var req grade.ExtensionRequest
	if !s.bindJSON(c, &req, func(err error) error {
		return &domain.Error{Code: domain.EINVALID,
			Message:  `the body must be JSON {"learner": ..., "deadline": "RFC 3339", "late_penalty": [{"after": "24h", "multiplier": 0.5}]}`,
			Problems: []string{err.Error()}}
	}) {
		return
	}
	r, err := s.extensions().Grant(c.Request.Context(), currentUser(c), c.Param("id"), req)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusCreated, r)
}

func (s *Server) listExtensions(c *gin.Context) {
	list, err := s.extensions().List(c.Request.Context(), c.Param("id"), c.Query("revoked") == "true")
	if err != nil {
		s.problem(c, err)
		return
	}
	if list == nil {
		list = []domain.Extension{}
	}
	c.JSON(http.StatusOK, gin.H{"exercise": c.Param("id"), "extensions": list})
}

func (s *Server) revokeExtension(c *gin.Context) {
	r, err := s.extensions().Revoke(c.Request.Context(), currentUser(c), c.Param("id"), c.Param("learner"))
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, r)
}
