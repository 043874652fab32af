package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/httpapi/apitest"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestMetricsAndAccessLog: /metrics labels requests with the numeric
// status code and the route pattern, has the request-duration histogram,
// the queue-wait and execution histograms per profile and the runner
// gauges; every request writes an access log line with method, route,
// status, duration in seconds and user id.
func TestMetricsAndAccessLog(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			q := jobs.New(db, nil)
			logBuf := &syncWriter{w: &bytes.Buffer{}}
			m := httpapi.NewMetrics(q)
			m.WatchRunners(db, time.Minute)
			srv := compose.Server(compose.Config{DB: db, Queue: q, Metrics: m, Log: slog.New(slog.NewJSONHandler(logBuf, nil))})
			srv.MetricsToken = "metrics-token"
			ts := httptest.NewServer(apitest.Handler(t, srv.Handler()))
			defer ts.Close()
			u, tok, err := db.CreateUser(ctx, "tom", domain.RoleInstructor)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.UpsertRunner(ctx, store.RunnerRegistration{ID: "r1", Name: "r1", Slots: 2, Profile: "npu-a2",
				WarmSpares: fleet.WarmSpares{PerSlot: 2, Kept: 4, Ready: 3, MemoryBytes: 3 << 30}}); err != nil {
				t.Fatal(err)
			}
			started := time.Now().Add(-7 * time.Second)
			graded := started.Add(4 * time.Second)
			m.Observe(domain.Submission{ExerciseID: "ch1", Profile: "npu-a2", CreatedAt: started.Add(-3 * time.Second),
				StartedAt: &started, GradedAt: &graded}, 7*time.Second)

			get := func(path, token string) (int, string) {
				req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			get("/api/v1/submissions/nope", tok)
			get("/api/v1/queue", tok)
			_, metrics := get("/metrics", "metrics-token")
			for _, want := range []string{
				`npugrade_http_requests_total{code="404",method="GET",route="/api/v1/submissions/:id"} 1`,
				`npugrade_http_requests_total{code="200",method="GET",route="/api/v1/queue"} 1`,
				`http_request_duration_seconds_bucket{code="200",method="GET",route="/api/v1/queue",le="+Inf"} 1`,
				`npugrade_queue_wait_seconds_sum{profile="npu-a2"} 3`,
				`npugrade_execution_seconds_sum{profile="npu-a2"} 4`,
				`npugrade_runners{profile="npu-a2",state="active"} 1`,
				`npugrade_runner_slots{profile="npu-a2",state="active"} 2`,
				`npugrade_warm_spares{profile="npu-a2",state="kept"} 4`,
				`npugrade_warm_spares{profile="npu-a2",state="ready"} 3`,
				`npugrade_warm_spare_memory_bytes{profile="npu-a2"} 3.221225472e+09`,
			} {
				if !strings.Contains(metrics, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			if strings.Contains(metrics, `status="Not Found"`) {
				t.Error("/metrics still labels with status texts")
			}
			logs := logBuf.String()
			if !strings.Contains(logs, `"msg":"access","method":"GET","route":"/api/v1/submissions/:id","status":404,"duration_s":`) ||
				!strings.Contains(logs, `"user_id":`+itoa(u.ID)) {
				t.Errorf("no access log line with method, route, status, seconds and user id:\n%s", logs)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// syncWriter serialises writes from the server's goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.(*bytes.Buffer).String()
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
