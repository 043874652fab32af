package runnerclient

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
