package runnerclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/runnerproto"
)

// TestDecodeLease: a claim's answer in either form gives the same lease;
// the notebook form keeps the body's bytes as they are; a notebook
// without its lease header is an error, not a lease.
func TestDecodeLease(t *testing.T) {
	t.Parallel()
	nb := []byte("{\"cells\": [], \"nbformat\": 4}\n")
	asJSON := []byte(`{"job_id":3,"lease_token":"tok","attempt":2,"kind":"grade","exercise":"ch1","notebook":` + string(nb) + `,"cell_timeout_s":60}`)
	l, err := decodeLease(http.Header{"Content-Type": {"application/json; charset=utf-8"}}, asJSON)
	if err != nil || l.JobID != 3 || l.Token != "tok" || l.Attempt != 2 || string(l.Notebook) != "{\"cells\": [], \"nbformat\": 4}" {
		t.Fatalf("JSON form: %+v %v", l, err)
	}
	h := http.Header{"Content-Type": {runnerproto.NotebookMediaType}}
	h.Set(runnerproto.LeaseMetaHeader, `{"job_id":3,"lease_token":"tok","attempt":2,"kind":"grade","exercise":"ch1","cell_timeout_s":60}`)
	l2, err := decodeLease(h, nb)
	if err != nil || l2.JobID != 3 || l2.Token != "tok" || l2.CellTimeout != 60 || string(l2.Notebook) != string(nb) {
		t.Fatalf("notebook form: %+v %v", l2, err)
	}
	h.Del(runnerproto.LeaseMetaHeader)
	if l, err := decodeLease(h, nb); err == nil {
		t.Errorf("a notebook without %s decoded to %+v", runnerproto.LeaseMetaHeader, l)
	}
	h.Set(runnerproto.LeaseMetaHeader, `{"job_id":`)
	if l, err := decodeLease(h, nb); err == nil {
		t.Errorf("a broken %s decoded to %+v", runnerproto.LeaseMetaHeader, l)
	}
}

// TestClaimsReuseConnections: eight slots claiming at once, round after
// round, keep their eight connections to the server (the default
// transport keeps two idle and opened new ones for the rest every round).
func TestClaimsReuseConnections(t *testing.T) {
	t.Parallel()
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	const slots, rounds = 8, 4
	for range rounds {
		var wg sync.WaitGroup
		for i := range slots {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &Client{Server: srv.URL, Token: "t", RunnerID: fmt.Sprintf("r-%d", i), Wait: time.Second}
				if l, err := c.Claim(context.Background()); l != nil || err != nil {
					t.Errorf("claim: %v %v, want no job", l, err)
				}
			}()
		}
		wg.Wait()
	}
	if n := opened.Load(); n > slots {
		t.Errorf("%d slots claiming %d rounds opened %d connections, want at most %d", slots, rounds, n, slots)
	}
}

// TestClientSendsLanguage: every request of a client with a Lang carries
// it as Accept-Language (the server words its problems in it), and a
// problem the server answers with reaches the caller as worded; a client
// without one sends none.
func TestClientSendsLanguage(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	asked := map[string][]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked[r.URL.Path] = append(asked[r.URL.Path], r.Header.Get("Accept-Language"))
		mu.Unlock()
		if r.URL.Path == runnerproto.BasePath+"/register" && r.Header.Get("Accept-Language") == "zh-CN" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"title":"令牌无效","status":401,"detail":"令牌无效"}`)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/heartbeat") {
			fmt.Fprint(w, `{"cancel":false}`)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	ctx := context.Background()
	zh := &Client{Server: srv.URL, Token: "t", RunnerID: "r-1", Wait: time.Second, Lang: "zh-CN"}
	if _, err := zh.Register(ctx, "r", 1, nil, envprobe.Report{}); err == nil || !strings.Contains(err.Error(), "令牌无效") {
		t.Errorf("register: %v, want the server's Chinese problem", err)
	}
	if l, err := zh.Claim(ctx); l != nil || err != nil {
		t.Errorf("claim: %v %v, want no job", l, err)
	}
	lease := &domain.Lease{JobID: 7, Token: "lt"}
	if cancel, err := zh.Heartbeat(ctx, lease); cancel || err != nil {
		t.Errorf("heartbeat: %v %v, want no cancel", cancel, err)
	}
	for _, f := range []func() error{
		func() error { return zh.Complete(ctx, lease, domain.ExecutionResult{}) },
		func() error { return zh.Fail(ctx, lease, "x") },
		func() error { return zh.Release(ctx, lease) },
		func() error { return zh.Drain(ctx) },
	} {
		if err := f(); err != nil {
			t.Error(err)
		}
	}
	plain := &Client{Server: srv.URL, Token: "t", RunnerID: "r-2", Wait: time.Second}
	if err := plain.Drain(ctx); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/register", "/jobs/claim", "/jobs/7/heartbeat", "/jobs/7/complete", "/jobs/7/fail", "/jobs/7/release"} {
		if got := strings.Join(asked[runnerproto.BasePath+path], ","); got != "zh-CN" {
			t.Errorf("%s asked in %q, want zh-CN", path, got)
		}
	}
	if got := strings.Join(asked[runnerproto.BasePath+"/drain"], ","); got != "zh-CN," {
		t.Errorf("/drain asked in %q, want zh-CN then none", got)
	}
}
