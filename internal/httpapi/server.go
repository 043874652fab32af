// Package httpapi is npugrade's HTTP interface (gin): the learner and
// instructor API under /api/v1, health and metrics, and RFC 9457 problem
// responses. Handlers translate HTTP to calls on the services and back;
// they pass the request's context.Context down, never *gin.Context.
package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/sso"
	"github.com/npugrade/npugrade/internal/store"
)

// Server holds the handlers' dependencies.
type Server struct {
	DB          Store
	Queue       *jobs.Queue
	Catalog     *exercise.Catalog
	Submissions *intake.Service
	Dispatch    *jobs.Dispatcher
	Log         *slog.Logger
	Metrics     *Metrics
	// MaxUpload is the largest accepted notebook in bytes.
	MaxUpload int64
	// Stopping is closed when the server shuts down; long polls end then.
	Stopping <-chan struct{}

	// Auth resolves bearer tokens and throttles addresses that keep
	// presenting bad ones.
	Auth *accounts.Guard
	// TrustedProxies are the reverse proxies (serve --trusted-proxies)
	// whose X-Forwarded-For names the client; without them the client is
	// the connection's address.
	TrustedProxies []netip.Prefix
	// MetricsToken, when set, is the bearer token GET /metrics needs on
	// this handler; without it /metrics is served only by MetricsHandler
	// (serve --metrics-addr), never publicly.
	MetricsToken string
	// PublicURL is the server's URL as users reach it (serve
	// --public-url), for device sign-in's verification_uri; empty: the
	// request's.
	PublicURL string
	// Services are the use cases the handlers call (services.go).
	Services Services
	// Pages are the browser pages mounted beside the API (nil: none).
	Pages Pages

	errLogOnce sync.Once
	errLog     *repeatLog
	// storageFault is when (unix ns) a write last failed for lack of
	// storage; /readyz answers 503 for a while after.
	storageFault atomic.Int64
	runnersOnce  sync.Once
	runners      *runnerState
	polls        pollLimiter
}

// Store is what the handlers read and write themselves, besides the
// services: health, the runner registry, the event and score history
// reads and the audit log.
type Store interface {
	Engine() string
	Now() time.Time
	Ping(ctx context.Context) error
	Audit(ctx context.Context, actor domain.User, action, subject, detail string) error
	Events(ctx context.Context, f domain.EventFilter) ([]domain.Event, error)
	References(ctx context.Context, exerciseID string) ([]store.StoredReference, error)
	ScoreHistory(ctx context.Context, submissionID string) ([]store.ScoreHistoryEntry, error)
	UserByName(ctx context.Context, name string) (domain.User, error)
	RunnerStore
}

// RunnerStore is the runner registry the runner routes and the fleet
// gauges use.
type RunnerStore interface {
	Now() time.Time
	UpsertRunner(ctx context.Context, reg store.RunnerRegistration) error
	SetRunnerWarmSpares(ctx context.Context, id string, ws fleet.WarmSpares) (bool, error)
	SetRunnerDraining(ctx context.Context, id string) (bool, error)
	RunnerReport(ctx context.Context, id string) (envprobe.Report, bool)
	Runners(ctx context.Context, since time.Time) ([]fleet.Runner, error)
	RunnerOwner(ctx context.Context, id string) (userID int64, ok bool, err error)
	RunnerScopeOf(ctx context.Context, userID int64) (s fleet.RunnerScope, ok bool, err error)
	TouchOwnRunner(ctx context.Context, id string, userID int64) (found, draining bool, err error)
}

// Handler builds the router.
func (s *Server) Handler() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// The client address is the connection's, unless that is a trusted
	// proxy: then it is the right-most X-Forwarded-For address that is not
	// one (what the proxy nearest the server saw). A client cannot pick the
	// address it is throttled by, and a class behind a proxy is not one
	// address.
	r.RemoteIPHeaders = []string{"X-Forwarded-For"}
	if err := r.SetTrustedProxies(prefixStrings(s.TrustedProxies)); err != nil {
		s.Log.Error("trusted proxies refused; X-Forwarded-For is ignored", "err", err)
		_ = r.SetTrustedProxies(nil)
	}
	r.Use(s.recoverer(), s.logger(), s.edgeCheck(), s.capBodies())
	r.HandleMethodNotAllowed = true
	r.NoRoute(func(c *gin.Context) {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "no route %s %s", c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		writeProblem(c, http.StatusMethodNotAllowed, "Method Not Allowed", "method "+c.Request.Method+" is not allowed here", nil)
	})

	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok", "version": buildinfo.Version()}) })
	r.GET("/readyz", s.ready)
	if s.Metrics != nil && s.MetricsToken != "" {
		r.GET("/metrics", s.metricsAuth, gin.WrapH(s.MetricsHandler()))
	}

	s.clientRoutes(r)
	r.POST(sso.ExchangePath, s.jupyterhubToken)
	api := r.Group("/api/v1", s.authenticate(false))
	api.GET("/exercises", s.listExercises)
	api.GET("/exercises/:id/notebook", s.starterNotebook)
	api.POST("/submissions", s.createSubmission)
	api.GET("/submissions", s.listSubmissions)
	api.GET("/submissions/:id", s.getSubmission)
	api.GET("/submissions/:id/executed", s.executedNotebook)
	api.GET("/queue", s.requireRole(domain.RoleInstructor, domain.RoleAdmin), s.queueDepth)
	s.checkRoutes(api)
	s.regradeRoutes(api)
	s.eventRoutes(api)
	s.extensionRoutes(api)
	s.rosterRoutes(api)
	s.cohortRoutes(api)
	s.similarityRoutes(api)
	s.manualRoutes(api)
	s.referenceReviewRoutes(api)
	s.feedbackRoutes(api)
	s.deviceRoutes(r, api)

	s.fleetRoutes(api)
	s.runnerRoutes(r)
	s.pageRoutes(r)
	return r
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if err := s.DB.Ping(ctx); err != nil {
		c.Header("Retry-After", "5")
		writeProblem(c, http.StatusServiceUnavailable, "Service Unavailable", "the database does not answer", nil)
		return
	}
	// A database that answers but cannot store is not ready either: every
	// submission would fail.
	if t := s.storageFault.Load(); t != 0 && time.Since(time.Unix(0, t)) < storageFaultReady {
		c.Header("Retry-After", "30")
		writeProblem(c, http.StatusServiceUnavailable, "Service Unavailable", "the database could not store data recently (disk full or read-only)", nil)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "database": s.DB.Engine()})
}

// storageFaultReady is how long /readyz reports a failed write.
const storageFaultReady = time.Minute

// MetricsHandler serves the Prometheus metrics; serve mounts it on its own
// listener (--metrics-addr), which operators keep off the public network.
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.Metrics.Registry, promhttp.HandlerOpts{})
}

// metricsAuth admits GET /metrics on the public listener only with
// MetricsToken (compared in constant time).
func (s *Server) metricsAuth(c *gin.Context) {
	token, _ := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if subtle.ConstantTimeCompare([]byte(token), []byte(s.MetricsToken)) != 1 {
		c.Header("WWW-Authenticate", `Bearer realm="npugrade-metrics"`)
		s.problem(c, domain.Errorf(domain.EUNAUTHORIZED, "/metrics needs the metrics token"))
		c.Abort()
	}
}

const userKey = "npugrade.user"

// authenticate resolves the bearer token. Runner tokens are accepted only
// where runnerRoutes is true, and only runner tokens there.
func (s *Server) authenticate(runnerRoutes bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		token, ok := s.bearer(c)
		if !ok {
			return
		}
		u, err := s.Auth.User(c.Request.Context(), c.ClientIP(), c.Request.URL.Path, token)
		if err == nil {
			err = roleAllowed(u, runnerRoutes)
		}
		if err != nil {
			s.authProblem(c, err)
			return
		}
		c.Set(userKey, u)
		if !s.scope(c, u) {
			return
		}
		c.Next()
	}
}

// scope puts a staff member's scope (the cohorts they read, narrowed by
// the "cohort" query parameter) into the request's context, once, for
// every read below the handler (policy.Service.Scoped); false when it
// answered a problem instead.
func (s *Server) scope(c *gin.Context, u domain.User) bool {
	if s.Services.Policy == nil || !u.Role.CanSeeAll() {
		return true
	}
	ctx, err := s.policy().Scoped(c.Request.Context(), u, c.Query("cohort"))
	if err != nil {
		s.problem(c, err)
		c.Abort()
		return false
	}
	c.Request = c.Request.WithContext(ctx)
	return true
}

// bearer is the request's bearer token; without one it answers 401.
func (s *Server) bearer(c *gin.Context) (string, bool) {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok || token == "" {
		c.Header("WWW-Authenticate", `Bearer realm="npugrade"`)
		s.problem(c, domain.Errorf(domain.EUNAUTHORIZED, "an Authorization: Bearer <token> header is required"))
		c.Abort()
		return "", false
	}
	return strings.TrimSpace(token), true
}

// roleAllowed: runner tokens are accepted only on runner routes, and
// only runner tokens there.
func roleAllowed(u domain.User, runnerRoutes bool) error {
	switch {
	case runnerRoutes == (u.Role == domain.RoleRunner):
		return nil
	case runnerRoutes:
		return domain.Errorf(domain.EFORBIDDEN, "runner routes need a runner token")
	}
	return domain.Errorf(domain.EFORBIDDEN, "runner tokens are accepted only on runner routes")
}

// authProblem answers a refused authentication (a throttled address
// with Retry-After, a bad token with WWW-Authenticate).
func (s *Server) authProblem(c *gin.Context, err error) {
	var th *accounts.Throttled
	if errors.As(err, &th) {
		c.Header("Retry-After", strconv.Itoa(int(math.Ceil(th.RetryAfter.Seconds()))))
	} else if domain.ErrorCode(err) == domain.EUNAUTHORIZED {
		c.Header("WWW-Authenticate", `Bearer realm="npugrade", error="invalid_token"`)
	}
	s.problem(c, err)
	c.Abort()
}

func (s *Server) requireRole(roles ...domain.Role) gin.HandlerFunc {
	return func(c *gin.Context) {
		u := currentUser(c)
		for _, r := range roles {
			if u.Role == r {
				c.Next()
				return
			}
		}
		s.problem(c, domain.Errorf(domain.EFORBIDDEN, "this needs the %s role", roles[0]))
		c.Abort()
	}
}

func currentUser(c *gin.Context) domain.User {
	v, _ := c.Get(userKey)
	u, _ := v.(domain.User)
	return u
}

// logger writes the access log (one line per request: method, route,
// status, duration in seconds, user id) and the request metrics. Routes
// are gin's patterns, so ids do not multiply the label values; unknown
// paths share the route "unmatched".
func (s *Server) logger() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		took := time.Since(start).Seconds()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		code := strconv.Itoa(c.Writer.Status())
		s.Log.LogAttrs(c.Request.Context(), slog.LevelInfo, "access",
			slog.String("method", c.Request.Method), slog.String("route", route), slog.Int("status", c.Writer.Status()),
			slog.Float64("duration_s", took), slog.Int64("user_id", currentUser(c).ID))
		if s.Metrics != nil {
			s.Metrics.Requests.WithLabelValues(route, c.Request.Method, code).Inc()
			s.Metrics.Duration.WithLabelValues(route, c.Request.Method, code).Observe(took)
		}
	}
}

// recoverer turns a panic into a 500 problem and a log line instead of a
// dropped connection.
func (s *Server) recoverer() gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				s.Log.Error("panic in handler", "path", c.Request.URL.Path, "panic", v)
				writeProblem(c, http.StatusInternalServerError, "Internal Server Error", "internal error", nil)
				c.Abort()
			}
		}()
		c.Next()
	}
}

// Metrics are the server's Prometheus collectors, on their own registry.
type Metrics struct {
	Registry    *prometheus.Registry
	Requests    *prometheus.CounterVec
	Duration    *prometheus.HistogramVec
	Submissions prometheus.Counter
	Graded      *prometheus.CounterVec
	Latency     prometheus.Histogram
	QueueWait   *prometheus.HistogramVec
	Execution   *prometheus.HistogramVec
}

// gradingBuckets span a second to ten minutes (notebook runs).
var gradingBuckets = []float64{0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 300, 600}

// NewMetrics registers the collectors; queue depth is read at scrape time.
func NewMetrics(q *jobs.Queue) *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "npugrade_http_requests_total",
			Help: "HTTP requests by route pattern, method and status code."}, []string{"route", "method", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "http_request_duration_seconds",
			Help: "HTTP request duration by route pattern, method and status code.", Buckets: prometheus.DefBuckets},
			[]string{"route", "method", "code"}),
		QueueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "npugrade_queue_wait_seconds",
			Help: "Submit to execution start, by runner profile.", Buckets: gradingBuckets}, []string{"profile"}),
		Execution: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "npugrade_execution_seconds",
			Help: "Execution start to graded, by runner profile.", Buckets: gradingBuckets}, []string{"profile"}),
		Submissions: prometheus.NewCounter(prometheus.CounterOpts{Name: "npugrade_submissions_total", Help: "Accepted submissions."}),
		Graded:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "npugrade_graded_total", Help: "Graded submissions by exercise."}, []string{"exercise"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "npugrade_grading_latency_seconds", Help: "Submit to graded.",
			Buckets: gradingBuckets}),
	}
	m.Registry.MustRegister(m.Requests, m.Duration, m.Submissions, m.Graded, m.Latency, m.QueueWait, m.Execution,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		&depthCollector{q: q, desc: prometheus.NewDesc("npugrade_jobs", "Queued and leased jobs.", []string{"state"}, nil)})
	return m
}

// Observe records a graded submission.
func (m *Metrics) Observe(sub domain.Submission, latency time.Duration) {
	m.Graded.WithLabelValues(sub.ExerciseID).Inc()
	m.Latency.Observe(latency.Seconds())
	if sub.StartedAt != nil {
		profile := sub.Profile
		if profile == "" {
			profile = "unknown"
		}
		m.QueueWait.WithLabelValues(profile).Observe(sub.StartedAt.Sub(sub.CreatedAt).Seconds())
		if sub.GradedAt != nil {
			m.Execution.WithLabelValues(profile).Observe(sub.GradedAt.Sub(*sub.StartedAt).Seconds())
		}
	}
}

// WatchRunners adds gauges of the runner fleet, read from db at scrape
// time (so every server of a fleet reports the same): runners and slots
// per profile and state (active, draining, or stale when not seen for
// staleAfter).
func (m *Metrics) WatchRunners(db RunnerStore, staleAfter time.Duration) {
	m.Registry.MustRegister(&runnerCollector{db: db, stale: staleAfter,
		runners: prometheus.NewDesc("npugrade_runners", "Registered runners by profile and state.", []string{"profile", "state"}, nil),
		slots:   prometheus.NewDesc("npugrade_runner_slots", "Runner slots by profile and state.", []string{"profile", "state"}, nil),
		spares: prometheus.NewDesc("npugrade_warm_spares", "Pre-started kernels of runners seen recently, by profile: kept (slots × --warm-spares) and ready (waiting for a job when last reported).",
			[]string{"profile", "state"}, nil),
		spareMem: prometheus.NewDesc("npugrade_warm_spare_memory_bytes", "Memory held by the ready pre-started kernels of runners seen recently (as last reported), by profile.",
			[]string{"profile"}, nil)})
}

type runnerCollector struct {
	db                               RunnerStore
	stale                            time.Duration
	runners, slots, spares, spareMem *prometheus.Desc
}

func (r *runnerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- r.runners
	ch <- r.slots
	ch <- r.spares
	ch <- r.spareMem
}

func (r *runnerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	list, err := r.db.Runners(ctx, time.Time{})
	if err != nil {
		return
	}
	type key struct{ profile, state string }
	count, slots := map[key]int{}, map[key]int{}
	kept, ready, mem := map[string]int{}, map[string]int{}, map[string]int64{}
	now := r.db.Now()
	for _, rn := range list {
		k := key{rn.Profile, "active"}
		switch {
		case now.Sub(rn.LastSeen) > r.stale:
			k.state = "stale"
		case rn.Draining:
			k.state = "draining"
		}
		count[k]++
		slots[k] += rn.Slots
		if k.state != "stale" && rn.WarmSpares.Kept > 0 {
			kept[rn.Profile] += rn.WarmSpares.Kept
			ready[rn.Profile] += rn.WarmSpares.Ready
			mem[rn.Profile] += rn.WarmSpares.MemoryBytes
		}
	}
	for k, n := range count {
		ch <- prometheus.MustNewConstMetric(r.runners, prometheus.GaugeValue, float64(n), k.profile, k.state)
		ch <- prometheus.MustNewConstMetric(r.slots, prometheus.GaugeValue, float64(slots[k]), k.profile, k.state)
	}
	for profile, n := range kept {
		ch <- prometheus.MustNewConstMetric(r.spares, prometheus.GaugeValue, float64(n), profile, "kept")
		ch <- prometheus.MustNewConstMetric(r.spares, prometheus.GaugeValue, float64(ready[profile]), profile, "ready")
		ch <- prometheus.MustNewConstMetric(r.spareMem, prometheus.GaugeValue, float64(mem[profile]), profile)
	}
}

type depthCollector struct {
	q    *jobs.Queue
	desc *prometheus.Desc
}

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Queued and leased only: counting every finished job on each scrape
	// would read the whole jobs table.
	depth, err := d.q.PendingDepth(ctx)
	if err != nil {
		return
	}
	for _, st := range []string{domain.JobQueued, domain.JobLeased} {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(depth[st]), st)
	}
}

// policy is the ownership, redaction and counting rules the API shares
// with the pages. It reads through s.DB and judges deadlines by its clock
// (read at each use: the route table is built without a database).
func (s *Server) policy() *policy.Service { return s.Services.Policy }
