package httpapi_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFailedAuthThrottledAndLogged: bad tokens from one address are
// logged (without the token) and, past the limit, the address's bad
// tokens get 429 with Retry-After while a good token still gets in;
// /metrics is not public.
func TestFailedAuthThrottledAndLogged(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			cat := projectCatalog(t)
			var logs syncBuf
			log := slog.New(slog.NewTextHandler(&logs, nil))
			q := jobs.New(db, slog.New(slog.NewTextHandler(io.Discard, nil)))
			srv := compose.Server(compose.Config{DB: db, Queue: q, Catalog: cat, Log: log, Metrics: httpapi.NewMetrics(q),
				Auth: &accounts.Guard{DB: db, Log: log, Failures: 5, Window: time.Minute}})
			ts := httptest.NewServer(srv.Handler())
			defer ts.Close()
			_, good, _ := db.CreateUser(t.Context(), "ada", domain.RoleLearner)
			get := func(path, token string) (int, http.Header) {
				req, _ := http.NewRequest("GET", ts.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode, resp.Header
			}
			if st, _ := get("/metrics", ""); st == http.StatusOK {
				t.Error("/metrics answers anonymous callers")
			}
			if st, _ := get("/api/v1/exercises", good); st != http.StatusOK {
				t.Fatalf("good token: %d", st)
			}
			for i := 0; i < 5; i++ {
				path := "/api/v1/exercises"
				if i%2 == 1 {
					path = "/api/v1/gradebook.csv"
				}
				if st, _ := get(path, "npg_guess_secret_"+string(rune('a'+i))); st != http.StatusUnauthorized {
					t.Fatalf("bad token %d on %s: %d", i, path, st)
				}
			}
			st, hdr := get("/api/v1/exercises", "npg_guess_secret_z")
			if st != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
				t.Errorf("after 5 bad tokens the address's next bad one gets %d (Retry-After %q), want 429", st, hdr.Get("Retry-After"))
			}
			if st, _ := get("/api/v1/exercises", good); st != http.StatusOK {
				t.Errorf("after 5 bad tokens a good token gets %d, want 200", st)
			}
			out := logs.String()
			if !strings.Contains(out, "authentication failed") || strings.Contains(out, "npg_guess_secret") {
				t.Errorf("failed sign-ins not logged, or logged with the token:\n%s", out)
			}
			if n := strings.Count(out, "authentication failed"); n != 1 {
				t.Errorf("%d log lines for 5 failures in one window, want 1 (repeats are summarised)", n)
			}
		})
	}
}

// TestMetricsToken: with a metrics token /metrics on the main handler
// needs it; API tokens do not open it.
func TestMetricsToken(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			metricsToken(t, d)
		})
	}
}

func metricsToken(t *testing.T, dialect string) {
	db := storetest.Open(t, dialect)
	q := jobs.New(db, nil)
	srv := compose.Server(compose.Config{DB: db, Queue: q, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: httpapi.NewMetrics(q)})
	srv.MetricsToken = "m-secret"
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	_, admin, _ := db.CreateUser(t.Context(), "root", domain.RoleAdmin)
	for tok, want := range map[string]int{"": 401, admin: 401, "m-secret": 200} {
		req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/metrics with %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
}
