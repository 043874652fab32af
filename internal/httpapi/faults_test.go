package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

type faultEnv struct {
	db    *store.DB
	url   string
	dbURL string
	logs  *syncBuf
}

func newFaultEnv(t *testing.T, dialect string) *faultEnv {
	t.Helper()
	dbURL := storetest.URL(t, dialect)
	db := storetest.OpenURL(t, dbURL)
	cat := projectCatalog(t)
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	q := jobs.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := compose.Server(compose.Config{DB: db, Queue: q, Catalog: cat, Log: log})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &faultEnv{db: db, url: ts.URL, dbURL: dbURL, logs: logs}
}

func (e *faultEnv) get(t *testing.T, path, token, cookie string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.url+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if cookie != "" {
		req.Header.Set("Cookie", "npugrade_session="+cookie)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// expectUnavailable: the API answers 503 problems with Retry-After, the
// pages a 503 page, /readyz 503, and ten identical failures log one line
// (none when the same fault was logged within the interval).
func (e *faultEnv) expectUnavailable(t *testing.T, token, when string, wantLines int) {
	t.Helper()
	before := strings.Count(e.logs.String(), "database fault")
	for i := 0; i < 10; i++ {
		st, hdr, body := e.get(t, "/api/v1/submissions", token, "")
		if st != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !strings.Contains(body, "unavailable") {
			t.Fatalf("%s: API %d (Retry-After %q) %s, want 503\nlog: %s", when, st, hdr.Get("Retry-After"), body, e.logs.String())
		}
	}
	if st, _, body := e.get(t, "/exercises", "", "some-session"); st != http.StatusServiceUnavailable || !strings.Contains(body, "<html") {
		t.Errorf("%s: page %d, want a 503 page: %.200s", when, st, body)
	}
	if st, _, _ := e.get(t, "/readyz", "", ""); st != http.StatusServiceUnavailable {
		t.Errorf("%s: /readyz %d, want 503", when, st)
	}
	if n := strings.Count(e.logs.String(), "database fault") - before; n != wantLines {
		t.Errorf("%s: %d log lines for 10 identical failures, want %d", when, n, wantLines)
	}
}

// TestDatabaseUnavailable: a database that is gone (the pool closed; on
// Postgres also every connection killed and new ones refused) gives 503
// with Retry-After, never 500; Postgres recovers when it comes back.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t, d)
			_, tok, err := e.db.CreateUser(context.Background(), "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			if d == "postgres" {
				u, _ := url.Parse(e.dbURL)
				name := strings.TrimPrefix(u.Path, "/")
				admin, err := store.Connect(context.Background(), os.Getenv(storetest.EnvDSN))
				if err != nil {
					t.Fatal(err)
				}
				defer admin.Close()
				stop := func(allow bool) {
					t.Helper()
					if err := admin.RawExec(context.Background(), "ALTER DATABASE "+name+" ALLOW_CONNECTIONS "+map[bool]string{true: "true", false: "false"}[allow]); err != nil {
						t.Fatal(err)
					}
					if !allow {
						_ = admin.RawExec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ?", name)
					}
				}
				stop(false)
				e.expectUnavailable(t, tok, "postgres refusing connections", 1)
				stop(true)
				if st, _, body := e.get(t, "/api/v1/submissions", tok, ""); st != http.StatusOK {
					t.Fatalf("after postgres came back: %d %s", st, body)
				}
			}
			e.db.Close()
			e.expectUnavailable(t, tok, "database closed", map[string]int{"sqlite": 1, "postgres": 0}[d])
		})
	}
}

// TestDatabaseStorageFull: a write the database refuses for lack of
// storage answers 507 with the reason, and /readyz turns 503.
func TestDatabaseStorageFull(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newFaultEnv(t, d)
			_, tok, err := e.db.CreateUser(context.Background(), "ada", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			if st, _, _ := e.get(t, "/readyz", "", ""); st != http.StatusOK {
				t.Fatalf("/readyz before: %d", st)
			}
			if d == "sqlite" {
				// The file may not grow by a single page.
				var pages int
				if err := e.db.RawScan(context.Background(), &pages, "PRAGMA page_count"); err != nil {
					t.Fatal(err)
				}
				if err := e.db.RawExec(context.Background(), fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
					t.Fatal(err)
				}
			} else {
				// The error Postgres raises when its disk is full (SQLSTATE 53100).
				for _, s := range []string{
					`CREATE FUNCTION full_disk() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$ LANGUAGE plpgsql`,
					`CREATE TRIGGER full_disk BEFORE INSERT ON blobs FOR EACH ROW EXECUTE FUNCTION full_disk()`,
				} {
					if err := e.db.RawExec(context.Background(), s); err != nil {
						t.Fatal(err)
					}
				}
			}
			nb := starterOf(t, "ch1")
			var doc map[string]any
			if err := json.Unmarshal(nb, &doc); err != nil {
				t.Fatal(err)
			}
			doc["metadata"].(map[string]any)["pad"] = strings.Repeat("p", 64<<10) // needs new pages
			nb, _ = json.Marshal(doc)
			body, ct := multipartBody(nb)
			req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(b), "cannot store") {
				t.Fatalf("upload on a full disk: %d %s, want 507", resp.StatusCode, b)
			}
			if st, _, _ := e.get(t, "/readyz", "", ""); st != http.StatusServiceUnavailable {
				t.Errorf("/readyz after a failed write: %d, want 503", st)
			}
		})
	}
}
