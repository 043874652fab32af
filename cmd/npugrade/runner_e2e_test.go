package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestRunnersGradeEachSubmissionOnce runs a server and two `npugrade
// runner` processes. One submission sleeps in its solution cell; the
// runner executing it is SIGKILLed mid-job and replaced. Every submission
// must end graded exactly once: the killed runner's jobs are leased again
// after their lease expires and graded by the other runner, with no
// duplicate score, and a late result under the killed runner's token and
// lease is refused with 409.
func TestRunnersGradeEachSubmissionOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks in runner processes")
	}
	t.Parallel()
	bin := buildBinary(t)
	for _, d := range storetest.Dialects(t) {
		n := 50
		if d == "sqlite" {
			n = 12 // the same path; Postgres carries the full load
		}
		t.Run(d, func(t *testing.T) {
			start := time.Now()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			staff := addUser(t, dbURL, "staff", "instructor")
			tokA := addUser(t, dbURL, "runner-a", "runner")
			tokB := addUser(t, dbURL, "runner-b", "runner")
			// 50 uploads from one learner: the per-learner upload limit is not what this test is about.
			s := runnerServer(t, dbURL, "--lease-ttl", "4s", "--upload-limit", "0", "--max-active", "0")
			t.Cleanup(s.stop) // after the runners' cleanups: no long poll holds the shutdown
			db := openDB(t, dbURL)

			a := startRunnerProc(t, bin, s.url, tokA, "ra", "--slots", "2")
			b := startRunnerProc(t, bin, s.url, tokB, "rb", "--slots", "2")

			// The slow one first, so that a runner picks it up at once.
			_, slow := upload(t, s, ada, "rx", slowAnswer(t, 6), "")
			slowID := slow["id"].(string)
			ids := []string{slowID}
			answer := readFile(t, runnerAnswers+"/rx/answer.ipynb")
			for i := 1; i < n; i++ {
				resp, sub := upload(t, s, ada, "rx", answer, "")
				if resp.StatusCode != 202 {
					t.Fatalf("submit %d: %d %v", i, resp.StatusCode, sub)
				}
				ids = append(ids, sub["id"].(string))
			}

			// Kill whichever runner holds the slow job, mid-run.
			var slowJob jobRow
			waitFor(t, 60*time.Second, "the slow job to be leased", func() bool {
				for _, j := range jobRows(t, db) {
					if j.SubmissionID != nil && *j.SubmissionID == slowID && j.State == "leased" {
						slowJob = j
						return true
					}
				}
				return false
			})
			time.Sleep(1500 * time.Millisecond) // the kernel is in time.sleep now
			victim, victimTok, survivorName := a, tokA, "rb-"
			if strings.HasPrefix(slowJob.RunnerID, "rb-") {
				victim, victimTok, survivorName = b, tokB, "ra-"
			}
			// Its job directories (the slow job's and its spares') are named
			// for it; the replacement's start removes them.
			victimDirs := jobDirsOf(t, victim)
			if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			victim.wait(t, 10*time.Second)
			t.Logf("killed %s holding job %d (submission %s) at %s", slowJob.RunnerID, slowJob.ID, slowID, time.Since(start).Round(time.Millisecond))
			// A replacement keeps two runners working; it registers anew.
			replacement := startRunnerProc(t, bin, s.url, victimTok, victim.name+"2", "--slots", "2")

			for _, id := range ids {
				sub := waitGraded(t, s, ada, id)
				if sub["status"] != "graded" || sub["score"] != sub["max_score"] || sub["max_score"] != float64(1) {
					t.Fatalf("submission %s: %v", id, sub)
				}
			}
			elapsed := time.Since(start)

			// The killed runner's late result and heartbeat are refused.
			for _, call := range []string{"complete", "heartbeat"} {
				code := postJSON(t, fmt.Sprintf("%s/api/runner/v1/jobs/%d/%s", s.url, slowJob.ID, call), victimTok,
					map[string]any{"lease_token": slowJob.LeaseToken, "runner_id": slowJob.RunnerID, "result": map[string]any{"profile": "cpu"}}, nil)
				if code != 409 {
					t.Fatalf("late %s from the killed runner: %d, want 409", call, code)
				}
			}

			// Exactly once: one succeeded job per submission, one set of cell results.
			all := jobRows(t, db)
			if len(all) != n {
				t.Fatalf("%d jobs for %d submissions", len(all), n)
			}
			for _, j := range all {
				if j.State != "succeeded" || j.Attempt < 1 {
					t.Fatalf("job %d: state %s attempt %d (%s)", j.ID, j.State, j.Attempt, j.LastError)
				}
				if j.ID == slowJob.ID && (j.Attempt != 2 || !strings.HasPrefix(j.RunnerID, survivorName) && !strings.HasPrefix(j.RunnerID, victim.name+"2-")) {
					t.Fatalf("the killed runner's job: attempt %d by %s; want attempt 2 by another runner", j.Attempt, j.RunnerID)
				}
			}
			var dup []struct {
				SubmissionID string
				N            int
			}
			if err := db.RawScan(context.Background(), &dup, "SELECT submission_id, COUNT(*) AS n FROM cell_results GROUP BY submission_id HAVING COUNT(*) <> 1"); err != nil {
				t.Fatal(err)
			}
			var scored int64
			db.RawScan(context.Background(), &scored, "SELECT COUNT(DISTINCT submission_id) FROM cell_results")
			if len(dup) > 0 || scored != int64(n) {
				t.Fatalf("cell results: %d submissions scored (want %d), duplicates %v", scored, n, dup)
			}
			// The survivor may have graded everything before the replacement
			// (which starts its spares first) registered.
			var runners []RunnerJSONView
			for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				runners = nil
				getJSON(t, s.url+"/api/v1/runners", staff, &runners)
				if len(runners) == 3 || time.Now().After(deadline) {
					break
				}
			}
			if len(runners) != 3 {
				t.Fatalf("GET /api/v1/runners: %d runners, want 3 (two and a replacement): %+v; the replacement's log:\n%s",
					len(runners), runners, replacement.log.String())
			}
			if left, _ := filepath.Glob(victimDirs); len(left) > 0 {
				t.Fatalf("the killed runner's job directories outlived the replacement's start: %v", left)
			}
			t.Logf("%s: %d submissions graded exactly once over 2 runner processes (one SIGKILLed mid-job) in %s",
				d, n, elapsed.Round(time.Millisecond))
		})
	}
}

// RunnerJSONView is what the tests read of GET /api/v1/runners.
type RunnerJSONView struct {
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Slots    int               `json:"slots"`
	Profile  string            `json:"profile"`
	Verdict  string            `json:"verdict"`
	Labels   map[string]string `json:"labels"`
	LastSeen time.Time         `json:"last_seen"`
	Draining bool              `json:"draining"`
}
