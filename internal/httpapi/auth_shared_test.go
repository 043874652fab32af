package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestFailedAuthThrottledAcrossServers: two servers on one database, each
// with its own connection pool, count one address's bad tokens together:
// half the limit on each is enough for both to refuse its next bad token
// (429); a good token gets in on both.
func TestFailedAuthThrottledAcrossServers(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			url := storetest.URL(t, d)
			cat := projectCatalog(t)
			var good string
			serve := func() *httptest.Server {
				db := storetest.OpenURL(t, url)
				if good == "" {
					_, good, _ = db.CreateUser(t.Context(), "ada", domain.RoleLearner)
				}
				log := slog.New(slog.NewTextHandler(io.Discard, nil))
				q := jobs.New(db, log)
				srv := compose.Server(compose.Config{DB: db, Queue: q, Catalog: cat, Log: log,
					Auth: &accounts.Guard{DB: db, Log: log, Failures: 6, Window: time.Minute}})
				ts := httptest.NewServer(srv.Handler())
				t.Cleanup(ts.Close)
				return ts
			}
			a, b := serve(), serve()
			get := func(ts *httptest.Server, token string) int {
				req, _ := http.NewRequest("GET", ts.URL+"/api/v1/exercises", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			for i := 0; i < 3; i++ {
				for _, ts := range []*httptest.Server{a, b} {
					if st := get(ts, "npg_guess"); st != http.StatusUnauthorized {
						t.Fatalf("bad token %d: %d, want 401", i, st)
					}
				}
			}
			for name, ts := range map[string]*httptest.Server{"a": a, "b": b} {
				if st := get(ts, "npg_guess"); st != http.StatusTooManyRequests {
					t.Errorf("server %s after 3+3 bad tokens from the address: %d, want 429", name, st)
				}
				if st := get(ts, good); st != http.StatusOK {
					t.Errorf("server %s: a good token after 3+3 bad ones from the address: %d, want 200", name, st)
				}
			}
		})
	}
}
