package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/web"
)

// webRoutes mounts the pages of package web and GET /api/v1/gradebook.csv.
func (s *Server) webRoutes(r *gin.Engine) {
	// *store.DB is each of the pages' services; the pages see only the
	// interface they need of it.
	deps := web.Deps{Sessions: s.DB, Users: s.DB, Audit: s.DB, Reports: s.DB, Fleet: s.DB,
		Queue: s.Queue, Catalog: s.Catalog, Submissions: s.Submissions, Regrades: s.regrades(), References: s.referenceReviews(), Log: s.Log,
		MaxUpload: s.MaxUpload, Problem: s.problem, Tokens: s.guard().User, Policy: s.policy(),
		Extensions: s.extensions(), Rosters: s.Services.Rosters, Sections: s.DB,
		Similarity: s.similarity(), Manual: s.manual(),
		Releases: s.feedback(), Appeals: s.appeals()}
	if s.Metrics != nil {
		deps.OnSubmitted = s.Metrics.Submissions.Inc
	}
	web.Mount(r, deps)
}
