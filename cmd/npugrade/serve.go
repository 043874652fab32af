package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/events"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/runner"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/sandbox"
	"github.com/npugrade/npugrade/internal/sso"
	"github.com/npugrade/npugrade/internal/store"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand(ctx, "serve", "", "Run the HTTP server (API, pages, metrics) with in-process runner slots.",
		envAddr, envDB, envSandbox, envMetricsToken, envTrusted, envPublicURL, envHubSecret, envOIDCSecret)
	addr := fs.String("addr", envOr("NPUGRADE_ADDR", "127.0.0.1:8080"), "listen address HOST:PORT (port 0 picks a free one)")
	var o serveOptions
	o.dbURL = fs.String("db", envOr("NPUGRADE_DB", store.DefaultURL), "database URL: sqlite:///path/file.db, sqlite://relative.db or postgres://…")
	o.dbConns = fs.IntMin("db-conns", store.DefaultPoolSize, 1, "Postgres connections this server opens at most (at least the runners claiming at once; several servers share max_connections)")
	o.local = fs.IntMin("local-runner", 1, 0, "in-process runner slots (0 = none)")
	o.leaseTTL = fs.DurationMin("lease-ttl", time.Minute, time.Second, "job lease length; heartbeats extend it")
	o.exDir = fs.String("exercises", "exercises", "exercise configs and starters")
	o.ansDir = fs.String("answers", "answers", "reference answers and outputs")
	o.cellTimeout = fs.DurationMin("cell-timeout", 0, 0, "per-cell timeout (default: each exercise's)")
	o.jobTimeout = fs.DurationMin("job-timeout", 5*time.Minute, time.Second, "limit for a whole notebook run")
	o.maxUpload = fs.Int64Min("max-upload", 8<<20, 1024, "largest accepted notebook in bytes")
	o.metricsAddr = fs.String("metrics-addr", "", "serve /metrics without authentication on this separate listener HOST:PORT (keep it off the public network)")
	o.metricsToken = fs.String("metrics-token", envOr("NPUGRADE_METRICS_TOKEN", ""), "bearer token that GET /metrics needs on the main listener (default: /metrics is not served there)")
	trusted := fs.String("trusted-proxies", envOr("NPUGRADE_TRUSTED_PROXIES", ""), "comma-separated CIDRs of the reverse proxies in front of the server: from them the client is the right-most X-Forwarded-For address outside them (default: none, X-Forwarded-For is ignored)")
	o.publicURL = fs.String("public-url", envOr("NPUGRADE_PUBLIC_URL", ""), "the server's URL as users reach it, e.g. https://grade.example.edu: the device sign-in's verification_uri (default: the request's scheme and host, X-Forwarded-Proto/Host from trusted proxies)")
	o.lti = fs.Bool("lti", true, "serve the LTI 1.3 tool (/lti/login, /lti/launch, /lti/jwks) and send scores to the LMS gradebooks when a platform is registered (npugrade lti platform add); needs --public-url")
	o.uploadLimit = fs.String("upload-limit", "30/10m", "each learner's uploads per interval, refused ones included, over all exercises (COUNT/DURATION; 0 = none)")
	o.maxActive = fs.Int("max-active", intake.DefaultMaxActive, "each learner's submissions and checks waiting for or in grading at once; more are refused (429) until one is graded (0 = no cap)")
	printAdmin := fs.Bool("print-admin-token", false, "ensure an 'admin' user exists and print a fresh token for it")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile (pprof) of the whole run to this file when serve stops (make bench)")
	logLevel := fs.LogLevel()
	o.jupyter = fs.String("jupyter", "", "jupyter command for the in-process runner (default /usr/bin/jupyter or PATH)")
	o.envFor = envFlags(fs)
	o.setupExecutor = executorFlags(fs, o.envFor)
	o.warmPool = warmFlags(fs.FlagSet)
	applyGC := gcFlags(fs.FlagSet)
	hub, oidcp := hubFlags(fs), oidcFlags(fs)
	if _, code, ok := fs.parse(args, 0, 0, stdout, stderr); !ok {
		return code
	}
	w := fs.words()
	o.say = w
	restoreGC, err := applyGC()
	if err != nil {
		return fs.usageError(stderr, w.flagProblem(err))
	}
	if o.trustedProxies, err = httpapi.ParseTrustedProxies(*trusted); err != nil {
		return fs.usageError(stderr, w.F("--trusted-proxies: %s", w.flagProblem(err)))
	}
	if u, perr := url.Parse(*o.publicURL); *o.publicURL != "" && (perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fs.usageError(stderr, w.T("--public-url: want http(s)://host[:port][/path]"))
	}
	defer restoreGC()
	if o.hub, err = hub(); err != nil {
		return fs.usageError(stderr, err.Error())
	}
	if o.oidc, err = oidcp(); err != nil {
		return fs.usageError(stderr, err.Error())
	}
	o.log = newLogger(stderr, *logLevel)
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade serve: --cpu-profile:", sysProblem(w, err))
			return exitError
		}
		defer stop()
	}
	app, err := openServe(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade serve:", err)
		return exitError
	}
	defer app.db.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade serve:", w.F("cannot listen on %s: %s", *addr, sysProblem(w, err)))
		return exitError
	}
	fmt.Fprint(stdout, w.F("npugrade serving on %s (database %s, %d exercises, %d local runner slots)\n",
		"http://"+ln.Addr().String(), app.db.Dialect, len(app.cat.List()), *o.local))
	if *printAdmin {
		token, err := adminToken(ctx, app.db)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade serve:", dbProblem(w, err))
			return exitError
		}
		fmt.Fprint(stdout, w.F("admin token: %s\n", token))
	}
	if err := app.run(ctx, o, ln, stderr); err != nil {
		fmt.Fprintln(stderr, "npugrade serve:", err)
		return exitError
	}
	return exitOK
}

// serveOptions are serve's flags, parsed.
type serveOptions struct {
	dbURL, exDir, ansDir, uploadLimit, jupyter *string
	metricsAddr, metricsToken                  *string
	local, dbConns, maxActive                  *int
	leaseTTL, cellTimeout, jobTimeout          *time.Duration
	maxUpload                                  *int64
	trustedProxies                             []netip.Prefix
	publicURL                                  *string
	lti                                        *bool
	hub                                        *sso.Hub
	oidc                                       *sso.OIDC
	envFor                                     envChooser
	setupExecutor                              func(ctx context.Context, ex *execution.Executor, stderr io.Writer) error
	warmPool                                   func(ex *execution.Executor, slots int, log *slog.Logger) (runner.Executor, func())
	log                                        *slog.Logger
	// say words the errors serve prints for the person at the terminal.
	say words
}

// serveApp is the wired server: one database, queue, catalog, dispatcher
// and HTTP handler set.
type serveApp struct {
	db   *store.DB
	q    *jobs.Queue
	cat  *exercise.Catalog
	disp *jobs.Dispatcher
	srv  *httpapi.Server
	log  *slog.Logger
	// lti is the LTI tool's grade passback (nil: not served).
	lti *compose.LTIParts
}

// warnStaleReferences names at start every exercise whose reference
// outputs no longer match its answer on some profile (its answer was
// edited): submissions of one with none usable are refused until they
// are recorded again.
func warnStaleReferences(ctx context.Context, log *slog.Logger, cat *exercise.Catalog, refs *grade.Submissions) {
	for _, ex := range cat.List() {
		for _, p := range ex.ReferenceProfiles() {
			if _, err := refs.Reference(ctx, ex, p); errors.Is(err, exercise.ErrStaleReference) {
				log.Warn("exercise references do not match its answer: npugrade check --only "+ex.ID+" names the changed cells and says whether they may be recorded (then --update-reference and a restart, or POST /api/v1/exercises/"+ex.ID+"/references); a regrade requeues the submissions that failed meanwhile",
					"exercise", ex.ID, "profile", p, "err", err)
			}
		}
	}
}

// openServe loads the catalog, opens (and migrates) the database and wires
// the services.
func openServe(ctx context.Context, o serveOptions) (*serveApp, error) {
	w := o.say
	uploadWindow, err := parseUploadLimit(*o.uploadLimit)
	if err != nil {
		return nil, w.Errorf("--upload-limit: %s", w.flagProblem(err))
	}
	cat, err := exercise.Load(*o.exDir, *o.ansDir)
	if err != nil {
		return nil, w.Errorf("load exercises: %s", sysProblem(w, err))
	}
	for _, b := range cat.Broken() {
		// The others are served; this one answers 404 until it is fixed.
		o.log.Error("exercise not loaded", "exercise", b.ID, "err", b.Err)
	}
	db, err := store.Open(ctx, *o.dbURL, o.log)
	if err != nil {
		return nil, errors.New(dbProblem(w, err))
	}
	db.SetPoolSize(*o.dbConns)
	// A manual cell's rubric that changed since the last start is
	// re-applied to every submission graded with it (and on record).
	manual := &grade.Manual{DB: db}
	if err := manual.SyncRubrics(ctx, cat); err != nil {
		o.log.Error("re-apply changed rubrics", "err", err)
	}
	warnStaleReferences(ctx, o.log, cat, &grade.Submissions{DB: db})
	q := jobs.New(db, o.log)
	metrics := httpapi.NewMetrics(q)
	// A runner polls at least every 25 s; two minutes of silence is stale.
	metrics.WatchRunners(db, 2*time.Minute)
	metrics.WatchUnclaimable(q, db.Runners)
	disp := &jobs.Dispatcher{DB: db, Queue: q, Catalog: cat, LeaseTTL: *o.leaseTTL, JobTimeout: *o.jobTimeout,
		CellTimeout: *o.cellTimeout, Log: o.log, OnGraded: metrics.Observe}
	cfg := compose.Config{DB: db, Queue: q, Catalog: cat, Log: o.log, Dispatch: disp, Metrics: metrics,
		MaxUpload: *o.maxUpload, UploadLimit: uploadWindow, MaxActive: activeCap(*o.maxActive), Manual: manual, Hub: o.hub, OIDC: o.oidc}
	parts, err := ltiParts(ctx, o, db, cat, &cfg)
	if err != nil {
		return nil, err
	}
	srv := compose.Server(cfg)
	srv.MetricsToken, srv.TrustedProxies, srv.PublicURL = *o.metricsToken, o.trustedProxies, *o.publicURL
	return &serveApp{db: db, q: q, cat: cat, disp: disp, srv: srv, log: o.log, lti: parts}, nil
}

// ltiParts builds the LTI tool when --lti is on and a platform is
// registered: cfg gets the tool and the LMSs' origins, which may frame
// the pages (launches open in an iframe).
func ltiParts(ctx context.Context, o serveOptions, db *store.DB, cat *exercise.Catalog, cfg *compose.Config) (*compose.LTIParts, error) {
	if !*o.lti {
		return nil, nil
	}
	platforms, err := db.LTIPlatforms(ctx)
	if err != nil || len(platforms) == 0 {
		return nil, err
	}
	if *o.publicURL == "" {
		o.log.Warn("LTI platforms are registered but the LTI tool is not served: it needs --public-url (the URL the platforms know)")
		return nil, nil
	}
	parts := compose.LTI(db, cat, *o.publicURL, o.log.With("component", "lti"))
	cfg.LTI = parts.Tool
	seen := map[string]bool{}
	for _, p := range platforms {
		for _, raw := range []string{p.Issuer, p.AuthLoginURL} {
			if u, err := url.Parse(raw); err == nil && u.Host != "" && !seen[u.Scheme+"://"+u.Host] {
				seen[u.Scheme+"://"+u.Host] = true
				cfg.FrameAncestors = append(cfg.FrameAncestors, u.Scheme+"://"+u.Host)
			}
		}
	}
	o.log.Info("LTI tool served", "platforms", len(platforms), "launch", parts.Tool.LaunchURL())
	return &parts, nil
}

// run serves on ln with the reaper, the event deliverer and the local
// runner slots until ctx ends, then drains: in-flight jobs finish or are
// released, then connections close.
func (a *serveApp) run(ctx context.Context, o serveOptions, ln net.Listener, stderr io.Writer) error {
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); a.q.RunReaper(runCtx, *o.leaseTTL/4+time.Second) }()
	// On Postgres, long polls wake on other servers' enqueues too (LISTEN/NOTIFY).
	go func() { defer wg.Done(); a.q.Listen(runCtx) }()
	// On Postgres, token checks are kept while changes to them are heard.
	go func() { defer wg.Done(); a.db.ListenAuth(runCtx, a.log) }()
	// Events (graded, failed, regrade applied) leave the outbox after their
	// commit; the log is their notifier until an LMS or webhook one is added.
	notifier := events.Log(a.log.With("component", "events"))
	if a.lti != nil {
		// Scores of learners in LMS-linked cohorts go to the gradebooks.
		notifier = events.All(notifier, a.lti.Grades)
		wg.Add(1)
		go func() { defer wg.Done(); a.lti.Sender.Run(runCtx, 2*time.Second) }()
	}
	deliverer := &events.Deliverer{DB: a.db, Notifier: notifier, Log: a.log}
	go func() { defer wg.Done(); deliverer.Run(runCtx, time.Second) }()
	runnerDone, err := a.startLocalRunner(ctx, o, stderr)
	if err != nil {
		return err
	}
	stopping := make(chan struct{})
	a.srv.Stopping = stopping
	hs := a.srv.HTTPServer(httpapi.DefaultTimeouts())
	if *o.metricsAddr != "" {
		ms, err := serveMetrics(*o.metricsAddr, a.srv.MetricsHandler())
		if err != nil {
			return o.say.Errorf("--metrics-addr: %s", sysProblem(o.say, err))
		}
		defer ms.Close()
		a.log.Info("metrics served", "addr", *o.metricsAddr)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	a.log.Info("shutting down: draining runner slots and connections")
	shutCtx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	<-runnerDone // in-flight jobs finish or are released (runner.DrainTimeout)
	close(stopping)
	_ = hs.Shutdown(shutCtx)
	stopRun()
	wg.Wait()
	a.log.Info("stopped")
	return nil
}

// startLocalRunner starts the in-process runner slots (none with
// --local-runner 0); the channel closes when they have drained.
func (a *serveApp) startLocalRunner(ctx context.Context, o serveOptions, stderr io.Writer) (<-chan struct{}, error) {
	done := make(chan struct{})
	if *o.local <= 0 {
		close(done)
		return done, nil
	}
	ex := &execution.Executor{Jupyter: *o.jupyter, Profile: "cpu", Match: domain.CPUMatcher, Log: a.log}
	if err := o.setupExecutor(ctx, ex, stderr); err != nil {
		return nil, o.say.Errorf("the local runner cannot execute notebooks: %s", err)
	}
	host, _ := os.Hostname()
	localID := "local-" + host
	env, err := o.envFor("cpu", io.Discard)
	if err != nil {
		return nil, err
	}
	rep := registerLocalRunner(ctx, a.db, localID, host, *o.local, env, sandboxConfig(ex), a.log)
	// It claims, and grades cells, by its attested report, like a remote
	// runner: an exercise its environment does not satisfy waits for one.
	ex.Match = rep.Satisfies
	warnUnsatisfied(a.log, a.cat, rep)
	slotsEx, stopWarm := o.warmPool(ex, *o.local, a.log.With("component", "runner"))
	r := &runner.Runner{
		Source:         &jobs.Local{D: a.disp, RunnerID: localID, Match: domain.Matcher(rep.Satisfies)},
		Executor:       slotsEx,
		Slots:          *o.local,
		HeartbeatEvery: *o.leaseTTL / 3,
		Fingerprint:    "local-cpu",
		Log:            a.log.With("component", "runner"),
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	// The fleet page and /metrics show the spares' memory (the database
	// holds it, like a remote runner's heartbeat, for every server).
	go watchSpares(watchCtx, 30*time.Second, func(ws runnerproto.WarmSpares) {
		f := fleet.WarmSpares{PerSlot: ws.PerSlot, Kept: ws.Kept, Ready: ws.Ready, MemoryBytes: ws.MemoryBytes}
		if _, err := a.db.SetRunnerWarmSpares(watchCtx, localID, f); err != nil && watchCtx.Err() == nil {
			a.log.Warn("record warm spares of the local runner", "err", err)
		}
	}, slotsEx)
	go func() { defer close(done); _ = r.Run(ctx); stopWatch(); stopWarm() }()
	return done, nil
}

// adminToken makes sure an admin exists and returns a fresh token for it.
func adminToken(ctx context.Context, db *store.DB) (string, error) {
	u, err := db.UserByName(ctx, "admin")
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		_, token, err := db.CreateUser(ctx, "admin", domain.RoleAdmin)
		return token, err
	}
	if err != nil {
		return "", err
	}
	return db.CreateToken(ctx, u.ID)
}

// registerLocalRunner lists the in-process runner in the runner fleet with
// its attested environment, like a remote runner's registration, so that
// instructors see what grades their learners' work.
func registerLocalRunner(ctx context.Context, db *store.DB, id, host string, slots int, env *envs.Env, sb *sandbox.Config, log *slog.Logger) envprobe.Report {
	var rep envprobe.Report
	var err error
	if env != nil && sb != nil {
		rep, err = envs.Probe(ctx, *env, *sb, true)
	} else {
		rep, err = envprobe.Collect(ctx, envprobe.Options{CPUOnly: true})
		rep.Environment = envs.Host
	}
	if err != nil {
		log.Warn("environment probe of the local runner failed", "err", err)
		rep = envprobe.Validate(envprobe.Report{Profile: "cpu", Arch: runtime.GOARCH})
	}
	err = db.UpsertRunner(ctx, store.RunnerRegistration{ID: id, Name: host + " (in-process)", Slots: slots,
		Labels: map[string]string{"kind": "in-process", "version": buildinfo.Version()}, Profile: rep.Profile, Verdict: rep.Verdict, Report: rep})
	if err != nil {
		log.Warn("register the local runner", "err", err)
	}
	return rep
}

// activeCap is --max-active as intake takes it: 0 (no cap) is negative
// there, where 0 is the default.
func activeCap(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// parseUploadLimit reads COUNT/DURATION ("30/10m"); "0" turns the limit off.
func parseUploadLimit(v string) (store.UploadWindow, error) {
	if v == "0" {
		return store.UploadWindow{Count: -1}, nil
	}
	n, per, ok := strings.Cut(v, "/")
	count, err := strconv.Atoi(n)
	d, derr := time.ParseDuration(per)
	if !ok || err != nil || derr != nil || count <= 0 || d <= 0 {
		return store.UploadWindow{}, fmt.Errorf("%q: want COUNT/DURATION such as 30/10m, or 0", v)
	}
	return store.UploadWindow{Count: count, Per: d}, nil
}

// serveMetrics serves h at /metrics on its own listener.
// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

func serveMetrics(addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	t := httpapi.DefaultTimeouts()
	ms := &http.Server{Handler: mux, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
	go func() { _ = ms.Serve(ln) }()
	return ms, nil
}
