package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/runnerclient"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// The claim and idle-runner benchmarks (make bench) run `npugrade serve`
// as its own process on Postgres, so that its CPU and memory are its own,
// and runners speak the runner protocol over real HTTP.

// benchServer is a `npugrade serve` process.
type benchServer struct {
	url string
	cmd *exec.Cmd
}

// startBenchServer builds npugrade and serves dbURL from a child process.
func startBenchServer(b *testing.B, dbURL string, extra ...string) *benchServer {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "npugrade")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dbURL, "--local-runner", "0", "--log-level", "warn",
		"--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers")}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("server did not start: %v", err)
	}
	return &benchServer{url: "http://" + strings.TrimPrefix(strings.Fields(strings.TrimPrefix(line, "npugrade serving on "))[0], "http://"), cmd: cmd}
}

// cpuTime is the process's user+system CPU time so far.
func (s *benchServer) cpuTime(b *testing.B) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of stat, in clock ticks (100 Hz)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// backendCPUTime is process pid's CPU time, from /proc/PID/schedstat
// (nanoseconds; 0 when it is gone).
func backendCPUTime(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	ns, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns)
}

// watchClaimBackends follows the CPU time of the backends of
// db's database other than db's own, every 100 ms until the returned
// function, which gives their CPU since the start: a backend that came
// later counts from its birth, one that left up to its last reading
// (pgbench's end: at most its last 100 ms). The 64 claimers' backends read
// every 10 ms (watchBackends) cost this process about as much CPU as its
// claims, and the machine's cores are what the benchmark measures.
func watchClaimBackends(db *store.DB) (stop func() time.Duration) {
	base, last := map[int]time.Duration{}, map[int]time.Duration{}
	sample := func() {
		var pids []int
		_ = db.RawScan(context.Background(), &pids,
			"SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
		for _, pid := range pids {
			if d := backendCPUTime(pid); d > last[pid] {
				last[pid] = d
			}
		}
	}
	sample()
	for pid, d := range last {
		base[pid] = d
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				sample()
				return
			case <-t.C:
				sample()
			}
		}
	}()
	return func() time.Duration {
		close(done)
		<-finished
		var sum time.Duration
		for pid, d := range last {
			sum += d - base[pid]
		}
		return sum
	}
}

// rssMB is the process's resident memory now and at its peak, in MB.
func (s *benchServer) rssMB(b *testing.B) (now, peak float64) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			kb, _ := strconv.ParseFloat(f[1], 64)
			if f[0] == "VmRSS:" {
				now = kb / 1024
			} else {
				peak = kb / 1024
			}
		}
	}
	return now, peak
}

// benchClient posts runner-protocol JSON with a pool big enough for
// every concurrent poll.
type benchClient struct{ http *http.Client }

func newBenchClient(conns int) *benchClient {
	return &benchClient{http: &http.Client{Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns}}}
}

func (c *benchClient) post(ctx context.Context, url, token string, in, out any) (int, error) {
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(buf.Bytes(), out); err != nil {
			return resp.StatusCode, err
		}
	}
	return resp.StatusCode, nil
}

// registerRunners registers n runners, spread over tokens (a token holds
// at most httpapi.MaxPollsPerToken polls), and returns (token, id) pairs.
func registerRunners(b *testing.B, c *benchClient, url string, tokens []string, n int) [][2]string {
	b.Helper()
	out := make([][2]string, n)
	for i := range out {
		tok := tokens[i%len(tokens)]
		var reg runnerproto.RegisterResponse
		code, err := c.post(context.Background(), url+"/api/runner/v1/register", tok,
			runnerproto.RegisterRequest{Name: fmt.Sprintf("bench-%d", i), Slots: 1, Report: cpuReport()}, &reg)
		if err != nil || code != 200 {
			b.Fatalf("register runner %d: %d %v", i, code, err)
		}
		out[i] = [2]string{tok, reg.RunnerID}
	}
	return out
}

// seedClaimable writes n queued grade jobs, each with its submission, on a
// copy of the ch1 answer as payload.
func seedClaimable(b *testing.B, db *store.DB, userID int64, n int) {
	b.Helper()
	payload := readFileTB(b, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb"))
	sha := store.SHA256(payload)
	now := time.Now().UTC()
	err := db.InTx(context.Background(), func(tx *store.Tx) error {
		if err := tx.RawInsert("blobs", []map[string]any{{"sha256": sha, "size": len(payload), "data": payload, "created_at": now}}); err != nil {
			return err
		}
		subs, jobs := make([]map[string]any, n), make([]map[string]any, n)
		for i := range subs {
			id := fmt.Sprintf("bench-%06d", i)
			subs[i] = map[string]any{"id": id, "user_id": userID, "exercise_id": "ch1", "exercise_version": "bench",
				"notebook_sha256": sha, "status": domain.StatusQueued, "created_at": now}
			jobs[i] = map[string]any{"submission_id": id, "kind": domain.JobGrade, "exercise_id": "ch1", "state": domain.JobQueued,
				"requires": "{}", "max_attempts": 3, "payload_sha256": sha, "not_before": now, "created_at": now, "updated_at": now}
		}
		if err := tx.RawInsert("submissions", subs); err != nil {
			return err
		}
		return tx.RawInsert("jobs", jobs)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// requeueAll puts every job back to queued and vacuums, so that each side
// of the comparison starts from the same table.
func requeueAll(b *testing.B, db *store.DB) {
	b.Helper()
	ctx := context.Background()
	for _, q := range []string{
		"UPDATE jobs SET state = 'queued', lease_token = '', runner_id = '', lease_expires_at = NULL, attempt = 0",
		"UPDATE submissions SET status = 'queued', runner_id = '', started_at = NULL",
		"VACUUM ANALYZE jobs", "VACUUM ANALYZE submissions",
	} {
		if err := db.RawExec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
}

func pgbenchPath() string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(m) > 0 {
		return m[len(m)-1]
	}
	return ""
}

// claimAsScript is the statement the server runs for each claim
// (store.ClaimAsStatement: authentication, runner check, lease) as a
// pgbench script: client i claims as runners[i%len(runners)] with token.
func claimAsScript(token string, runners [][2]string) string {
	ids := make([]string, len(runners))
	for i, r := range runners {
		ids[i] = "'" + r[1] + "'"
	}
	stmt := store.ClaimAsStatement(`('{}')`)
	for _, kv := range [][2]string{{"@hash", "'" + auth.HashToken(token) + "'"}, {"@addr", "'127.0.0.1'"},
		{"@wstart", "now() - interval '1 minute'"}, {"@runner", fmt.Sprintf("(ARRAY[%s])[:client_id %% %d + 1]", strings.Join(ids, ","), len(ids))},
		{"@role", "'runner'"}, {"@stale", "now() - interval '5 seconds'"}} {
		stmt = strings.ReplaceAll(stmt, kv[0], kv[1])
	}
	return stmt
}

// pgbenchClaims runs a claim statement (default: the plain one,
// store.ClaimStatement) under pgbench at clients clients, perClient
// claims each, in pgbench's protocol mode ("simple", or "prepared" as the
// server's pool runs its statements), and returns its tx/s, per-claim
// latencies and pgbench's own CPU time.
func pgbenchClaims(b *testing.B, dbURL, stmt, mode string, clients, perClient int) (tps float64, lat []time.Duration, cpu time.Duration) {
	b.Helper()
	if stmt == "" {
		stmt = store.ClaimStatement(`('{}')`)
	}
	for name, v := range map[string]string{"@token": "'pgbench-' || :r", "@runner": "'pgbench'",
		"@expires": "now() + interval '1 hour'", "@now": "now()"} {
		stmt = strings.ReplaceAll(stmt, name, v)
	}
	dir := b.TempDir()
	script := filepath.Join(dir, "claim.sql")
	if err := os.WriteFile(script, []byte("\\set r random(1, 1000000000)\n"+stmt+";\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(pgbenchPath(), "-n", "-M", mode, "-c", strconv.Itoa(clients), "-j", "2", "-t", strconv.Itoa(perClient),
		"-f", script, "-l", "--log-prefix", filepath.Join(dir, "log"), dbURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	m := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench printed no tps:\n%s", out)
	}
	tps, _ = strconv.ParseFloat(string(m[1]), 64)
	logs, _ := filepath.Glob(filepath.Join(dir, "log*"))
	for _, f := range logs {
		raw, _ := os.ReadFile(f)
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if f := strings.Fields(l); len(f) >= 3 {
				us, _ := strconv.ParseInt(f[2], 10, 64)
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
	}
	return tps, lat, cpu
}

// BenchmarkClaim: 10,000 queued grade jobs, 64 runners claiming at once
// over the runner protocol (POST /api/runner/v1/jobs/claim) until the
// queue is empty, against pgbench running the server's own claim
// statement at 64 clients on the same table, in the same run. Targets:
// claims/s at least 0.7× pgbench's tx/s, p99 at most 2× pgbench's p99,
// and no job leased twice.
func BenchmarkClaim(b *testing.B) {
	if os.Getenv(storetest.EnvDSN) == "" || pgbenchPath() == "" {
		b.Skip("needs Postgres (NPUGRADE_TEST_POSTGRES_DSN) and pgbench")
	}
	const queued, claimers = 10000, 64
	dbURL := storetest.URL(b, "postgres")
	addUserTB(b, dbURL, "learner", "learner")
	token := addUserTB(b, dbURL, "runners", "runner")
	extra := []string{"--lease-ttl", "1h"}
	// NPUGRADE_BENCH_CPUPROFILE=FILE profiles the server (pprof) for the
	// whole run, to see where a claim's CPU goes.
	prof := os.Getenv("NPUGRADE_BENCH_CPUPROFILE")
	if prof != "" {
		extra = append(extra, "--cpu-profile", prof)
	}
	s := startBenchServer(b, dbURL, extra...)
	db, err := store.Connect(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var userID int64
	_ = db.RawScan(context.Background(), &userID, "SELECT id FROM users WHERE name = 'learner'")
	seedClaimable(b, db, userID, queued)
	c := newBenchClient(claimers * 2)
	runners := registerRunners(b, c, s.url, []string{token}, claimers)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		requeueAll(b, db)
		pgw := watchClaimBackends(db)
		tps, base, pgbenchCPU := pgbenchClaims(b, dbURL, "", "simple", claimers, queued/claimers)
		pgOfPgbench := pgw()
		requeueAll(b, db)
		// The server's whole statement under pgbench, prepared as the
		// server's pool runs it: how much of the gap is the statement's
		// own work (authentication, runner check), and how much HTTP and
		// the processes around it. (Unprepared, planning this statement
		// costs about a third of its rate.)
		pgw = watchClaimBackends(db)
		fullTPS, full, _ := pgbenchClaims(b, dbURL, claimAsScript(token, runners), "prepared", claimers, queued/claimers)
		pgOfFull := pgw()
		requeueAll(b, db)
		cpu0, x0 := s.cpuTime(b), xactCount(db)
		client0, pgw := selfCPU(), watchClaimBackends(db)
		rate, lat, dups := httpClaims(b, c, s.url, runners)
		clientCPU, pgOfHTTP := selfCPU()-client0, pgw()
		cpu, xacts := s.cpuTime(b)-cpu0, xactCount(db)-x0
		bp50, bp99 := percentile(base, 0.5), percentile(base, 0.99)
		p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
		fmt.Printf("claim: %d claims over HTTP by %d runners: %.0f claims/s, p50 %v, p99 %v; pgbench of the claim statement: %.0f tx/s, p50 %v, p99 %v\n",
			len(lat), claimers, rate, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), tps,
			bp50.Round(100*time.Microsecond), bp99.Round(100*time.Microsecond))
		fmt.Printf("claim: pgbench of the server's whole claim statement (authentication, runner check, lease), prepared: %.0f tx/s (%.2f× the plain statement), p50 %v, p99 %v\n",
			fullTPS, fullTPS/tps, percentile(full, 0.5).Round(100*time.Microsecond), percentile(full, 0.99).Round(100*time.Microsecond))
		fmt.Printf("claim: throughput %.2f× pgbench (target ≥ 0.7), p99 %.2f× pgbench's (target ≤ 2), %d jobs leased twice (target 0)\n",
			rate/tps, float64(p99)/float64(bp99), dups)
		// Where the gap to pgbench goes: the server's own CPU and the
		// statements it runs per claim (pgbench runs one).
		fmt.Printf("claim: server CPU %.3f ms per claim, %.1f Postgres transactions per claim\n",
			float64(cpu.Microseconds())/1000/float64(len(lat)), xacts/float64(len(lat)))
		// The clients' own CPU, which shares the machine with the rest:
		// pgbench's per transaction, the runner-protocol client's per claim
		// (it reads each lease, notebook included).
		fmt.Printf("claim: client CPU %.3f ms per claim over HTTP, pgbench %.3f ms per transaction\n",
			float64(clientCPU.Microseconds())/1000/float64(len(lat)), float64(pgbenchCPU.Microseconds())/1000/float64(len(base)))
		// Postgres's own CPU (this database's backends): the server's
		// statement against pgbench's plain one.
		fmt.Printf("claim: Postgres CPU %.3f ms per claim over HTTP, %.3f ms per pgbench transaction (%.3f of the server's statement, prepared)\n",
			float64(pgOfHTTP.Microseconds())/1000/float64(len(lat)), float64(pgOfPgbench.Microseconds())/1000/float64(len(base)),
			float64(pgOfFull.Microseconds())/1000/float64(len(full)))
		b.ReportMetric(rate, "claims/s")
		b.ReportMetric(rate/tps, "x-pgbench")
		b.ReportMetric(float64(p99)/float64(bp99), "p99-x-pgbench")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		if dups > 0 {
			b.Errorf("%d jobs were leased twice", dups)
		}
	}
	b.ReportMetric(0, "ns/op")
	if prof != "" {
		_ = s.cmd.Process.Signal(os.Interrupt)
		_ = s.cmd.Wait()
		fmt.Printf("claim: server CPU profile in %s (go tool pprof)\n", prof)
	}
}

// httpClaims has every runner claim until the queue answers 204, with
// the remote runner's own client (internal/runnerclient), and returns claims/s, each claim's latency and how many jobs came twice.
func httpClaims(b *testing.B, c *benchClient, url string, runners [][2]string) (rate float64, lat []time.Duration, dups int) {
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	start := time.Now()
	var last time.Time
	for _, r := range runners {
		wg.Add(1)
		go func(tok, id string) {
			defer wg.Done()
			rc := &runnerclient.Client{Server: url, Token: tok, HTTP: c.http, RunnerID: id, Wait: 500 * time.Millisecond}
			for {
				t0 := time.Now()
				l, err := rc.Claim(context.Background())
				d := time.Since(t0)
				if err != nil {
					b.Errorf("claim: %v", err)
					return
				}
				if l == nil {
					return
				}
				if len(l.Notebook) == 0 {
					b.Errorf("job %d was leased without its notebook", l.JobID)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				if seen[l.JobID] {
					dups++
				}
				seen[l.JobID] = true
				last = time.Now()
				mu.Unlock()
			}
		}(r[0], r[1])
	}
	wg.Wait()
	return float64(len(lat)) / last.Sub(start).Seconds(), lat, dups
}

// BenchmarkIdleRunners: 1,000 runners long-poll a server with an empty
// queue. Measured over 30 s: the server's CPU (share of one core) and
// RSS, and the transactions per second it makes Postgres run
// (pg_stat_database). Targets: under 5 % of a core, under 150 MB.
func BenchmarkIdleRunners(b *testing.B) {
	if os.Getenv(storetest.EnvDSN) == "" {
		b.Skip("needs Postgres (NPUGRADE_TEST_POSTGRES_DSN)")
	}
	const n, perToken, window = 1000, 60, 30 * time.Second
	dbURL := storetest.URL(b, "postgres")
	var tokens []string
	for i := 0; i < (n+perToken-1)/perToken; i++ {
		tokens = append(tokens, addUserTB(b, dbURL, fmt.Sprintf("runners%d", i), "runner"))
	}
	s := startBenchServer(b, dbURL)
	db, err := store.Connect(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := newBenchClient(n + 100)
	runners := registerRunners(b, c, s.url, tokens, n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Add(1)
		go func(tok, id string) {
			defer wg.Done()
			for ctx.Err() == nil {
				code, err := c.post(ctx, s.url+"/api/runner/v1/jobs/claim", tok, runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: runnerproto.MaxPoll.Seconds()}, nil)
				if ctx.Err() == nil && (err != nil || code != 204) {
					b.Errorf("idle claim: %d %v", code, err)
					return
				}
			}
		}(r[0], r[1])
	}
	defer func() { cancel(); wg.Wait() }()
	xacts := func() float64 { return xactCount(db) }
	time.Sleep(5 * time.Second) // every poll is open
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu0, x0, t0 := s.cpuTime(b), xacts(), time.Now()
		time.Sleep(window)
		cpu1, x1, el := s.cpuTime(b), xacts(), time.Since(t0)
		core := float64(cpu1-cpu0) / float64(el)
		rss, peak := s.rssMB(b)
		// Postgres flushes a session's counters at most once a second; the
		// window is long enough for that not to matter.
		qps := (x1 - x0) / el.Seconds()
		fmt.Printf("idle-runners: %d long-polling runners for %v: server CPU %.2f%% of a core (%.2f× the 5%% limit), RSS %.0f MB (peak %.0f; %.2f× the 150 MB limit), Postgres %.1f transactions/s\n",
			n, el.Round(time.Second), 100*core, core/0.05, rss, peak, rss/150, qps)
		b.ReportMetric(100*core, "cpu-%")
		b.ReportMetric(rss, "rss-MB")
		b.ReportMetric(qps, "pg-xact/s")
	}
	b.ReportMetric(0, "ns/op")
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// xactCount is how many transactions Postgres has run in db's database.
// A session's counters reach the view at most once a second, so it is
// read after a pause.
func xactCount(db *store.DB) float64 {
	time.Sleep(1100 * time.Millisecond)
	var v float64
	_ = db.RawExec(context.Background(), "SELECT pg_stat_clear_snapshot()")
	_ = db.RawScan(context.Background(), &v, "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()")
	return v
}
