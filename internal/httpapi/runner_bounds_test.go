package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// countingBody yields n bytes of JSON that begins with prefix (default:
// an open lease_token string) and never ends, without holding them, and
// counts how many the server made the client send.
type countingBody struct {
	n, sent int64
	prefix  string
	read    *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.sent >= b.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), b.n-b.sent)
	for i := range p[:k] {
		p[i] = 'x'
	}
	if b.sent == 0 {
		prefix := b.prefix
		if prefix == "" {
			prefix = `{"lease_token": "`
		}
		copy(p, prefix)
	}
	b.sent += k
	b.read.Add(k)
	return int(k), nil
}

// TestRunnerBodiesBounded: a claim, heartbeat, release or failure is
// refused past a few kilobytes; a completion without a live lease in its header
// is refused before its body is read, and without the header it may not
// exceed 1 MiB. One 90 MB heartbeat used to cost the server ~250 MB.
func TestRunnerBodiesBounded(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			ada := e.token(t, "ada", domain.RoleLearner)
			tok := e.token(t, "r1", domain.RoleRunner)
			id := e.register(t, tok, "r1")
			e.submitStarter(t, ada, "ch1")
			// A claim is small too; a stranger's large claim is refused as
			// a stranger (401), the token's own as too large.
			bigClaim := []byte(`{"runner_id": "` + id + `", "wait_s": 0.1, "x": "` + strings.Repeat("x", 128<<10) + `"}`)
			for _, c := range []struct {
				token string
				want  int
			}{{"npg_guess", http.StatusUnauthorized}, {tok, http.StatusRequestEntityTooLarge}} {
				if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", c.token, bigClaim); st != c.want {
					t.Errorf("128 KiB claim: %d %s, want %d", st, body, c.want)
				}
			}
			st, claimed, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok, runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: 5})
			var l domain.Lease
			if err := json.Unmarshal([]byte(claimed), &l); st != 200 || err != nil {
				t.Fatalf("claim: %d %s", st, claimed)
			}
			path := func(what string) string { return fmt.Sprintf("%s/jobs/%d/%s", runnerproto.BasePath, l.JobID, what) }

			for _, what := range []string{"heartbeat", "release", "fail"} {
				big := []byte(`{"lease_token": "` + l.Token + `", "reason": "` + strings.Repeat("x", 128<<10) + `"}`)
				if st, body, _ := e.call(t, "POST", path(what), tok, big); st != http.StatusRequestEntityTooLarge {
					t.Errorf("128 KiB %s: %d %s, want 413", what, st, body)
				}
			}
			send := func(lease string, size int64) (int, int64) {
				var read atomic.Int64
				req, _ := http.NewRequest("POST", e.url+path("complete"), &countingBody{n: size, read: &read})
				req.ContentLength = size
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				if lease != "" {
					req.Header.Set(runnerproto.LeaseHeader, lease)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return 0, read.Load() // the server hung up on the body: fine, it did not read it
				}
				resp.Body.Close()
				return resp.StatusCode, read.Load()
			}
			if st, n := send("not-the-lease", 90<<20); (st != http.StatusConflict && st != 0) || n > 16<<20 {
				t.Errorf("90 MB completion with a wrong lease header: %d after %d bytes sent, want 409 before the body", st, n)
			}
			if st, _ := send("", 4<<20); st != http.StatusRequestEntityTooLarge && st != 0 {
				t.Errorf("4 MB completion without a lease header: %d, want 413", st)
			}
			// The lease is intact: the honest heartbeat still works.
			if st, body, _ := e.call(t, "POST", path("heartbeat"), tok, runnerproto.LeaseRequest{LeaseToken: l.Token}); st != 200 {
				t.Errorf("heartbeat: %d %s", st, body)
			}
		})
	}
}

func starterOf(t *testing.T, id string) []byte {
	t.Helper()
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := cat.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return ex.StarterBytes
}
