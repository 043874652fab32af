// Package compose is the server's composition root: from the store, the
// job queue and the catalog it builds every service once, and the HTTP
// server that serves the API (package httpapi) and the pages (package
// web) side by side on one router. serve uses it, and so do the HTTP
// tests, so they test the server serve runs. It is the one place besides
// the store that holds a *store.DB: each service gets the interface of
// it that it declares.
package compose

import (
	"log/slog"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/lti"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/reference"
	"github.com/npugrade/npugrade/internal/regrade"
	"github.com/npugrade/npugrade/internal/similarity"
	"github.com/npugrade/npugrade/internal/sso"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/web"
)

// Config is what the server is built from. DB, Queue, Catalog and Log
// are needed; the rest have defaults.
type Config struct {
	DB      *store.DB
	Queue   *jobs.Queue
	Catalog *exercise.Catalog
	Log     *slog.Logger
	// Dispatch takes the results runners report (nil: the runner routes
	// that report results are not served).
	Dispatch *jobs.Dispatcher
	// Metrics counts submissions and grades (nil: none).
	Metrics *httpapi.Metrics
	// MaxUpload is the largest accepted notebook in bytes (0: 8 MiB).
	MaxUpload int64
	// UploadLimit is how many uploads a learner may make per window.
	UploadLimit store.UploadWindow
	// MaxActive caps a learner's uploads waiting for or in grading
	// (intake.Service.MaxActive).
	MaxActive int
	// Manual grades manual cells; serve builds it first to re-apply
	// changed rubrics at start (nil: built here).
	Manual *grade.Manual
	// Auth resolves tokens and throttles addresses that keep presenting
	// bad ones (nil: one with the defaults).
	Auth *accounts.Guard
	// Hub is the JupyterHub whose users may sign in (nil: none).
	Hub *sso.Hub
	// OIDC is the OpenID provider whose users may sign in (nil: none).
	OIDC *sso.OIDC
	// LTI is the LTI 1.3 tool (nil: the /lti routes answer 404); LTI
	// builds it.
	LTI *lti.Tool
	// FrameAncestors are the origins that may frame the pages (the
	// registered LMSs).
	FrameAncestors []string
}

// LTIParts are the LTI tool and its grade passback: Grades is the
// outbox's notifier, Sender posts the scores it records.
type LTIParts struct {
	Tool   *lti.Tool
	Grades *lti.Grades
	Sender *lti.Sender
	Roster *lti.Roster
}

// LTI builds the LTI tool at publicURL over db and cat.
func LTI(db *store.DB, cat *exercise.Catalog, publicURL string, log *slog.Logger) LTIParts {
	keys := &lti.Keys{DB: db}
	pol := &policy.Service{DB: db, Now: db.Now, Catalog: cat, Extensions: db, Releases: db}
	sender := &lti.Sender{DB: db, Keys: keys, Catalog: cat, Log: log}
	return LTIParts{
		Tool:   &lti.Tool{DB: db, Keys: keys, Catalog: cat, PublicURL: publicURL},
		Grades: &lti.Grades{DB: db, Counter: pol, Catalog: cat, Log: log},
		Sender: sender,
		Roster: &lti.Roster{DB: db, Sender: sender},
	}
}

// Server builds every service once and the server that calls them.
func Server(c Config) *httpapi.Server {
	if c.MaxUpload <= 0 {
		c.MaxUpload = 8 << 20
	}
	db := c.DB
	if c.Manual == nil {
		c.Manual = &grade.Manual{DB: db}
	}
	if c.Auth == nil {
		c.Auth = &accounts.Guard{DB: db, Log: c.Log}
	}
	v := services(db, c.Queue, c.Catalog, c.Manual)
	if c.Hub != nil {
		v.JupyterHub = &sso.Exchange{Hub: c.Hub, DB: db, Throttle: c.Auth, Log: c.Log}
	}
	subs := &intake.Service{DB: db, Queue: c.Queue, Catalog: c.Catalog, Limits: notebook.Limits{MaxBytes: c.MaxUpload},
		UploadLimit: c.UploadLimit, MaxActive: c.MaxActive, References: &grade.Submissions{DB: db}}
	s := &httpapi.Server{DB: db, Queue: c.Queue, Catalog: c.Catalog, Submissions: subs, Dispatch: c.Dispatch,
		Log: c.Log, Metrics: c.Metrics, MaxUpload: c.MaxUpload, Auth: c.Auth, Services: v}
	s.Pages = web.New(pages(c, v, subs))
	return s
}

// services builds the use cases the API and the pages call.
func services(db *store.DB, q *jobs.Queue, cat *exercise.Catalog, manual *grade.Manual) httpapi.Services {
	pol := &policy.Service{DB: db, Now: db.Now, Catalog: cat, Extensions: db, Releases: db, Deadlines: db, Scopes: db, Placement: db}
	return httpapi.Services{
		Policy:     pol,
		Releases:   &policy.FeedbackReleases{DB: db, Catalog: cat},
		Extensions: &grade.Extensions{DB: db, Catalog: cat},
		Appeals:    &grade.Appeals{DB: db, Catalog: cat, Policy: pol},
		Manual:     manual,
		Regrades:   &regrade.Service{DB: db, Queue: q, Catalog: cat},
		References: &reference.Reviews{DB: db, Catalog: cat},
		Similarity: &similarity.Service{DB: db, Catalog: cat},
		Rosters:    &accounts.Rosters{DB: db},
		Cohorts:    &accounts.Cohorts{DB: db},
		Devices:    &accounts.Devices{DB: db},
	}
}

// pages are the browser pages' dependencies: the same services as the
// API's, and the store's read models.
func pages(c Config, v httpapi.Services, subs *intake.Service) web.Deps {
	db := c.DB
	d := web.Deps{Sessions: db, Users: db, Audit: db, Reports: db, Fleet: db, Sections: db,
		Queue: c.Queue, Catalog: c.Catalog, Submissions: subs, Log: c.Log, MaxUpload: c.MaxUpload,
		Policy: v.Policy, Regrades: v.Regrades, References: v.References, Extensions: v.Extensions,
		Rosters: v.Rosters, Similarity: v.Similarity, Manual: v.Manual, Releases: v.Releases, Appeals: v.Appeals, Devices: v.Devices}
	if c.Hub != nil {
		d.HubLogin = &sso.HubLogin{Hub: c.Hub, States: db, Users: db}
	}
	if c.OIDC != nil {
		d.OIDCLogin = &sso.OIDCLogin{OIDC: c.OIDC, States: db, Users: db}
	}
	d.LTI, d.FrameAncestors, d.Platforms = c.LTI, c.FrameAncestors, &lti.Platforms{DB: db}
	if c.Metrics != nil {
		d.OnSubmitted = c.Metrics.Submissions.Inc
	}
	return d
}
