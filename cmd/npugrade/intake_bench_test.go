package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"  // the driver under the store's SQLite, for the raw-insert limit
	_ "github.com/jackc/pgx/v5/stdlib" // to read the learner id pgbench inserts with

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// intakeRun is one measured run: transactions (or submissions) per second
// and latency percentiles.
type intakeRun struct {
	n             int
	rate          float64
	p50, p99, max time.Duration
}

func (r intakeRun) String() string {
	return fmt.Sprintf("%7.0f/s  p50 %6.1f ms  p99 %6.1f ms", r.rate, ms(r.p50), ms(r.p99))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// intakeN is how many submissions each intake run posts
// (NPUGRADE_BENCH_INTAKE_N, default 2000).
func intakeN() int {
	if n, err := strconv.Atoi(os.Getenv("NPUGRADE_BENCH_INTAKE_N")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// BenchmarkIntakeVsDatabase is the `intake` benchmark of make bench:
// POST /api/v1/submissions of a ~100 KB ch1 notebook (every one distinct)
// against a server with no runner, at 4 and 16 clients (one learner
// each), side by side with the database alone running the rows intake's
// transaction writes (the upload and the rebuilt notebook as blobs, the
// submission, its job): pgbench on Postgres, the same driver in a Go loop
// on SQLite. It prints submissions/s, p50/p99 and the ratio. Run it with
// -benchtime 1x; -cpuprofile profiles the server (it runs in the test
// process).
func BenchmarkIntakeVsDatabase(b *testing.B) {
	nb := padded(b, 100<<10)
	marker := []byte("填充 padding text")
	if !bytes.Contains(nb, marker) {
		b.Fatal("padded notebook lacks its marker")
	}
	n := intakeN()
	b.Run("postgres", func(b *testing.B) {
		if os.Getenv(storetest.EnvDSN) == "" {
			b.Skipf("%s not set", storetest.EnvDSN)
		}
		pgbench := findPgbench(b)
		for _, clients := range []int{4, 16} {
			dbURL := storetest.URL(b, "postgres")
			srv := intakeServer(b, dbURL, clients, nb, marker, n)
			limit := pgbenchIntake(b, pgbench, dbURL, clients, n, len(nb))
			report("postgres", clients, srv, "pgbench", limit)
		}
	})
	b.Run("sqlite", func(b *testing.B) {
		dbURL := storetest.URL(b, "sqlite")
		srv := intakeServer(b, dbURL, 4, nb, marker, n)
		limit := sqliteIntake(b, dbURL, 4, n, len(nb))
		report("sqlite", 4, srv, "raw inserts (same driver)", limit)
	})
}

func report(dialect string, clients int, srv intakeRun, what string, limit intakeRun) {
	// Printed, not logged: a parent benchmark's log is not shown.
	fmt.Printf("intake %s, %2d clients: server %s | %s %s | ratio %.2f×\n",
		dialect, clients, srv, what, limit, srv.rate/limit.rate)
}

// intakeServer starts a server on dbURL, adds one learner per client and
// posts n distinct notebooks over `clients` connections.
func intakeServer(b *testing.B, dbURL string, clients int, nb, marker []byte, n int) intakeRun {
	tokens := make([]string, clients)
	for i := range tokens {
		tokens[i] = addUserTB(b, dbURL, fmt.Sprintf("bench%02d", i), "learner")
	}
	url, stop := startServerDirect(b, dbURL, "--local-runner", "0", "--upload-limit", "0")
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: time.Minute}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				// Each upload is distinct, as learners' are: no blob is
				// deduplicated away.
				body := bytes.Replace(nb, marker, []byte(fmt.Sprintf("%-18d", i)), 1)
				t0 := time.Now()
				if code := postNotebook(client, url, tokens[c], body); code != http.StatusAccepted {
					failed.Add(1)
					continue
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if f := failed.Load(); f > 0 {
		b.Errorf("%d of %d uploads failed", f, n)
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return intakeRun{n: len(all), rate: float64(len(all)) / el.Seconds(), p50: percentile(all, 0.5), p99: percentile(all, 0.99)}
}

func postNotebook(client *http.Client, url, token string, nb []byte) int {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", "ch1")
	fw, _ := mw.CreateFormFile("notebook", "answer.ipynb")
	_, _ = fw.Write(nb)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// startServerDirect starts `npugrade serve` in this process and returns
// its own URL: the benchmarks talk to it without the OpenAPI-checking
// proxy the tests put in between, whose work would be counted as the
// server's.
func startServerDirect(b *testing.B, dbURL string, extra ...string) (string, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dbURL,
		"--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers"),
		"--log-level", "warn"}, extra...)
	go func() {
		done <- run(ctx, args, pw, os.Stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		b.Fatalf("server did not start: %v (exit %d)", err, <-done)
	}
	go io.Copy(io.Discard, pr)
	return strings.Fields(strings.TrimPrefix(line, "npugrade serving on "))[0], func() {
		cancel()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			b.Error("serve did not stop")
		}
	}
}

func findPgbench(b *testing.B) string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	paths, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(paths) == 0 {
		b.Skip("pgbench not found (Debian: postgresql-contrib / postgresql-client)")
	}
	return paths[len(paths)-1]
}

// pgbenchScript is intake's transaction in SQL: the upload and the
// rebuilt notebook (distinct, size bytes each, made by the server from
// the transaction's random number), the submission, its queued job.
const pgbenchScript = `\set r random(1, 1000000000000)
BEGIN;
INSERT INTO blobs (sha256, size, data, created_at) VALUES (md5(:r || 'u') || md5(:r || 'U'), :size, convert_to(repeat(md5(:r || 'u'), :size / 32), 'UTF8'), now()) ON CONFLICT DO NOTHING;
INSERT INTO blobs (sha256, size, data, created_at) VALUES (md5(:r || 'p') || md5(:r || 'P'), :size, convert_to(repeat(md5(:r || 'p'), :size / 32), 'UTF8'), now()) ON CONFLICT DO NOTHING;
INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, integrity, created_at) VALUES ('pgb' || :client_id || '-' || :r, :uid, 'ch1', 'bench', md5(:r || 'u') || md5(:r || 'U'), 'queued', '{}', now());
INSERT INTO jobs (submission_id, kind, exercise_id, state, requires, max_attempts, payload_sha256, not_before, created_at, updated_at) VALUES ('pgb' || :client_id || '-' || :r, 'grade', 'ch1', 'queued', '{}', 3, md5(:r || 'p') || md5(:r || 'P'), now(), now(), now()) RETURNING id;
COMMIT;
`

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbenchIntake runs pgbenchScript n times over clients connections
// (prepared statements) on the database of dbURL and reads each
// transaction's latency from pgbench's log.
func pgbenchIntake(b *testing.B, pgbench, dbURL string, clients, n, size int) intakeRun {
	dir := b.TempDir()
	script := filepath.Join(dir, "intake.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		b.Fatal(err)
	}
	var uid int64
	db := sqlOpen(b, "pgx", dbURL)
	if err := db.QueryRow("SELECT min(id) FROM users").Scan(&uid); err != nil {
		b.Fatal(err)
	}
	db.Close()
	cmd := exec.Command(pgbench, "-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 4)),
		"-t", strconv.Itoa(n/clients), "-f", script, "-D", fmt.Sprintf("size=%d", size), "-D", fmt.Sprintf("uid=%d", uid),
		"--log", "--log-prefix", filepath.Join(dir, "pgb"), dbURL)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench printed no tps:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	logs, _ := filepath.Glob(filepath.Join(dir, "pgb.*"))
	var lat []time.Duration
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 3 {
				us, _ := strconv.ParseInt(f[2], 10, 64)
				lat = append(lat, time.Duration(us)*time.Microsecond)
			}
		}
	}
	return intakeRun{n: len(lat), rate: tps, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99)}
}

func sqlOpen(b *testing.B, driver, dsn string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// sqliteIntake is pgbenchScript in a Go loop over the store's SQLite
// driver (one connection, as the store uses, with its pragmas), shared by
// clients goroutines.
func sqliteIntake(b *testing.B, dbURL string, clients, n, size int) intakeRun {
	path := strings.TrimPrefix(dbURL, "sqlite://")
	db := sqlOpen(b, "sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)")
	defer db.Close()
	db.SetMaxOpenConns(1)
	var uid int64
	if err := db.QueryRow("SELECT min(id) FROM users").Scan(&uid); err != nil {
		b.Fatal(err)
	}
	pad := bytes.Repeat([]byte("0123456789abcdef0123456789abcdef"), size/32)
	one := func(i int64) error {
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		now := time.Now().UTC()
		up, payload := fmt.Sprintf("%064d", i), fmt.Sprintf("p%063d", i)
		data := append([]byte(strconv.FormatInt(i, 10)), pad...)
		for _, sha := range []string{up, payload} {
			if _, err := tx.Exec("INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", sha, len(data), data, now); err != nil {
				return err
			}
		}
		id := fmt.Sprintf("raw-%d", i)
		if _, err := tx.Exec("INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, integrity, created_at) VALUES (?, ?, 'ch1', 'bench', ?, 'queued', '{}', ?)", id, uid, up, now); err != nil {
			return err
		}
		var jobID int64
		if err := tx.QueryRow("INSERT INTO jobs (submission_id, kind, exercise_id, state, requires, max_attempts, payload_sha256, not_before, created_at, updated_at) VALUES (?, 'grade', 'ch1', 'queued', '{}', 3, ?, ?, ?, ?) RETURNING id", id, payload, now, now, now).Scan(&jobID); err != nil {
			return err
		}
		return tx.Commit()
	}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				t0 := time.Now()
				if err := one(i); err != nil {
					b.Errorf("raw insert: %v", err)
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return intakeRun{n: len(all), rate: float64(len(all)) / el.Seconds(), p50: percentile(all, 0.5), p99: percentile(all, 0.99)}
}
