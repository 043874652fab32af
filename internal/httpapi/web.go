package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/web"
)

// webRoutes mounts the pages of package web and GET /api/v1/gradebook.csv.
func (s *Server) webRoutes(r *gin.Engine) {
	deps := web.Deps{DB: s.DB, Queue: s.Queue, Catalog: s.Catalog, Submissions: s.Submissions, Regrades: s.regrades(), Log: s.Log,
		MaxUpload: s.MaxUpload, Problem: s.problem, Tokens: s.guard().User}
	// Learners see the same feedback on the pages as through the API: the
	// details of hidden questions are redacted by the API's own rule.
	deps.Redact = func(u domain.User, sub domain.Submission) domain.Submission {
		sub.Cells = s.redact(u, sub).Cells
		return sub
	}
	if s.Metrics != nil {
		deps.OnSubmitted = s.Metrics.Submissions.Inc
	}
	web.Mount(r, deps)
}
