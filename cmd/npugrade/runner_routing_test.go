package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// fakeRunner speaks the runner protocol by hand with a given report: the
// NPU is faked, fed with recorded data.
type fakeRunner struct {
	t     *testing.T
	url   string
	token string
	id    string
}

func registerFake(t *testing.T, s *server, token, name string, rep envprobe.Report, labels map[string]string) *fakeRunner {
	t.Helper()
	var reg runnerproto.RegisterResponse
	if code := postJSON(t, s.url+"/api/runner/v1/register", token, runnerproto.RegisterRequest{Name: name, Slots: max(1, rep.DeviceCount), Labels: labels, Report: rep}, &reg); code != 200 {
		t.Fatalf("register %s: %d", name, code)
	}
	return &fakeRunner{t: t, url: s.url, token: token, id: reg.RunnerID}
}

// claim long-polls for up to wait; nil when the server answered 204.
func (f *fakeRunner) claim(wait time.Duration) *domain.Lease {
	f.t.Helper()
	var l domain.Lease
	code := postJSON(f.t, f.url+"/api/runner/v1/jobs/claim", f.token, runnerproto.ClaimRequest{RunnerID: f.id, WaitSeconds: wait.Seconds()}, &l)
	switch code {
	case 200:
		return &l
	case 204:
		return nil
	}
	f.t.Fatalf("claim by %s: %d", f.id, code)
	return nil
}

// TestRoutingNPUJobWaitsForNPURunner: a job of an exercise that needs an
// NPU is never leased to a CPU runner; it waits, visibly queued, until a
// runner whose report (recorded Atlas A2 data) satisfies it claims it. A
// job whose runners keep dying (no heartbeat, the lease runs out) is then
// failed after its last attempt, with the reason on the submission.
func TestRoutingNPUJobWaitsForNPURunner(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			staff := addUser(t, dbURL, "staff", "instructor")
			tokCPU := addUser(t, dbURL, "cpu-runner", "runner")
			tokNPU := addUser(t, dbURL, "npu-runner", "runner", "--profiles", "npu-a2")
			s := runnerServer(t, dbURL, "--lease-ttl", "2s")
			t.Cleanup(s.stop)

			cpu := registerFake(t, s, tokCPU, "cpu-host", cpuReport(), map[string]string{"site": "lab"})
			_, sub := upload(t, s, ada, "rxnpu", readFile(t, runnerAnswers+"/rxnpu/answer.ipynb"), "")
			id := sub["id"].(string)
			for i := 0; i < 2; i++ {
				if l := cpu.claim(time.Second); l != nil {
					t.Fatalf("the CPU runner was leased NPU job %d", l.JobID)
				}
			}
			if got := getSubmission(t, s, ada, id); got["status"] != "queued" {
				t.Fatalf("NPU-only submission with only a CPU runner: %v, want queued", got["status"])
			}
			var depth map[string]int
			getJSON(t, s.url+"/api/v1/queue", staff, &depth)
			if depth["queued"] != 1 {
				t.Fatalf("GET /api/v1/queue: %v", depth)
			}
			var pending []map[string]any
			getJSON(t, s.url+"/api/v1/queue/jobs", staff, &pending)
			if len(pending) != 1 || pending[0]["submission_id"] != id || pending[0]["eligible_runners"] != float64(0) ||
				!strings.Contains(fmt.Sprint(pending[0]["waiting_for"]), "needs an NPU runner") {
				t.Fatalf("GET /api/v1/queue/jobs does not show the job waiting for an NPU runner: %v", pending)
			}

			// An Atlas A2 runner (report from recorded A2 data) gets it.
			npu := registerFake(t, s, tokNPU, "a2-host", a2Report(t), nil)
			pending = nil
			getJSON(t, s.url+"/api/v1/queue/jobs", staff, &pending)
			if pending[0]["eligible_runners"] != float64(1) || pending[0]["waiting_for"] != nil {
				t.Fatalf("with an A2 runner registered: %v", pending)
			}
			var runners []RunnerJSONView
			getJSON(t, s.url+"/api/v1/runners", staff, &runners)
			byName := map[string]RunnerJSONView{}
			for _, r := range runners {
				byName[r.Name] = r
			}
			if r := byName["a2-host"]; r.Profile != "npu-a2" || r.Verdict != "ok" || r.Slots != 8 || r.Draining || time.Since(r.LastSeen) > time.Minute {
				t.Fatalf("GET /api/v1/runners a2-host: %+v", r)
			}
			if r := byName["cpu-host"]; r.Profile != "cpu" || r.Labels["site"] != "lab" {
				t.Fatalf("GET /api/v1/runners cpu-host: %+v", r)
			}
			if resp, _ := request(t, "GET", s.url+"/api/v1/runners", ada, nil, "", nil); resp.StatusCode != 403 {
				t.Fatalf("a learner listing runners: %d", resp.StatusCode)
			}

			first := npu.claim(5 * time.Second)
			if first == nil || first.SubmissionID != id || first.Requires.Accelerator != "npu" || first.Attempt != 1 {
				t.Fatalf("the A2 runner's claim: %+v", first)
			}
			// The runner "dies": no heartbeat. The reaper returns the job
			// after the lease; the CPU runner still never gets it.
			if l := cpu.claim(3 * time.Second); l != nil {
				t.Fatalf("the CPU runner was leased NPU job %d after a lease expired", l.JobID)
			}
			var second *domain.Lease
			waitFor(t, 20*time.Second, "the job to be leased again", func() bool { second = npu.claim(2 * time.Second); return second != nil })
			if second.JobID != first.JobID || second.Attempt != 2 || second.Token == first.Token {
				t.Fatalf("second lease %+v after %+v", second, first)
			}
			if code := postJSON(t, fmt.Sprintf("%s/api/runner/v1/jobs/%d/complete", s.url, first.JobID), tokNPU,
				runnerproto.CompleteRequest{LeaseToken: first.Token, RunnerID: npu.id, Result: domain.ExecutionResult{Profile: "npu-a2"}}, nil); code != 409 {
				t.Fatalf("complete under the expired first lease: %d, want 409", code)
			}
			// The second runner dies too: max_attempts is 2, so the job fails with a reason.
			var got map[string]any
			waitFor(t, 20*time.Second, "the job to fail after its last attempt", func() bool {
				got = getSubmission(t, s, ada, id)
				return got["status"] == "failed"
			})
			if msg, _ := got["message"].(string); !strings.Contains(msg, "after 2 attempts") || !strings.Contains(msg, "lost its lease") {
				t.Fatalf("failed submission's message: %q", msg)
			}
			if l := npu.claim(time.Second); l != nil {
				t.Fatalf("a failed job was leased again: %+v", l)
			}
		})
	}
}

// TestReferenceRunThroughQueue: an instructor asks for the cpu reference of
// an exercise that has no reference file; a CPU runner executes the answer
// through the queue, the server stores the outputs in the database, and
// submissions are then graded against them.
func TestReferenceRunThroughQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			staff := addUser(t, dbURL, "staff", "instructor")
			s := runnerServer(t, dbURL, "--local-runner", "1")
			t.Cleanup(s.stop)

			for _, tc := range []struct {
				token, exercise, body string
				want                  int
			}{
				{ada, "rxref", `{"profile":"cpu"}`, 403},
				{staff, "rxref", `{"profile":"gpu"}`, 422},
				{staff, "rxref", `{}`, 422},
				{staff, "rxnpu", `{"profile":"cpu"}`, 422},
				{staff, "nope", `{"profile":"cpu"}`, 404},
			} {
				resp, b := request(t, "POST", s.url+"/api/v1/exercises/"+tc.exercise+"/references", tc.token, strings.NewReader(tc.body), "application/json", nil)
				if resp.StatusCode != tc.want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
					t.Fatalf("POST references %s %s: %d %s, want %d problem", tc.exercise, tc.body, resp.StatusCode, b, tc.want)
				}
			}

			var queued map[string]any
			if code := postJSON(t, s.url+"/api/v1/exercises/rxref/references", staff, map[string]string{"profile": "cpu"}, &queued); code != 202 || queued["job_id"] == nil {
				t.Fatalf("POST references: %d %v", code, queued)
			}
			// The recording is staged, not used, until an instructor accepts it.
			var staged []map[string]any
			waitFor(t, 60*time.Second, "the cpu reference to be staged", func() bool {
				getJSON(t, s.url+"/api/v1/staged-references?state=staged", staff, &staged)
				return len(staged) == 1
			})
			var refs []map[string]any
			if getJSON(t, s.url+"/api/v1/exercises/rxref/references", staff, &refs); len(refs) != 0 {
				t.Fatalf("a staged reference is in use before review: %v", refs)
			}
			var accepted map[string]any
			if code := postJSON(t, s.url+"/api/v1/staged-references/"+fmt.Sprint(staged[0]["id"])+"/accept", staff, map[string]string{}, &accepted); code != 200 || accepted["state"] != "accepted" {
				t.Fatalf("accept: %d %v", code, accepted)
			}
			getJSON(t, s.url+"/api/v1/exercises/rxref/references", staff, &refs)
			if r := refs[0]; r["profile"] != "cpu" || r["source"] != "database" || r["current"] != true || r["cells"] != float64(1) || r["job_id"] != queued["job_id"] {
				t.Fatalf("recorded reference: %v", r)
			}

			_, good := upload(t, s, ada, "rxref", readFile(t, runnerAnswers+"/rxref/answer.ipynb"), "")
			_, bad := upload(t, s, ada, "rxref", answerWith(t, "def double(x):\n    return x\n"), "")
			if g := waitGraded(t, s, ada, good["id"].(string)); g["status"] != "graded" || g["score"] != float64(1) {
				t.Fatalf("the answer against the stored reference: %v", g)
			}
			g := waitGraded(t, s, ada, bad["id"].(string))
			cells, _ := g["cells"].([]any)
			if g["score"] != float64(0) || len(cells) != 1 || cells[0].(map[string]any)["verdict"] != "mismatch" {
				t.Fatalf("a wrong answer against the stored reference: %v", g)
			}
		})
	}
}
