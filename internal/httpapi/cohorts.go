package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
)

// cohortRoutes mounts the cohorts: what the caller sees, and an admin's
// management (create one, set a member).
func (s *Server) cohortRoutes(api *gin.RouterGroup) {
	admin := s.requireRole(domain.RoleAdmin)
	api.GET("/cohorts", s.listCohorts)
	api.POST("/cohorts", admin, s.createCohort)
	api.PUT("/cohorts/:slug/members/:user", admin, s.setCohortMember)
}

// CohortJSON is one cohort of GET /api/v1/cohorts.
type CohortJSON struct {
	Slug  string `json:"slug"`
	Title string `json:"title"`
}

// listCohorts is GET /api/v1/cohorts: every cohort for an admin, the
// cohorts an instructor teaches, the cohorts a learner is in.
func (s *Server) listCohorts(c *gin.Context) {
	list, err := s.policy().Cohorts(c.Request.Context(), currentUser(c))
	if err != nil {
		s.problem(c, err)
		return
	}
	out := make([]CohortJSON, len(list))
	for i, co := range list {
		out[i] = CohortJSON{Slug: co.Slug, Title: co.Title}
	}
	c.JSON(http.StatusOK, gin.H{"cohorts": out})
}

func (s *Server) createCohort(c *gin.Context) {
	var req CohortJSON
	if !s.bindJSON(c, &req, func(err error) error {
		return &domain.Error{Code: domain.EINVALID, Message: `the body must be JSON {"slug": ..., "title": ...}`, Problems: []string{err.Error()}}
	}) {
		return
	}
	co, err := s.Services.Cohorts.Create(c.Request.Context(), currentUser(c), req.Slug, req.Title)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.Header("Location", "/api/v1/cohorts/"+co.Slug)
	c.JSON(http.StatusCreated, CohortJSON{Slug: co.Slug, Title: co.Title})
}

// CohortMemberJSON is a member as PUT /api/v1/cohorts/{slug}/members/{user}
// sets it.
type CohortMemberJSON struct {
	User string      `json:"user,omitempty"`
	Role domain.Role `json:"role"`
}

func (s *Server) setCohortMember(c *gin.Context) {
	var req CohortMemberJSON
	if c.Request.ContentLength != 0 && !s.bindJSON(c, &req, func(err error) error {
		return &domain.Error{Code: domain.EINVALID, Message: `the body must be JSON {"role": "learner" or "instructor"}`, Problems: []string{err.Error()}}
	}) {
		return
	}
	m, err := s.Services.Cohorts.SetMember(c.Request.Context(), currentUser(c), c.Param("slug"), c.Param("user"), req.Role)
	if err != nil {
		s.problem(c, err)
		return
	}
	c.JSON(http.StatusOK, CohortMemberJSON{User: m.Name, Role: m.Role})
}
