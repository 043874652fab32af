package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerclient"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestClaimNegotiatesTheNotebookForm: a claim that accepts the notebook
// media type gets the stored notebook as the body, byte for byte (as a
// JSON claim carries it in its "notebook"), and the rest of the lease in the
// Npugrade-Lease header; the runner's client reads that form and its
// lease token fences the job's calls. A claim that does not ask still
// gets the Lease as JSON (runners of earlier releases).
func TestClaimNegotiatesTheNotebookForm(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			ada := e.token(t, "ada", domain.RoleLearner)
			tok := e.token(t, "runner1", domain.RoleRunner)
			id := e.register(t, tok, "r1")
			for range 2 {
				e.submitStarter(t, ada, "ch1")
			}
			claim := runnerproto.ClaimRequest{RunnerID: id, WaitSeconds: 0.2}
			st, plain, hdr := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok, claim)
			var old domain.Lease
			if err := json.Unmarshal([]byte(plain), &old); st != 200 || err != nil || len(old.Notebook) == 0 ||
				hdr.Get(runnerproto.LeaseMetaHeader) != "" {
				t.Fatalf("claim without Accept: %d %s %v, want the Lease as JSON", st, hdr.Get("Content-Type"), err)
			}

			// The raw answer of the notebook form.
			j, _ := json.Marshal(claim)
			req, _ := http.NewRequest("POST", e.url+runnerproto.BasePath+"/jobs/claim", bytes.NewReader(j))
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Accept", runnerproto.NotebookMediaType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			nb, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var meta domain.Lease
			if err := json.Unmarshal([]byte(resp.Header.Get(runnerproto.LeaseMetaHeader)), &meta); resp.StatusCode != 200 || err != nil ||
				resp.Header.Get("Content-Type") != runnerproto.NotebookMediaType || meta.JobID == 0 || meta.JobID == old.JobID ||
				meta.Token == "" || meta.Attempt != 1 || meta.ExerciseID != "ch1" || meta.SubmissionID == "" || meta.Notebook != nil {
				t.Fatalf("claim accepting %s: %d %v %v", runnerproto.NotebookMediaType, resp.StatusCode, resp.Header, err)
			}
			// (JSON drops the whitespace after a member's value: the JSON
			// form's notebook lacks the stored one's final newline.)
			for _, c := range []struct {
				id   int64
				nb   []byte
				trim bool
			}{{old.JobID, old.Notebook, true}, {meta.JobID, nb, false}} {
				job, err := e.db.Job(e.ctx, c.id)
				if err != nil {
					t.Fatal(err)
				}
				stored, err := e.db.Blob(e.ctx, job.PayloadSHA256)
				if c.trim {
					stored = bytes.TrimSpace(stored)
				}
				if err != nil || !bytes.Equal(c.nb, stored) {
					t.Errorf("job %d: the lease's notebook (%d bytes) is not the stored payload (%d bytes, %v)", c.id, len(c.nb), len(stored), err)
				}
			}
			// The lease of the notebook form is the runner's: its token fences the job.
			meta.Notebook = nb
			rc := &runnerclient.Client{Server: e.url, Token: tok, RunnerID: id}
			if cancel, err := rc.Heartbeat(e.ctx, &meta); err != nil || cancel {
				t.Errorf("heartbeat with the notebook form's lease: %v %v", cancel, err)
			}
			if err := rc.Release(e.ctx, &meta); err != nil {
				t.Fatalf("release: %v", err)
			}

			// The runner's client asks for the notebook form and reads it.
			rc.Wait = 200 * time.Millisecond
			l, err := rc.Claim(e.ctx)
			if err != nil || l == nil || l.JobID != meta.JobID || l.Token == meta.Token || !bytes.Equal(l.Notebook, nb) || l.Attempt != 1 {
				t.Fatalf("runnerclient claim of the released job: %+v %v", l, err)
			}
			if _, err := rc.Heartbeat(e.ctx, &meta); !errors.Is(err, domain.ErrLeaseLost) {
				t.Errorf("heartbeat with the released lease: %v, want lease lost", err)
			}
		})
	}
}

// TestClaimBehindAProxyThatStripsTheLeaseHeader: a reverse proxy between
// runner and server that drops unknown response headers costs the
// runner's client one lease (an error, never a lease without its token);
// from then on it claims in the JSON form, whose leases work through the
// same proxy.
func TestClaimBehindAProxyThatStripsTheLeaseHeader(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			ada := e.token(t, "ada", domain.RoleLearner)
			tok := e.token(t, "runner1", domain.RoleRunner)
			id := e.register(t, tok, "r1")
			for range 2 {
				e.submitStarter(t, ada, "ch1")
			}
			target, _ := url.Parse(e.url)
			var mu sync.Mutex
			var accepts []string
			proxy := httputil.NewSingleHostReverseProxy(target)
			inner := proxy.Director
			proxy.Director = func(r *http.Request) {
				inner(r)
				if strings.HasSuffix(r.URL.Path, "/jobs/claim") {
					mu.Lock()
					accepts = append(accepts, r.Header.Get("Accept"))
					mu.Unlock()
				}
			}
			proxy.ModifyResponse = func(r *http.Response) error {
				r.Header.Del(runnerproto.LeaseMetaHeader)
				return nil
			}
			ps := httptest.NewServer(proxy)
			defer ps.Close()

			rc := &runnerclient.Client{Server: ps.URL, Token: tok, RunnerID: id, Wait: 200 * time.Millisecond}
			if l, err := rc.Claim(e.ctx); err == nil || l != nil || !strings.Contains(err.Error(), runnerproto.LeaseMetaHeader) {
				t.Fatalf("first claim through the stripping proxy: %+v %v, want an error naming the header", l, err)
			}
			l, err := rc.Claim(e.ctx)
			if err != nil || l == nil || l.Token == "" || len(l.Notebook) == 0 || l.Attempt != 1 {
				t.Fatalf("second claim through the stripping proxy: %+v %v, want a JSON-form lease", l, err)
			}
			if cancel, err := rc.Heartbeat(e.ctx, l); err != nil || cancel {
				t.Errorf("heartbeat through the proxy: %v %v", cancel, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(accepts) != 2 || !strings.HasPrefix(accepts[0], runnerproto.NotebookMediaType) || accepts[1] != "application/json" {
				t.Errorf("claims' Accept headers %q, want the notebook form then JSON only", accepts)
			}
		})
	}
}
