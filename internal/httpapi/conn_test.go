package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// liveEnv is a real http.Server (HTTPServer with t's limits) over the
// project's exercises on a fresh database.
type liveEnv struct {
	db  *store.DB
	srv *httpapi.Server
	url string
	ctx context.Context
}

func newLiveEnv(t testing.TB, dialect string, limits httpapi.Timeouts) *liveEnv {
	t.Helper()
	return newLiveEnvOn(t, dialect, projectCatalog(t), limits)
}

// projectCatalog loads the project's own exercises and answers.
func projectCatalog(t testing.TB) *exercise.Catalog {
	t.Helper()
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// newLiveEnvOn is newLiveEnv over the catalogue cat.
func newLiveEnvOn(t testing.TB, dialect string, cat *exercise.Catalog, limits httpapi.Timeouts) *liveEnv {
	t.Helper()
	return newLiveEnvWith(t, dialect, cat, limits, nil)
}

// newLiveEnvWith is newLiveEnvOn with configure applied to the server
// (when not nil) before it starts.
func newLiveEnvWith(t testing.TB, dialect string, cat *exercise.Catalog, limits httpapi.Timeouts, configure func(*httpapi.Server)) *liveEnv {
	t.Helper()
	db := storetest.Open(t, dialect)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q := jobs.New(db, log)
	srv := compose.Server(compose.Config{DB: db, Queue: q, Catalog: cat, Log: log,
		Dispatch: &jobs.Dispatcher{DB: db, Queue: q, Catalog: cat, LeaseTTL: time.Minute, Log: log}})
	if configure != nil {
		configure(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(limits)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return &liveEnv{db: db, srv: srv, url: "http://" + ln.Addr().String(), ctx: context.Background()}
}

func (e *liveEnv) token(t *testing.T, name string, role domain.Role) string {
	return e.tokenTB(t, name, role)
}

func (e *liveEnv) tokenTB(t testing.TB, name string, role domain.Role) string {
	t.Helper()
	_, tok, err := e.db.CreateUser(e.ctx, name, role)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// call sends a JSON body (any, or raw bytes) with a bearer token.
func (e *liveEnv) call(t *testing.T, method, path, token string, body any) (int, string, http.Header) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Header
}

// register registers a runner in the cpu grading environment (what its
// probe reports) with token and returns its runner id.
func (e *liveEnv) register(t *testing.T, token, name string) string {
	t.Helper()
	st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/register", token, runnerproto.RegisterRequest{Name: name, Slots: 1,
		Report: envprobe.Validate(envprobe.Report{Arch: "x86_64", Python: "3.13.5", Torch: "2.6.0+debian", NPUGraphExBackend: true, Environment: "cpu"})})
	if st != http.StatusOK {
		t.Fatalf("register %s: %d %s", name, st, body)
	}
	var reg runnerproto.RegisterResponse
	_ = json.Unmarshal([]byte(body), &reg)
	return reg.RunnerID
}

// submitStarter uploads exercise's starter notebook as token's learner
// and fails the test unless it is accepted (202).
func (e *liveEnv) submitStarter(t *testing.T, token, exercise string) {
	t.Helper()
	body, ct := multipartBody(starterOf(t, exercise))
	req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("submit %s: %v", exercise, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		out, _ := io.ReadAll(resp.Body)
		t.Fatalf("submit %s: %d %s", exercise, resp.StatusCode, out)
	}
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// TestConnectionLimits: a client that sends headers and then trickles
// (or never sends) its body, and an idle keep-alive connection, are cut
// by the server; oversized headers get 431. A long poll still outlives
// WriteTimeout, and one runner token cannot hold more than
// MaxPollsPerToken polls at once.
func TestConnectionLimits(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			limits := httpapi.Timeouts{ReadHeader: time.Second, Read: 700 * time.Millisecond, Write: 700 * time.Millisecond,
				Idle: 700 * time.Millisecond, MaxHeaderBytes: 8 << 10}
			e := newLiveEnv(t, d, limits)
			addr := strings.TrimPrefix(e.url, "http://")

			slow, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer slow.Close()
			_, _ = io.WriteString(slow, "POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
			if !closedWithin(slow, 5*time.Second) {
				t.Error("a connection whose body never arrives is still open 5 s after a 0.7 s ReadTimeout")
			}

			idle, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer idle.Close()
			_, _ = io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("healthz on a raw connection: %v %v", resp, err)
			}
			if !closedWithin(idle, 5*time.Second) {
				t.Error("an idle keep-alive connection is still open 5 s after a 0.7 s IdleTimeout")
			}

			req, _ := http.NewRequest("GET", e.url+"/healthz", nil)
			req.Header.Set("X-Big", strings.Repeat("a", 32<<10))
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Errorf("32 KiB of headers: %v %v, want 431", resp, err)
			}

			tok := e.token(t, "r1", domain.RoleRunner)
			id := e.register(t, tok, "r1")
			start := time.Now()
			st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok, runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: 2})
			if st != http.StatusNoContent || time.Since(start) < 1500*time.Millisecond {
				t.Errorf("a 2 s long poll under a 0.7 s WriteTimeout: %d after %v %s", st, time.Since(start), body)
			}

			// MaxPollsPerToken polls wait; one more is refused at once.
			var wg sync.WaitGroup
			for i := 0; i < httpapi.MaxPollsPerToken; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok, runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: 4})
				}()
			}
			time.Sleep(1500 * time.Millisecond)
			st, body, hdr := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok, runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: 1})
			if st != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
				t.Errorf("poll %d of one token: %d %s, want 429 with Retry-After", httpapi.MaxPollsPerToken+1, st, body)
			}
			other := e.token(t, "r2", domain.RoleRunner)
			otherID := e.register(t, other, "r2")
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", other, runnerproto.ClaimRequest{RunnerID: otherID, WaitSeconds: 0.2}); st != http.StatusNoContent {
				t.Errorf("another token's poll: %d %s", st, body)
			}
			wg.Wait()
		})
	}
}
