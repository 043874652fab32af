package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// dashboardSeed fills a Postgres database with 5,000 learners and 500,000
// submissions of 5 exercises spread over 60 days (98.5 % graded, 1 %
// failed, 0.5 % still queued), each with its job, in a few statements.
// The learner named first (created before the seed) is among them.
var dashboardSeed = []string{
	`INSERT INTO users (name, role, created_at) SELECT 'learner' || lpad(g::text, 5, '0'), 'learner', now() FROM generate_series(2, 5000) g`,
	`INSERT INTO blobs (sha256, size, data, created_at) VALUES (repeat('0', 64), 2, '\x7b7d', now())`,
	`INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, score, max_score, created_at, started_at, graded_at)
	 SELECT lpad(to_hex(g), 11, '0') || md5(g::text), l.first + g % 5000, 'ch' || (1 + g / 5000 % 5), 'v1', repeat('0', 64),
	   CASE WHEN g % 100 = 0 THEN 'failed' WHEN g % 200 = 1 THEN 'queued' ELSE 'graded' END,
	   CASE WHEN g % 100 = 0 OR g % 200 = 1 THEN 0 ELSE (g::bigint * 7919 % 101) / 10.0 END, 10,
	   t.at, CASE WHEN g % 200 = 1 THEN NULL ELSE t.at + interval '1 second' END,
	   CASE WHEN g % 100 = 0 OR g % 200 = 1 THEN NULL ELSE t.at + make_interval(secs => 3 + g % 7) END
	 FROM generate_series(1, 500000) g,
	   (SELECT min(id) AS first FROM users WHERE role = 'learner') l,
	   LATERAL (SELECT now() - make_interval(secs => (500000 - g) * 10.368) AS at) t`,
	`INSERT INTO jobs (submission_id, kind, exercise_id, state, max_attempts, attempt, payload_sha256, not_before, created_at, updated_at)
	 SELECT id, 'grade', exercise_id, CASE status WHEN 'graded' THEN 'succeeded' WHEN 'failed' THEN 'failed' ELSE 'queued' END,
	   3, 1, repeat('0', 64), created_at, created_at, created_at FROM submissions`,
	`VACUUM ANALYZE`,
}

// gradebookCopySQL is the store's gradebook query (internal/store/
// gradebook.go, every learner, every exercise) with its parameters
// written in, for COPY.
const gradebookCopySQL = `SELECT u.id, u.name, s.id, s.exercise_id, s.score, s.max_score, s.graded_at FROM users u
	LEFT JOIN submissions s ON s.user_id = u.id AND s.status = 'graded' WHERE u.role = 'learner'
	ORDER BY u.name, u.id, s.exercise_id, s.created_at, s.id`

// BenchmarkDashboard is the `dashboard` benchmark of make bench: at
// 500,000 submissions (5,000 learners, 5 exercises, Postgres) it prints
// /dashboard p50/p95, the gradebook page's p50/p95, a learner's own
// listing, and the gradebook CSV's time against COPY of its query (the
// ratio is COPY's time over the CSV's: 1 is as fast as COPY). Run it
// with -benchtime 1x.
func BenchmarkDashboard(b *testing.B) {
	if os.Getenv(storetest.EnvDSN) == "" {
		b.Skipf("%s not set", storetest.EnvDSN)
	}
	ctx := context.Background()
	dbURL := storetest.URL(b, "postgres")
	learner := addUserTB(b, dbURL, "learner00001", "learner")
	db, err := store.Open(ctx, dbURL, nil)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	for _, q := range dashboardSeed {
		if err := db.RawExec(ctx, q); err != nil {
			b.Fatalf("seed: %v\n%s", err, q)
		}
	}
	db.Close()
	teacher := addUserTB(b, dbURL, "teacher", "instructor")
	fmt.Printf("dashboard: seeded 500,000 submissions and their jobs in %.1f s\n", time.Since(t0).Seconds())

	srvURL, stop := startServerDirect(b, dbURL, "--local-runner", "0")
	defer stop()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 2 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	signIn(b, browser, srvURL, teacher)

	page := func(path, token string, n int) (p50, p95 time.Duration) {
		var lat []time.Duration
		for i := 0; i < n+2; i++ {
			req, _ := http.NewRequest(http.MethodGet, srvURL+path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			start := time.Now()
			resp, err := browser.Do(req)
			if err != nil {
				b.Fatalf("GET %s: %v", path, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("GET %s: %d", path, resp.StatusCode)
			}
			if i >= 2 { // two to warm up
				lat = append(lat, time.Since(start))
			}
		}
		return percentile(lat, 0.5), percentile(lat, 0.95)
	}
	p50, p95 := page("/dashboard", "", 40)
	fmt.Printf("dashboard: /dashboard p50 %.1f ms, p95 %.1f ms (target p95 <= 150 ms)\n", ms(p50), ms(p95))
	p50, p95 = page("/dashboard/gradebook", "", 20)
	fmt.Printf("dashboard: /dashboard/gradebook p50 %.1f ms, p95 %.1f ms (target p95 <= 300 ms)\n", ms(p50), ms(p95))
	p50, p95 = page("/api/v1/submissions", learner, 40)
	fmt.Printf("dashboard: a learner's own listing p50 %.1f ms, p95 %.1f ms\n", ms(p50), ms(p95))
	// /metrics scrapes count the queue the same way the dashboard does.

	csvTime, copyTime := time.Duration(1<<62), time.Duration(1<<62)
	var csvBytes, copyBytes int64
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	for i := 0; i < 3; i++ { // the best of three each, interleaved
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, srvURL+"/api/v1/gradebook.csv", nil)
		req.Header.Set("Authorization", "Bearer "+teacher)
		resp, err := browser.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		csvBytes, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("gradebook.csv: %d", resp.StatusCode)
		}
		csvTime = min(csvTime, time.Since(start))
		start, copyBytes = time.Now(), 0
		tag, err := conn.PgConn().CopyTo(ctx, countingDiscard{&copyBytes}, "COPY ("+gradebookCopySQL+") TO STDOUT WITH (FORMAT csv)")
		if err != nil {
			b.Fatal(err)
		}
		copyTime = min(copyTime, time.Since(start))
		if i == 0 {
			fmt.Printf("dashboard: gradebook query rows %d\n", tag.RowsAffected())
		}
	}
	fmt.Printf("dashboard: gradebook CSV %.0f ms (%d bytes) vs COPY of its query %.0f ms: ratio %.2f× (target >= 0.8)\n",
		ms(csvTime), csvBytes, ms(copyTime), copyTime.Seconds()/csvTime.Seconds())
}

type countingDiscard struct{ n *int64 }

func (c countingDiscard) Write(p []byte) (int, error) { *c.n += int64(len(p)); return len(p), nil }

// signIn opens a web session for token in client's cookie jar.
func signIn(b *testing.B, client *http.Client, srvURL, token string) {
	req, _ := http.NewRequest(http.MethodPost, srvURL+"/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srvURL)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("sign in: %d", resp.StatusCode)
	}
}
