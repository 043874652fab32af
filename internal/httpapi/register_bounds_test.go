package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// postRegistration sends an n-byte registration with token; declared
// says whether the request states its length (else it is chunked). It
// returns the status (0 when the server hung up first), the answer's
// content type and how many bytes the client sent.
func postRegistration(t testing.TB, url, token string, n int64, declared bool) (int, string, int64) {
	t.Helper()
	var sent atomic.Int64
	req, err := http.NewRequest("POST", url+runnerproto.BasePath+"/register", &countingBody{n: n, prefix: `{"slots": 1, "report": {"profile": "cpu"}, "name": "`, read: &sent})
	if err != nil {
		t.Fatal(err)
	}
	if declared {
		req.ContentLength = n
	} else {
		req.ContentLength = -1
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", sent.Load()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), sent.Load()
}

// TestRegistrationBounded: an 85 MB registration, with its length
// declared or chunked, is refused with a 413 problem after the server
// read a bounded part of it, and stores nothing. The same runner (token
// and name) registering again keeps its id and its one row, updated;
// another name or another token's runner of the same name is another
// runner. Four such bodies used to take a server from 290 MB to 1.19 GB
// and add a row each, and every restart of a runner added one more.
func TestRegistrationBounded(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			tok := e.token(t, "lab-runner", domain.RoleRunner)
			for _, declared := range []bool{true, false} {
				st, ct, sent := postRegistration(t, e.url, tok, 85<<20, declared)
				if st != http.StatusRequestEntityTooLarge || !strings.HasPrefix(ct, "application/problem+json") {
					t.Errorf("85 MB registration (length declared %v): %d %q, want a 413 problem", declared, st, ct)
				}
				// What the client got to send is the server's read plus the
				// sockets' buffers; the server itself stops at 64 KiB.
				if sent > 16<<20 {
					t.Errorf("85 MB registration (length declared %v): the client sent %d MB before the answer", declared, sent>>20)
				}
			}
			rows := func() map[string]int {
				t.Helper()
				rs, err := e.db.Runners(e.ctx, e.db.Now().Add(-3600e9))
				if err != nil {
					t.Fatal(err)
				}
				slots := map[string]int{}
				for _, r := range rs {
					slots[r.ID] = r.Slots
				}
				return slots
			}
			if n := len(rows()); n != 0 {
				t.Fatalf("%d runners after refused registrations, want none", n)
			}
			reg := func(token, name string, slots int) string {
				t.Helper()
				st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/register", token, runnerproto.RegisterRequest{Name: name, Slots: slots,
					Report: envprobe.Validate(envprobe.Report{Arch: "x86_64", Python: "3.13.5", Torch: "2.6.0+debian", NPUGraphExBackend: true, Environment: "cpu"})})
				var r runnerproto.RegisterResponse
				if err := json.Unmarshal([]byte(body), &r); st != http.StatusOK || err != nil || r.RunnerID == "" {
					t.Fatalf("register %s: %d %s", name, st, body)
				}
				return r.RunnerID
			}
			id := reg(tok, "gpu-host-1", 1)
			if again := reg(tok, "gpu-host-1", 3); again != id {
				t.Errorf("the same runner registering again got id %s, first %s", again, id)
			}
			if got := rows(); len(got) != 1 || got[id] != 3 {
				t.Errorf("after registering twice: runners %v, want one (%s) with the second registration's 3 slots", got, id)
			}
			// A registration clears a drain (the runner restarted).
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/drain", tok, runnerproto.DrainRequest{RunnerID: id}); st != http.StatusNoContent {
				t.Fatalf("drain: %d %s", st, body)
			}
			reg(tok, "gpu-host-1", 3)
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok, runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: 0.1}); st != http.StatusNoContent {
				t.Errorf("claim after registering again: %d %s, want 204 (not draining)", st, body)
			}
			other := reg(tok, "gpu-host-2", 1)
			theirs := reg(e.token(t, "other-lab", domain.RoleRunner), "gpu-host-1", 1)
			if got := rows(); len(got) != 3 || other == id || theirs == id || theirs == other {
				t.Errorf("three runners: ids %s %s %s, rows %v", id, other, theirs, got)
			}
		})
	}
}

// BenchmarkOversizeRegistration posts an 85 MB registration (chunked, so
// the server cannot refuse it by its declared length) to a real server
// with a valid runner token and reports the server's peak heap growth
// (make bench; target: under 64 MB, where each such body used to cost
// about 225 MB).
func BenchmarkOversizeRegistration(b *testing.B) {
	e := newLiveEnv(b, "sqlite", httpapi.DefaultTimeouts())
	tok := e.tokenTB(b, "lab-runner", domain.RoleRunner)
	var worst uint64
	var sent int64
	for i := 0; i < b.N; i++ {
		var st int
		peak := peakHeap(func() { st, _, sent = postRegistration(b, e.url, tok, 85<<20, false) })
		if st != http.StatusRequestEntityTooLarge {
			b.Fatalf("85 MB registration: %d, want 413", st)
		}
		worst = max(worst, peak)
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(sent)/(1<<20), "client-sent-MB")
}
