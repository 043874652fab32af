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
	// CPU per transaction where measured (0: not): of the Postgres
	// backends serving it, and of this process (server and client).
	pgCPU, selfCPU, gcCPU time.Duration
	blobBytes             int64 // growth of the blobs table (with TOAST) per transaction
}

func (r intakeRun) String() string {
	s := fmt.Sprintf("%7.0f/s  p50 %6.1f ms  p99 %6.1f ms", r.rate, ms(r.p50), ms(r.p99))
	if r.selfCPU > 0 {
		s += fmt.Sprintf("  process CPU %.2f ms/tx (GC %.2f)", ms(r.selfCPU), ms(r.gcCPU))
	}
	if r.pgCPU > 0 {
		s += fmt.Sprintf("  postgres CPU %.2f ms/tx", ms(r.pgCPU))
	}
	if r.blobBytes > 0 {
		s += fmt.Sprintf("  blobs %.1f KB/tx", float64(r.blobBytes)/1024)
	}
	return s
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
// on SQLite. It prints submissions/s, p50/p99 and the ratio, and on
// Postgres the floor under intake (intakeFloor) against both. Run it with
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
			same := pgbenchIntake(b, pgbench, dbURL, clients, n, loadServerNotebooks(b, dbURL))
			report("postgres", clients, srv, "pgbench (the server's bytes)", same)
			repeat := pgbenchIntake(b, pgbench, dbURL, clients, n, pgbenchScript, "-D", fmt.Sprintf("size=%d", len(nb)))
			report("postgres", clients, srv, "pgbench (md5 repeats, the old baseline)", repeat)
			// After pgbench, which copies the server's own rows.
			floor := intakeFloor(b, dbURL, clients, nb, marker, n)
			report("postgres", clients, floor, "pgbench (the floor: HTTP, hashes, the statement)", same)
			report("postgres", clients, srv, "the floor", floor)
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
	// serve's GC settings as the npugrade process has them by default.
	url, stop := startServerDirect(b, dbURL, "--local-runner", "0", "--upload-limit", "0", "--max-active", "0",
		"--gc-percent", strconv.Itoa(defaultGCPercent), "--gc-memory-limit", defaultMemoryLimit)
	defer stop()
	return postUploads(b, dbURL, url, tokens, nb, marker, n, 0)
}

// uploadBody is the multipart body of POST /api/v1/submissions with the
// notebook cut at its marker, built once: each client sends its own copy
// of the whole form with the marker replaced in place by a distinct
// string of its length, so the client copies no notebook per request and
// leaves the shared CPUs to the server. The body is still a valid form
// carrying a distinct, valid notebook.
type uploadBody struct {
	contentType string
	form        []byte // the whole form, the marker included
	at          int    // where the marker starts
	marker      int    // its length
}

func newUploadBody(nb, marker []byte) uploadBody {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", "ch1")
	fw, _ := mw.CreateFormFile("notebook", "answer.ipynb")
	_, _ = fw.Write(nb)
	_ = mw.Close()
	return uploadBody{contentType: mw.FormDataContentType(), form: body.Bytes(), at: bytes.Index(body.Bytes(), marker), marker: len(marker)}
}

// forClient is a copy of u for one client's requests, one at a time.
func (u uploadBody) forClient() uploadBody {
	u.form = bytes.Clone(u.form)
	return u
}

// post sends the form with the marker replaced by distinct, as long as
// the marker. The body is a bytes.Reader: net/http buffers the headers
// and the body of such a request together and writes them at once;
// another reader had the headers flushed first and the body copied
// through a 32 KB buffer of its own, five writes and an allocation.
func (u uploadBody) post(client *http.Client, url, token, distinct string) int {
	if len(distinct) != u.marker {
		panic("a replacement of the marker's length is needed")
	}
	copy(u.form[u.at:], distinct)
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/submissions", bytes.NewReader(u.form))
	req.Header.Set("Content-Type", u.contentType)
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

// pgbenchScript is intake's transaction in SQL as the benchmark first
// wrote it: the upload and the rebuilt notebook (distinct, size bytes
// each, made by the server from the transaction's random number), the
// submission, its queued job. Its blobs are one md5 repeated, which
// Postgres compresses to almost nothing far more cheaply than a
// notebook; pgbenchSameBytes is the like-for-like baseline, and this one
// is still printed for continuity.
const pgbenchScript = `\set r random(1, 1000000000000)
BEGIN;
INSERT INTO blobs (sha256, size, data, created_at) VALUES (md5(:r || 'u') || md5(:r || 'U'), :size, convert_to(repeat(md5(:r || 'u'), :size / 32), 'UTF8'), now()) ON CONFLICT DO NOTHING;
INSERT INTO blobs (sha256, size, data, created_at) VALUES (md5(:r || 'p') || md5(:r || 'P'), :size, convert_to(repeat(md5(:r || 'p'), :size / 32), 'UTF8'), now()) ON CONFLICT DO NOTHING;
INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, integrity, created_at) VALUES ('pgb' || :client_id || '-' || :r, :uid, 'ch1', 'bench', md5(:r || 'u') || md5(:r || 'U'), 'queued', '{}', now());
INSERT INTO jobs (submission_id, kind, exercise_id, state, requires, max_attempts, payload_sha256, not_before, created_at, updated_at) VALUES ('pgb' || :client_id || '-' || :r, 'grade', 'ch1', 'queued', '{}', 3, md5(:r || 'p') || md5(:r || 'P'), now(), now(), now()) RETURNING id;
COMMIT;
`

// pgbenchSameBytes is intake's transaction with the very bytes the server
// stored (loadServerNotebooks): its upload, made distinct per transaction
// by appending the random number, then compressed and TOASTed by
// Postgres as the server's are; and its rebuilt notebook. The benchmark's
// uploads differ only in a padding cell that the rebuild drops, so the
// server's rebuilt notebooks are nearly all one blob, which its insert
// skips (ON CONFLICT DO NOTHING) after sending it; :payload_insert does
// the same, or inserts a distinct one per transaction where the server's
// were distinct.
const pgbenchSameBytes = `\set r random(1, 1000000000000)
BEGIN;
INSERT INTO blobs (sha256, size, data, created_at) SELECT md5(:r || 'u') || md5(:r || 'U'), octet_length(d), d, now() FROM (SELECT upload || convert_to(:r::text, 'UTF8') AS d FROM bench_notebooks) x ON CONFLICT DO NOTHING;
%s;
INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, integrity, created_at) VALUES ('pgb' || :client_id || '-' || :r, :uid, 'ch1', 'bench', md5(:r || 'u') || md5(:r || 'U'), 'queued', '{}', now());
INSERT INTO jobs (submission_id, kind, exercise_id, state, requires, max_attempts, payload_sha256, not_before, created_at, updated_at) VALUES ('pgb' || :client_id || '-' || :r, 'grade', 'ch1', 'queued', '{}', 3, %s, now(), now(), now()) RETURNING id;
COMMIT;
`

// loadServerNotebooks copies one upload the server stored and its most
// common rebuilt notebook into a one-row table bench_notebooks,
// uncompressed (STORAGE EXTERNAL: reading them back costs no
// decompression), and returns pgbenchSameBytes for them.
func loadServerNotebooks(b *testing.B, dbURL string) string {
	db := sqlOpen(b, "pgx", dbURL)
	defer db.Close()
	var upload, payload []byte
	var paySHA string
	var payloads, jobs int
	if err := db.QueryRow(`SELECT payload_sha256, (SELECT count(DISTINCT payload_sha256) FROM jobs), (SELECT count(*) FROM jobs)
		FROM jobs GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`).Scan(&paySHA, &payloads, &jobs); err != nil {
		b.Fatalf("read the stored jobs: %v", err)
	}
	if err := db.QueryRow(`SELECT u.data, p.data FROM submissions s JOIN blobs u ON u.sha256 = s.notebook_sha256, blobs p
		WHERE p.sha256 = $1 LIMIT 1`, paySHA).Scan(&upload, &payload); err != nil {
		b.Fatalf("read a stored notebook: %v", err)
	}
	for _, q := range []string{"CREATE TABLE bench_notebooks (upload BYTEA NOT NULL, payload BYTEA NOT NULL)",
		"ALTER TABLE bench_notebooks ALTER upload SET STORAGE EXTERNAL, ALTER payload SET STORAGE EXTERNAL"} {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.Exec("INSERT INTO bench_notebooks VALUES ($1, $2)", upload, payload); err != nil {
		b.Fatalf("load bench_notebooks: %v", err)
	}
	if payloads*2 > jobs { // mostly distinct: so are the baseline's
		return fmt.Sprintf(pgbenchSameBytes, `INSERT INTO blobs (sha256, size, data, created_at) SELECT md5(:r || 'p') || md5(:r || 'P'), octet_length(d), d, now() FROM (SELECT payload || convert_to(:r::text, 'UTF8') AS d FROM bench_notebooks) x ON CONFLICT DO NOTHING`,
			`md5(:r || 'p') || md5(:r || 'P')`)
	}
	return fmt.Sprintf(pgbenchSameBytes, fmt.Sprintf(`INSERT INTO blobs (sha256, size, data, created_at) SELECT '%s', octet_length(payload), payload, now() FROM bench_notebooks ON CONFLICT DO NOTHING`, paySHA),
		"'"+paySHA+"'")
}

// blobsSize is the blobs table's size with its TOAST table and indexes
// (0 on SQLite).
func blobsSize(b *testing.B, dbURL string) int64 {
	if !strings.HasPrefix(dbURL, "postgres") {
		return 0
	}
	db := sqlOpen(b, "pgx", dbURL)
	defer db.Close()
	var n int64
	if err := db.QueryRow("SELECT pg_total_relation_size('blobs')").Scan(&n); err != nil {
		b.Fatalf("size of blobs: %v", err)
	}
	return n
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbenchIntake runs pgbenchScript n times over clients connections
// (prepared statements) on the database of dbURL and reads each
// transaction's latency from pgbench's log.
func pgbenchIntake(b *testing.B, pgbench, dbURL string, clients, n int, pgbenchScript string, defs ...string) intakeRun {
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
	args := append([]string{"-n", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 4)),
		"-t", strconv.Itoa(n / clients), "-f", script, "-D", fmt.Sprintf("uid=%d", uid),
		"--log", "--log-prefix", filepath.Join(dir, "pgb")}, defs...)
	cmd := exec.Command(pgbench, append(args, dbURL)...)
	cmd.Dir = dir
	blobs0 := blobsSize(b, dbURL)
	pg := watchBackends(dbURL)
	out, err := cmd.CombinedOutput()
	pgCPU := pg.Stop()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	done := n / clients * clients
	blobBytes := (blobsSize(b, dbURL) - blobs0) / int64(done)
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
	return intakeRun{n: len(lat), rate: tps, p50: percentile(lat, 0.5), p99: percentile(lat, 0.99),
		pgCPU: pgCPU / time.Duration(done), blobBytes: blobBytes}
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
	var failed atomic.Int64
	all, el := clientLoop(clients, n, func(_ int, i int64) bool {
		if err := one(i); err != nil {
			if failed.Add(1) == 1 {
				b.Errorf("raw insert: %v", err)
			}
			return false
		}
		return true
	})
	return intakeRun{n: len(all), rate: float64(len(all)) / el.Seconds(), p50: percentile(all, 0.5), p99: percentile(all, 0.99)}
}
