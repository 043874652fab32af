// Package web serves npugrade's pages: sign-in with an API token, the
// learner's exercises, uploads and per-cell feedback, the instructor
// dashboard (charts drawn as SVG on the server), gradebook and CSV export,
// submission views with the executed notebook, and the admin pages for
// users, tokens and runners. Everything is rendered by html/template from
// embedded files: no CDN, no build step, one small script for live status.
//
// Learner output is hostile. It is only ever written as escaped text, as
// data: URIs of decoded PNG images from the stored notebook, or inside an
// iframe with an empty sandbox attribute (no scripts, unique origin), and
// every page carries a Content-Security-Policy that allows no inline
// script. Forms carry a per-session CSRF token.
package web

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/lti"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/regrade"
	"github.com/npugrade/npugrade/internal/sso"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Deps are what the pages need, each a service named for what it does;
// httpapi passes its own. The pages never reach the store: what a user may
// read, and how it is redacted, is decided by Policy, not by a handler.
type Deps struct {
	// Sessions keeps signed-in browsers (the session cookie).
	Sessions domain.SessionService
	// Users manages accounts and API tokens (the admin pages).
	Users domain.UserService
	// Audit records sign-ins and admin actions, and lists them.
	Audit domain.AuditLog
	// Reports answers the dashboard, the statistics and the gradebook.
	Reports domain.ReportService
	// Fleet lists and drains runners.
	Fleet fleet.Service
	// Queue reports the job queue's depth: queued and leased jobs.
	Queue interface {
		PendingDepth(ctx context.Context) (map[string]int64, error)
	}
	Catalog     *exercise.Catalog
	Submissions *intake.Service
	// Regrades stages, applies and discards regrades (package regrade).
	Regrades *regrade.Service
	// References reviews the references recorded by runners (package
	// reference): staged until an instructor accepts them.
	References ReferenceReviews
	Log        *slog.Logger
	// MaxUpload is the largest accepted notebook in bytes.
	MaxUpload int64
	// Problem writes an error as RFC 9457 problem+json (for the CSV
	// endpoint, which is API, not a page).
	Problem func(c *gin.Context, err error)
	// Policy decides, as for the API, whose submissions a user reads, what
	// of their feedback and notebooks they see, and which one counts; the
	// pages read submissions only through it.
	Policy *policy.Service
	// OnSubmitted is called for every accepted upload (metrics); may be nil.
	OnSubmitted func()
	// Tokens resolves an API token presented from a client address for a
	// path, throttling addresses that keep failing (accounts.Guard); nil looks
	// tokens up directly.
	Tokens func(ctx context.Context, addr, path, token string) (domain.User, error)
	// SessionTTL is how long a sign-in lasts (default 12 hours).
	SessionTTL time.Duration
	// Extensions grants and revokes per-learner extensions.
	Extensions Extensions
	// Rosters imports class rosters.
	Rosters Rosters
	// Sections lists sections and filters the dashboard by one.
	Sections Sections
	// Similarity builds the advisory similarity report.
	Similarity Similarity
	// Manual grades manual cells with their rubrics.
	Manual ManualGrading
	// Releases releases feedback and Appeals handles regrade requests.
	Releases FeedbackReleases
	Appeals  Appeals
	// Devices approves device sign-ins and lists and revokes a user's
	// own tokens.
	Devices Devices
	// HubLogin signs in through a JupyterHub (nil: not offered).
	HubLogin *sso.HubLogin
	// OIDCLogin signs in through an OpenID provider (nil: not offered).
	OIDCLogin *sso.OIDCLogin
	// LTI is the LTI 1.3 tool (nil: the /lti routes answer 404).
	LTI *lti.Tool
	// Platforms registers LMS platforms (the admin page; nil: 404).
	Platforms LTIPlatforms
	// FrameAncestors are the origins allowed to frame the pages (the
	// registered LMSs, which launch npugrade in an iframe); none: no
	// page may be framed.
	FrameAncestors []string
}

// userByToken resolves token through Tokens when set.
func (h *handler) userByToken(c *gin.Context, token string) (domain.User, error) {
	if h.Tokens != nil {
		return h.Tokens(c.Request.Context(), c.ClientIP(), c.Request.URL.Path, token)
	}
	return h.Users.UserByToken(c.Request.Context(), token)
}

type handler struct {
	Deps
	pages *pageSets
}

// Pages are the browser pages, built once by the composition root and
// mounted by httpapi beside the API, behind the same middleware.
type Pages struct{ deps Deps }

// New returns the pages served with d.
func New(d Deps) *Pages { return &Pages{deps: d} }

// Mount adds the pages, the static assets and GET /api/v1/gradebook.csv
// to r. problem writes API errors as the API does and tokens resolves
// API tokens through the API's throttling guard (the CSV endpoint and
// the token sign-in use them). It touches none of the dependencies, so
// the route table can be listed without a database.
func (p *Pages) Mount(r gin.IRouter, problem func(*gin.Context, error), tokens func(ctx context.Context, addr, path, token string) (domain.User, error)) {
	d := p.deps
	d.Problem, d.Tokens = problem, tokens
	mount(r, d)
}

func mount(r gin.IRouter, d Deps) {
	if d.SessionTTL <= 0 {
		d.SessionTTL = 12 * time.Hour
	}
	if d.MaxUpload <= 0 {
		d.MaxUpload = 8 << 20
	}
	h := &handler{Deps: d, pages: newPageSets()}

	static, _ := fs.Sub(staticFS, "static")
	r.GET("/static/*file", h.headers(), h.static(static))
	r.GET("/api/v1/gradebook.csv", h.gradebookCSV)
	r.GET("/lti/jwks", h.ltiJWKS)

	p := r.Group("", h.headers(), h.lang())
	p.GET("/", h.session(), h.home)
	p.GET("/login", h.loginPage)
	p.POST("/login", h.login)
	h.outsideRoutes(p)
	h.ltiRoutes(p)
	p.GET("/logout", h.session(), h.logoutPage)
	p.POST("/logout", h.session(), h.csrf(), h.logout)

	// Device sign-in's approval and the user's own tokens.
	p.GET("/device", h.session(), h.devicePage)
	p.POST("/device", h.session(), h.csrf(), h.decideDevice)
	p.GET("/account", h.session(), h.accountPage)
	p.POST("/account/tokens/:id/revoke", h.session(), h.csrf(), h.revokeOwnToken)

	// Learner pages (instructors may use them too: they see their own work).
	p.GET("/exercises", h.session(), h.exercises)
	p.GET("/exercises/:id", h.session(), h.exercisePage)
	p.GET("/exercises/:id/starter", h.session(), h.starter)
	p.POST("/exercises/:id/submissions", h.session(), h.upload)
	p.GET("/submissions/:id", h.session(), h.submissionPage)
	p.GET("/submissions/:id/status", h.session(), h.submissionStatus)
	p.GET("/submissions/:id/notebook", h.session(), h.ownNotebook(false))
	p.GET("/submissions/:id/feedback", h.session(), h.ownNotebook(true))

	staff := []domain.Role{domain.RoleInstructor, domain.RoleAdmin}
	p.GET("/dashboard", h.session(staff...), h.dashboard)
	p.GET("/dashboard/exercises/:id", h.session(staff...), h.exerciseStats)
	p.GET("/dashboard/gradebook", h.session(staff...), h.gradebookPage)
	p.GET("/dashboard/submissions/:id", h.session(staff...), h.staffSubmission)
	p.GET("/dashboard/submissions/:id/notebook", h.session(staff...), h.staffNotebook)
	p.GET("/dashboard/regrades", h.session(staff...), h.regradePage)
	p.POST("/dashboard/regrades", h.session(staff...), h.csrf(), h.stageRegrade)
	p.GET("/dashboard/regrades/:id", h.session(staff...), h.showRegrade)
	p.POST("/dashboard/regrades/:id/apply", h.session(staff...), h.csrf(), h.decideRegrade(true))
	p.POST("/dashboard/regrades/:id/discard", h.session(staff...), h.csrf(), h.decideRegrade(false))
	p.GET("/dashboard/references", h.session(staff...), h.referencesPage)
	p.GET("/dashboard/references/:id", h.session(staff...), h.stagedReferencePage)
	p.POST("/dashboard/references/:id/accept", h.session(staff...), h.csrf(), h.decideReference(true))
	p.POST("/dashboard/references/:id/reject", h.session(staff...), h.csrf(), h.decideReference(false))

	// Per-learner extensions.
	p.GET("/dashboard/exercises/:id/extensions", h.session(staff...), h.extensionsPage)
	p.POST("/dashboard/exercises/:id/extensions", h.session(staff...), h.csrf(), h.grantExtension)
	p.POST("/dashboard/exercises/:id/extensions/:learner/revoke", h.session(staff...), h.csrf(), h.revokeExtension)
	p.GET("/dashboard/exercises/:id/similarity", h.session(staff...), h.similarityPage)

	// Manual grading.
	p.GET("/dashboard/manual/:id/:cell", h.session(staff...), h.manualPage)
	p.POST("/dashboard/manual/:id/:cell", h.session(staff...), h.csrf(), h.saveManual)
	p.POST("/dashboard/exercises/:id/feedback/release", h.session(staff...), h.csrf(), h.releaseFeedbackForm)
	p.GET("/dashboard/regrade-requests", h.session(staff...), h.regradeQueuePage)
	p.POST("/dashboard/regrade-requests/:id/answer", h.session(staff...), h.csrf(), h.answerRegradeForm)
	p.POST("/submissions/:id/regrade-requests", h.session(), h.csrf(), h.askRegradeForm)

	p.GET("/admin/users", h.session(domain.RoleAdmin), h.usersPage)
	p.POST("/admin/users", h.session(domain.RoleAdmin), h.csrf(), h.createUser)
	// The roster form is multipart: importRoster checks its CSRF token itself.
	p.POST("/admin/users/import", h.session(domain.RoleAdmin), h.importRoster)
	p.POST("/admin/users/:id/tokens", h.session(domain.RoleAdmin), h.csrf(), h.createToken)
	p.POST("/admin/tokens/:id/revoke", h.session(domain.RoleAdmin), h.csrf(), h.revokeToken)
	p.GET("/admin/runners", h.session(domain.RoleAdmin), h.runnersPage)
	p.POST("/admin/runners/:id/drain", h.session(domain.RoleAdmin), h.csrf(), h.drainRunner)
	p.GET("/admin/audit", h.session(domain.RoleAdmin), h.auditPage)
}

// csp allows only this origin's script and style, images from this
// origin or data: (PNG outputs of the stored notebook), and no plugins,
// frames of other origins, or form targets elsewhere. srcdoc frames get
// this policy too, on top of their empty sandbox.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func (h *handler) headers() gin.HandlerFunc {
	policy := csp
	if len(h.FrameAncestors) > 0 {
		policy = strings.Replace(csp, "frame-ancestors 'none'", "frame-ancestors 'self' "+strings.Join(h.FrameAncestors, " "), 1)
	}
	return func(c *gin.Context) {
		w := c.Writer.Header()
		w.Set("Content-Security-Policy", policy)
		w.Set("X-Content-Type-Options", "nosniff")
		w.Set("Referrer-Policy", "same-origin")
		if len(h.FrameAncestors) == 0 {
			w.Set("X-Frame-Options", "DENY") // frame-ancestors says it for browsers that read CSP
		}
		w.Set("Cross-Origin-Opener-Policy", "same-origin")
		c.Next()
	}
}

func (h *handler) static(fsys fs.FS) gin.HandlerFunc {
	srv := http.FileServer(http.FS(fsys))
	return func(c *gin.Context) {
		c.Header("Cache-Control", "public, max-age=3600")
		c.Request.URL.Path = c.Param("file")
		srv.ServeHTTP(c.Writer, c.Request)
	}
}

const langCookie = "npugrade_lang"

// lang picks the page language; ?lang= (the switch) also stores it in a cookie.
func (h *handler) lang() gin.HandlerFunc {
	return func(c *gin.Context) {
		cookie, _ := c.Cookie(langCookie)
		if q := c.Query("lang"); q != "" {
			cookie = q
			l := pickLang(q, "")
			http.SetCookie(c.Writer, &http.Cookie{Name: langCookie, Value: l, Path: "/", MaxAge: 365 * 24 * 3600,
				HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: isTLS(c.Request)})
		}
		c.Set(ctxLang, pickLang(cookie, c.GetHeader("Accept-Language")))
		c.Next()
	}
}

const (
	ctxLang    = "web.lang"
	ctxSession = "web.session"
)

// page is what every template gets.
type page struct {
	Lang    string
	Title   string
	Nav     string
	User    *domain.User
	CSRF    string
	LangEN  string
	LangZH  string
	Data    any
	Problem string
	// Cohorts are the cohorts a staff member sees, for the header's
	// picker (shown when there is more than one); Cohort is the one
	// picked (?cohort=, "" for all).
	Cohorts []domain.Cohort
	Cohort  string
	Path    string
	// Zone is the IANA zone the page's times are written in (app.js
	// reloads a page written in another zone than the browser's).
	Zone       string
	Reloadable bool // got by GET: reloading it posts nothing again
}

func (h *handler) render(c *gin.Context, status int, name, title, nav string, data any) {
	lang := c.GetString(ctxLang)
	if lang == "" {
		lang = langEN
	}
	loc := viewerZone(c.Request)
	p := page{Lang: lang, Title: title, Nav: nav, Data: data, LangEN: langURL(c.Request.URL, langEN), LangZH: langURL(c.Request.URL, langZH), Zone: loc.String(), Reloadable: c.Request.Method == http.MethodGet}
	if s, ok := c.Get(ctxSession); ok {
		ws := s.(domain.WebSession)
		p.User, p.CSRF = &ws.User, ws.CSRFToken
		if ws.User.Role.CanSeeAll() && h.Policy != nil {
			// A picker that cannot be read is left out; the page stands.
			p.Cohorts, _ = h.Policy.Cohorts(c.Request.Context(), ws.User)
			p.Cohort, p.Path = c.Query("cohort"), c.Request.URL.Path
		}
	}
	t := h.pages.page(lang, name, loc)
	c.Header("Content-Type", "text/html; charset=utf-8")
	c.Header("Cache-Control", "no-store")
	c.Status(status)
	if err := t.ExecuteTemplate(c.Writer, "layout", p); err != nil {
		h.Log.Error("render page", "page", name, "err", err)
	}
}

// langURL is the current page with ?lang= set, for the switch.
func langURL(u *url.URL, lang string) string {
	q := u.Query()
	q.Set("lang", lang)
	return u.Path + "?" + q.Encode()
}

// fail renders an error page for err (not found, forbidden, invalid, internal).
func (h *handler) fail(c *gin.Context, err error) {
	lang := c.GetString(ctxLang)
	status, ok := policy.Status(err) // a database fault is 503 or 507 with its reason, not 500
	msg := domain.ErrorMessage(err)
	switch {
	case !ok:
		msg = translate(lang, "error.title")
		h.Log.Error("page failed", "path", c.Request.URL.Path, "err", err)
	case status == http.StatusServiceUnavailable:
		msg = translate(lang, "unavailable")
		c.Header("Retry-After", "5")
		h.Log.Warn("page failed: database unavailable", "path", c.Request.URL.Path, "err", err)
	case status == http.StatusInsufficientStorage:
		msg = translate(lang, "storagefull")
		h.Log.Error("page failed: database storage", "path", c.Request.URL.Path, "err", err)
	case status == http.StatusNotFound:
		msg = translate(lang, "notfound")
	case status == http.StatusForbidden:
		msg = translate(lang, "forbidden")
	}
	h.render(c, status, "error", translate(lang, "pt."+strconv.Itoa(status)), "", msg)
	c.Abort()
}

// refused shows err on the page the request came from (render, with the
// status policy.Status gives err, as the API would) when it is the user's
// to mend: invalid, too large, too many, a conflict, not found. A fault of
// the server is fail's.
func (h *handler) refused(c *gin.Context, err error, render func(status int)) {
	if status, ok := policy.Status(err); ok && status < http.StatusInternalServerError {
		render(status)
		return
	}
	h.fail(c, err)
}

func isTLS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

func sessionOf(c *gin.Context) domain.WebSession {
	v, _ := c.Get(ctxSession)
	s, _ := v.(domain.WebSession)
	return s
}
