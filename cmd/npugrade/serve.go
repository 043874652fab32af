package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/dispatch"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/events"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/queue"
	"github.com/npugrade/npugrade/internal/runner"
	"github.com/npugrade/npugrade/internal/sandbox"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/submission"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand("serve", "", "Run the HTTP server (API, pages, metrics) with in-process runner slots.",
		envAddr, envDB, envSandbox, envMetricsToken)
	addr := fs.String("addr", envOr("NPUGRADE_ADDR", "127.0.0.1:8080"), "listen address HOST:PORT (port 0 picks a free one)")
	dbURL := fs.String("db", envOr("NPUGRADE_DB", store.DefaultURL), "database URL: sqlite:///path/file.db, sqlite://relative.db or postgres://…")
	local := fs.IntMin("local-runner", 1, 0, "in-process runner slots (0 = none)")
	leaseTTL := fs.DurationMin("lease-ttl", time.Minute, time.Second, "job lease length; heartbeats extend it")
	exDir := fs.String("exercises", "exercises", "exercise configs and starters")
	ansDir := fs.String("answers", "answers", "reference answers and outputs")
	cellTimeout := fs.DurationMin("cell-timeout", 0, 0, "per-cell timeout (default: each exercise's)")
	jobTimeout := fs.DurationMin("job-timeout", 5*time.Minute, time.Second, "limit for a whole notebook run")
	maxUpload := fs.Int64Min("max-upload", 8<<20, 1024, "largest accepted notebook in bytes")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics without authentication on this separate listener HOST:PORT (keep it off the public network)")
	metricsToken := fs.String("metrics-token", envOr("NPUGRADE_METRICS_TOKEN", ""), "bearer token that GET /metrics needs on the main listener (default: /metrics is not served there)")
	uploadLimit := fs.String("upload-limit", "30/10m", "each learner's uploads per interval, refused ones included, over all exercises (COUNT/DURATION; 0 = none)")
	printAdmin := fs.Bool("print-admin-token", false, "ensure an 'admin' user exists and print a fresh token for it")
	logLevel := fs.LogLevel()
	jupyter := fs.String("jupyter", "", "jupyter command for the in-process runner (default /usr/bin/jupyter or PATH)")
	envFor := envFlags(fs)
	setupExecutor := executorFlags(fs, envFor)
	warmPool := warmFlags(fs.FlagSet)
	if _, code, ok := fs.parse(args, 0, 0, stdout, stderr); !ok {
		return code
	}
	log := newLogger(stderr, *logLevel)
	uploadWindow, err := parseUploadLimit(*uploadLimit)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade serve: --upload-limit:", err)
		return exitError
	}

	cat, err := exercise.Load(*exDir, *ansDir)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade serve: load exercises:", err)
		return exitError
	}
	for _, b := range cat.Broken() {
		// The others are served; this one answers 404 until it is fixed.
		log.Error("exercise not loaded", "exercise", b.ID, "err", b.Err)
	}
	db, err := store.Open(ctx, *dbURL, log)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade serve:", err)
		return exitError
	}
	defer db.Close()

	q := queue.New(db, log)
	metrics := httpapi.NewMetrics(q)
	// A runner polls at least every 25 s; two minutes of silence is stale.
	metrics.WatchRunners(db, 2*time.Minute)
	disp := &dispatch.Dispatcher{DB: db, Queue: q, Catalog: cat, LeaseTTL: *leaseTTL, JobTimeout: *jobTimeout,
		CellTimeout: *cellTimeout, Log: log, OnGraded: metrics.Observe}
	srv := &httpapi.Server{
		DB: db, Queue: q, Catalog: cat, Dispatch: disp, Log: log, Metrics: metrics, MaxUpload: *maxUpload, MetricsToken: *metricsToken,
		Submissions: &submission.Service{DB: db, Queue: q, Catalog: cat, Limits: notebook.Limits{MaxBytes: *maxUpload}, UploadLimit: uploadWindow},
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade serve:", err)
		return exitError
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "npugrade serving on %s (database %s, %d exercises, %d local runner slots)\n", url, db.Dialect, len(cat.List()), *local)
	if *printAdmin {
		token, err := adminToken(ctx, db)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade serve:", err)
			return exitError
		}
		fmt.Fprintf(stdout, "admin token: %s\n", token)
	}

	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); q.RunReaper(runCtx, *leaseTTL/4+time.Second) }()
	// Events (graded, failed, regrade applied) leave the outbox after their
	// commit; the log is their notifier until an LMS or webhook one is added.
	deliverer := &events.Deliverer{DB: db, Notifier: events.Log(log.With("component", "events")), Log: log}
	wg.Add(1)
	go func() { defer wg.Done(); deliverer.Run(runCtx, time.Second) }()

	runnerDone := make(chan struct{})
	if *local > 0 {
		ex := &execution.Executor{Jupyter: *jupyter, Profile: "cpu", Match: domain.CPUMatcher, Log: log}
		if err := setupExecutor(ctx, ex, stderr); err != nil {
			fmt.Fprintln(stderr, "npugrade serve: the local runner cannot execute notebooks:", err)
			return exitError
		}
		host, _ := os.Hostname()
		localID := "local-" + host
		env, err := envFor("cpu", io.Discard)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade serve:", err)
			return exitError
		}
		registerLocalRunner(ctx, db, localID, host, *local, env, ex.Sandbox, log)
		slotsEx, stopWarm := warmPool(ex, *local, log.With("component", "runner"))
		r := &runner.Runner{
			Source:         &dispatch.Local{D: disp, RunnerID: localID, Match: domain.Matcher(domain.CPUMatcher)},
			Executor:       slotsEx,
			Slots:          *local,
			HeartbeatEvery: *leaseTTL / 3,
			Fingerprint:    "local-cpu",
			Log:            log.With("component", "runner"),
		}
		go func() { defer close(runnerDone); _ = r.Run(ctx); stopWarm() }()
	} else {
		close(runnerDone)
	}

	stopping := make(chan struct{})
	srv.Stopping = stopping
	hs := srv.HTTPServer(httpapi.DefaultTimeouts())
	if *metricsAddr != "" {
		ms, err := serveMetrics(*metricsAddr, srv.MetricsHandler())
		if err != nil {
			fmt.Fprintln(stderr, "npugrade serve: --metrics-addr:", err)
			return exitError
		}
		defer ms.Close()
		log.Info("metrics served", "addr", *metricsAddr)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "npugrade serve:", err)
			return exitError
		}
	case <-ctx.Done():
	}
	log.Info("shutting down: draining runner slots and connections")
	shutCtx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	<-runnerDone // in-flight jobs finish or are released (runner.DrainTimeout)
	close(stopping)
	_ = hs.Shutdown(shutCtx)
	stopRun()
	wg.Wait()
	log.Info("stopped")
	return exitOK
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
func registerLocalRunner(ctx context.Context, db *store.DB, id, host string, slots int, env *envs.Env, sb *sandbox.Config, log *slog.Logger) {
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
