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
// statement at 64 clients on the same table, in the same run, on the
// server's default flags (NPUGRADE_BENCH_LEASE_TTL passes another
// --lease-ttl; one shorter than a phase lets the old-style client's
// leases, never heartbeated, expire and come back, and has the fleet
// heartbeat thousands of held leases). Two clients claim in turn:
//
//   - the runner-like fleet (bench_fleet_test.go): 64 runners in a
//     process of their own that register inside the measured window,
//     claim with the default long poll and heartbeat every lease they
//     hold every third of the lease TTL, as `npugrade runner` does;
//     measured against pgbench of the claim statement prepared, as the
//     server's pool runs it;
//   - the old-style client, for continuity: the claims alone from this
//     process, registered before the window, against pgbench in simple
//     mode (which plans the statement each time and so runs it slower
//     than the server does).
//
// Targets (runner-like): claims/s at least 0.7× pgbench's tx/s, p99 at
// most 2× pgbench's p99, and no job leased twice.
func BenchmarkClaim(b *testing.B) {
	if os.Getenv(storetest.EnvDSN) == "" || pgbenchPath() == "" {
		b.Skip("needs Postgres (NPUGRADE_TEST_POSTGRES_DSN) and pgbench")
	}
	const queued, claimers = 10000, 64
	dbURL := storetest.URL(b, "postgres")
	addUserTB(b, dbURL, "learner", "learner")
	token := addUserTB(b, dbURL, "runners", "runner")
	var extra []string
	if ttl := os.Getenv("NPUGRADE_BENCH_LEASE_TTL"); ttl != "" {
		extra = append(extra, "--lease-ttl", ttl)
	}
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
	us := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	ms := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / 1000 / float64(max(n, 1)) }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		requeueAll(b, db)
		pgw := watchClaimBackends(db)
		tps, base, pgbenchCPU := pgbenchClaims(b, dbURL, "", "simple", claimers, queued/claimers)
		pgOfPgbench := pgw()
		requeueAll(b, db)
		pgw = watchClaimBackends(db)
		prepTPS, prep, _ := pgbenchClaims(b, dbURL, "", "prepared", claimers, queued/claimers)
		pgOfPrep := pgw()
		requeueAll(b, db)
		// The server's whole statement under pgbench, prepared as the
		// server's pool runs it: how much of the gap is the statement's
		// own work (authentication, runner check), and how much HTTP and
		// the processes around it.
		pgw = watchClaimBackends(db)
		fullTPS, full, _ := pgbenchClaims(b, dbURL, claimAsScript(token, runners), "prepared", claimers, queued/claimers)
		pgOfFull := pgw()
		requeueAll(b, db)

		// Old style: this process claims, runners registered beforehand.
		cpu0, x0 := s.cpuTime(b), xactCount(db)
		client0, pgw := selfCPU(), watchClaimBackends(db)
		rate, lat, dups := httpClaims(b, c, s.url, runners)
		clientCPU, pgOfHTTP := selfCPU()-client0, pgw()
		cpu, xacts := s.cpuTime(b)-cpu0, xactCount(db)-x0
		requeueAll(b, db)

		// Runner-like: the fleet process, registration and heartbeats
		// included.
		fcpu0, fx0 := s.cpuTime(b), xactCount(db)
		pgw = watchClaimBackends(db)
		fl := startFleet(b, fleetSpec{Server: s.url, Tokens: []string{token}, Prefix: "fleet", Runners: claimers, Claims: queued})
		res, fleetCPU := fl.wait(b)
		pgOfFleet := pgw()
		fcpu, fxacts := s.cpuTime(b)-fcpu0, xactCount(db)-fx0
		frate := float64(len(res.Claims)) / res.Elapsed.Seconds()

		bp50, bp99 := percentile(base, 0.5), percentile(base, 0.99)
		pp50, pp99 := percentile(prep, 0.5), percentile(prep, 0.99)
		p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
		f50, f99 := percentile(res.Claims, 0.5), percentile(res.Claims, 0.99)
		fmt.Printf("claim: pgbench of the claim statement: simple %.0f tx/s (p50 %v, p99 %v), prepared %.0f tx/s (p50 %v, p99 %v); the server's whole statement (authentication, runner check, lease), prepared: %.0f tx/s (p50 %v, p99 %v)\n",
			tps, us(bp50), us(bp99), prepTPS, us(pp50), us(pp99), fullTPS, us(percentile(full, 0.5)), us(percentile(full, 0.99)))
		fmt.Printf("claim: %-11s %5d claims by %d runners: %5.0f claims/s, p50 %v, p99 %v: %.2f× pgbench prepared (%.2f× simple), p99 %.2f× pgbench prepared's; %d jobs leased twice\n",
			"runner-like", len(res.Claims), claimers, frate, us(f50), us(f99), frate/prepTPS, frate/tps, float64(f99)/float64(pp99), res.Dups)
		fmt.Printf("claim: %-11s %5d claims by %d runners: %5.0f claims/s, p50 %v, p99 %v: %.2f× pgbench simple (%.2f× prepared), p99 %.2f× pgbench simple's; %d jobs leased twice\n",
			"old-style", len(lat), claimers, rate, us(p50), us(p99), rate/tps, rate/prepTPS, float64(p99)/float64(bp99), dups)
		fmt.Printf("claim: runner-like: registration of %d runners %v, %d heartbeats (every %v) while the leases ran\n",
			claimers, res.Registered.Round(time.Millisecond), res.Heartbeats, res.HeartbeatP)
		fmt.Printf("claim: targets (runner-like): throughput %.2f× pgbench prepared (≥ 0.7), p99 %.2f× (≤ 2), %d leased twice (0)\n",
			frate/prepTPS, float64(f99)/float64(pp99), res.Dups)
		// Where the gap to pgbench goes: the server's own CPU and the
		// statements it runs per claim (pgbench runs one), the clients'
		// CPU (the fleet decodes each lease, notebook included) and
		// Postgres's (this database's backends).
		n, fn := len(lat), len(res.Claims)
		fmt.Printf("claim: server CPU per claim: runner-like %.3f ms, old-style %.3f ms; Postgres transactions per claim: %.2f, %.2f\n",
			ms(fcpu, fn), ms(cpu, n), fxacts/float64(max(fn, 1)), xacts/float64(max(n, 1)))
		fmt.Printf("claim: client CPU per claim: runner-like %.3f ms, old-style %.3f ms, pgbench %.3f ms per transaction\n",
			ms(fleetCPU, fn), ms(clientCPU, n), ms(pgbenchCPU, len(base)))
		fmt.Printf("claim: Postgres CPU per claim: runner-like %.3f ms, old-style %.3f ms; per pgbench transaction: simple %.3f ms, prepared %.3f ms, the server's statement %.3f ms\n",
			ms(pgOfFleet, fn), ms(pgOfHTTP, n), ms(pgOfPgbench, len(base)), ms(pgOfPrep, len(prep)), ms(pgOfFull, len(full)))
		b.ReportMetric(frate, "claims/s")
		b.ReportMetric(frate/prepTPS, "x-pgbench")
		b.ReportMetric(float64(f99)/float64(pp99), "p99-x-pgbench")
		b.ReportMetric(float64(f99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(rate/tps, "old-x-pgbench")
		if dups+res.Dups > 0 {
			b.Errorf("%d jobs were leased twice", dups+res.Dups)
		}
		if len(res.Claims) != queued {
			b.Errorf("the fleet leased %d jobs of %d", len(res.Claims), queued)
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
// queue, on its default flags. Measured over 30 s: the server's CPU
// (share of one core), its RSS, the CPU of this database's Postgres
// backends and the transactions per second it makes Postgres run
// (pg_stat_database). Two fleets in turn, each on a server of its own:
//
//   - runner-like (bench_fleet_test.go): 1,000 `npugrade runner` loops in
//     a process of their own; the window opens before they register, so
//     their registrations count (an idle runner holds no lease, so it
//     sends no heartbeat);
//   - old-style, for continuity: this process's bare long polls, the
//     runners registered before the window.
//
// Targets (runner-like): under 5 % of a core, under 150 MB.
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
	db, err := store.Connect(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var extra []string
	if prof := os.Getenv("NPUGRADE_BENCH_CPUPROFILE"); prof != "" {
		extra = append(extra, "--cpu-profile", prof)
	}
	type idle struct {
		core, pgCore, rss, peak, xps float64
		el                           time.Duration
	}
	// measure reads the server's and Postgres's use over window.
	measure := func(s *benchServer) idle {
		cpu0, x0, t0 := s.cpuTime(b), xactCount(db), time.Now()
		pgw := watchClaimBackends(db)
		time.Sleep(window - time.Since(t0))
		pg := pgw()
		cpu1, x1, el := s.cpuTime(b), xactCount(db), time.Since(t0)
		var r idle
		r.el, r.core, r.pgCore = el, float64(cpu1-cpu0)/float64(el), float64(pg)/float64(el)
		r.rss, r.peak = s.rssMB(b)
		// Postgres flushes a session's counters at most once a second; the
		// window is long enough for that not to matter.
		r.xps = (x1 - x0) / el.Seconds()
		return r
	}
	show := func(what string, r idle) {
		fmt.Printf("idle-runners: %-11s %d runners for %v: server CPU %.2f%% of a core (%.2f× the 5%% limit), Postgres backends %.2f%%, RSS %.0f MB (peak %.0f; %.2f× the 150 MB limit), Postgres %.1f transactions/s\n",
			what, n, r.el.Round(time.Second), 100*r.core, r.core/0.05, 100*r.pgCore, r.rss, r.peak, r.rss/150, r.xps)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Runner-like: the window opens as the fleet starts registering.
		s := startBenchServer(b, dbURL, extra...)
		fl := startFleet(b, fleetSpec{Server: s.url, Tokens: tokens, Prefix: fmt.Sprintf("idle%d", i), Runners: n, IdleFor: window + 5*time.Second})
		rl := measure(s)
		res, _ := fl.wait(b)
		_ = s.cmd.Process.Signal(os.Interrupt)
		_ = s.cmd.Wait()

		old := idleOldStyle(b, dbURL, tokens, n, measure)
		show("runner-like", rl)
		show("old-style", old)
		fmt.Printf("idle-runners: runner-like: registration of %d runners took %v (inside the window)\n", n, res.Registered.Round(time.Millisecond))
		b.ReportMetric(100*rl.core, "cpu-%")
		b.ReportMetric(100*rl.pgCore, "pg-cpu-%")
		b.ReportMetric(rl.rss, "rss-MB")
		b.ReportMetric(rl.xps, "pg-xact/s")
		b.ReportMetric(100*old.core, "old-cpu-%")
	}
	b.ReportMetric(0, "ns/op")
}

// idleOldStyle is the idle benchmark as it ran before the runner-like
// fleet: n runners registered from this process, then bare long polls
// from it, measured once every poll is open.
func idleOldStyle[T any](b *testing.B, dbURL string, tokens []string, n int, measure func(*benchServer) T) T {
	s := startBenchServer(b, dbURL)
	defer func() { _ = s.cmd.Process.Signal(os.Interrupt); _ = s.cmd.Wait() }()
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
	time.Sleep(5 * time.Second) // every poll is open
	return measure(s)
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
