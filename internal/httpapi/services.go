package httpapi

import (
	"time"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/reference"
	"github.com/npugrade/npugrade/internal/regrade"
	"github.com/npugrade/npugrade/internal/similarity"
)

// Services are the use cases the handlers (and the pages) call. The
// server's composition root (cmd/npugrade) builds them once; Handler
// builds the ones left unset from DB, Queue and Catalog, once, so that
// no request builds a service.
type Services struct {
	Policy     *policy.Service
	Releases   *policy.FeedbackReleases
	Extensions *grade.Extensions
	Appeals    *grade.Appeals
	Manual     *grade.Manual
	Regrades   *regrade.Service
	References *reference.Reviews
	Similarity *similarity.Service
	Rosters    *accounts.Rosters
}

// fillServices builds the services not given.
func (s *Server) fillServices() {
	v := &s.Services
	if v.Policy == nil {
		// Deadlines are judged by the database's clock, read at each use.
		v.Policy = &policy.Service{DB: s.DB, Now: func() time.Time { return s.DB.Now() }, Catalog: s.Catalog, Extensions: s.DB, Releases: s.DB}
	}
	if v.Releases == nil {
		v.Releases = &policy.FeedbackReleases{DB: s.DB, Catalog: s.Catalog}
	}
	if v.Extensions == nil {
		v.Extensions = &grade.Extensions{DB: s.DB, Catalog: s.Catalog}
	}
	if v.Appeals == nil {
		v.Appeals = &grade.Appeals{DB: s.DB, Catalog: s.Catalog, Policy: v.Policy}
	}
	if v.Manual == nil {
		v.Manual = &grade.Manual{DB: s.DB}
	}
	if v.Regrades == nil {
		v.Regrades = &regrade.Service{DB: s.DB, Queue: s.Queue, Catalog: s.Catalog}
	}
	if v.References == nil {
		v.References = &reference.Reviews{DB: s.DB, Catalog: s.Catalog}
	}
	if v.Similarity == nil {
		v.Similarity = &similarity.Service{DB: s.DB, Catalog: s.Catalog}
	}
	if v.Rosters == nil {
		v.Rosters = &accounts.Rosters{DB: s.DB}
	}
}
