// Package httpapi is npugrade's HTTP interface (gin): the learner and
// instructor API under /api/v1, health and metrics, and RFC 9457 problem
// responses. Handlers translate HTTP to calls on the services and back;
// they pass the request's context.Context down, never *gin.Context.
package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/dispatch"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/queue"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/submission"
)

// Server holds the handlers' dependencies.
type Server struct {
	DB          *store.DB
	Queue       *queue.Queue
	Catalog     *exercise.Catalog
	Submissions *submission.Service
	Dispatch    *dispatch.Dispatcher
	Log         *slog.Logger
	Metrics     *Metrics
	// MaxUpload is the largest accepted notebook in bytes.
	MaxUpload int64
	// Stopping is closed when the server shuts down; long polls end then.
	Stopping <-chan struct{}

	runnersOnce sync.Once
	runners     *runnerState
	polls       pollLimiter
}

// Handler builds the router.
func (s *Server) Handler() http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(s.recoverer(), s.logger())
	r.HandleMethodNotAllowed = true
	r.NoRoute(func(c *gin.Context) {
		s.problem(c, domain.Errorf(domain.ENOTFOUND, "no route %s %s", c.Request.Method, c.Request.URL.Path))
	})
	r.NoMethod(func(c *gin.Context) {
		writeProblem(c, http.StatusMethodNotAllowed, "Method Not Allowed", "method "+c.Request.Method+" is not allowed here", nil)
	})

	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok", "version": buildinfo.Version()}) })
	r.GET("/readyz", s.ready)
	if s.Metrics != nil {
		r.GET("/metrics", gin.WrapH(promhttp.HandlerFor(s.Metrics.Registry, promhttp.HandlerOpts{})))
	}

	api := r.Group("/api/v1", s.authenticate(false))
	api.GET("/exercises", s.listExercises)
	api.GET("/exercises/:id/notebook", s.starterNotebook)
	api.POST("/submissions", s.createSubmission)
	api.GET("/submissions", s.listSubmissions)
	api.GET("/submissions/:id", s.getSubmission)
	api.GET("/submissions/:id/executed", s.executedNotebook)
	api.GET("/queue", s.requireRole(domain.RoleInstructor, domain.RoleAdmin), s.queueDepth)
	s.regradeRoutes(api)

	s.fleetRoutes(api)
	s.runnerRoutes(r)
	s.webRoutes(r)
	return r
}

func (s *Server) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if err := s.DB.Ping(ctx); err != nil {
		writeProblem(c, http.StatusServiceUnavailable, "Service Unavailable", "the database does not answer", nil)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "database": s.DB.Dialect})
}

const userKey = "npugrade.user"

// authenticate resolves the bearer token. Runner tokens are accepted only
// where runnerRoutes is true, and only runner tokens there.
func (s *Server) authenticate(runnerRoutes bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		h := c.GetHeader("Authorization")
		token, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || token == "" {
			c.Header("WWW-Authenticate", `Bearer realm="npugrade"`)
			s.problem(c, domain.Errorf(domain.EUNAUTHORIZED, "an Authorization: Bearer <token> header is required"))
			c.Abort()
			return
		}
		u, err := s.DB.UserByToken(c.Request.Context(), strings.TrimSpace(token))
		if err != nil {
			c.Header("WWW-Authenticate", `Bearer realm="npugrade", error="invalid_token"`)
			s.problem(c, err)
			c.Abort()
			return
		}
		if runnerRoutes != (u.Role == domain.RoleRunner) {
			if runnerRoutes {
				s.problem(c, domain.Errorf(domain.EFORBIDDEN, "runner routes need a runner token"))
			} else {
				s.problem(c, domain.Errorf(domain.EFORBIDDEN, "runner tokens are accepted only on runner routes"))
			}
			c.Abort()
			return
		}
		c.Set(userKey, u)
		c.Next()
	}
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

func (s *Server) logger() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		s.Log.LogAttrs(c.Request.Context(), slog.LevelDebug, "http",
			slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path),
			slog.Int("status", c.Writer.Status()), slog.Duration("took", time.Since(start)))
		if s.Metrics != nil {
			s.Metrics.Requests.WithLabelValues(c.FullPath(), c.Request.Method, http.StatusText(c.Writer.Status())).Inc()
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
	Submissions prometheus.Counter
	Graded      *prometheus.CounterVec
	Latency     prometheus.Histogram
}

// NewMetrics registers the collectors; queue depth is read at scrape time.
func NewMetrics(q *queue.Queue) *Metrics {
	m := &Metrics{
		Registry:    prometheus.NewRegistry(),
		Requests:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "npugrade_http_requests_total", Help: "HTTP requests by route, method and status."}, []string{"route", "method", "status"}),
		Submissions: prometheus.NewCounter(prometheus.CounterOpts{Name: "npugrade_submissions_total", Help: "Accepted submissions."}),
		Graded:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "npugrade_graded_total", Help: "Graded submissions by exercise."}, []string{"exercise"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "npugrade_grading_latency_seconds", Help: "Submit to graded.",
			Buckets: []float64{1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 300}}),
	}
	m.Registry.MustRegister(m.Requests, m.Submissions, m.Graded, m.Latency,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		&depthCollector{q: q, desc: prometheus.NewDesc("npugrade_jobs", "Jobs by state.", []string{"state"}, nil)})
	return m
}

// Observe records a graded submission.
func (m *Metrics) Observe(sub domain.Submission, latency time.Duration) {
	m.Graded.WithLabelValues(sub.ExerciseID).Inc()
	m.Latency.Observe(latency.Seconds())
}

type depthCollector struct {
	q    *queue.Queue
	desc *prometheus.Desc
}

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	depth, err := d.q.Depth(ctx)
	if err != nil {
		return
	}
	for _, st := range []string{domain.JobQueued, domain.JobLeased, domain.JobSucceeded, domain.JobFailed, domain.JobCanceled} {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(depth[st]), st)
	}
}
