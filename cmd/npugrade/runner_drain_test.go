package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestRunnerDrainsOnSIGTERM: a runner that gets SIGTERM stops claiming,
// shows as draining, lets the job in flight finish within --drain-timeout
// or hands it back to the queue (without counting the attempt), and exits 0.
func TestRunnerDrainsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks in runner processes")
	}
	t.Parallel()
	bin := buildBinary(t)
	tests := []struct {
		name     string
		drain    string
		sleep    int
		handBack bool
	}{
		{"finishes the job", "60s", 3, false},
		{"hands the job back", "1s", 8, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dbURL := storetest.URL(t, "sqlite")
			ada := addUser(t, dbURL, "ada", "learner")
			staff := addUser(t, dbURL, "staff", "instructor")
			tok := addUser(t, dbURL, "runner-1", "runner")
			s := runnerServer(t, dbURL, "--lease-ttl", "30s")
			t.Cleanup(s.stop)
			db := openDB(t, dbURL)

			a := startRunnerProc(t, bin, s.url, tok, "ra", "--slots", "1", "--drain-timeout", tc.drain)
			_, sub := upload(t, s, ada, "rx", slowAnswer(t, tc.sleep), "")
			id := sub["id"].(string)
			waitFor(t, 60*time.Second, "the job to be leased", func() bool { j := jobRows(t, db); return len(j) == 1 && j[0].State == "leased" })
			time.Sleep(time.Second)
			start := time.Now()
			if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "the runner to show as draining", func() bool {
				var rs []RunnerJSONView
				getJSON(t, s.url+"/api/v1/runners", staff, &rs)
				return len(rs) == 1 && rs[0].Draining
			})
			if code := a.wait(t, 90*time.Second); code != 0 {
				t.Fatalf("runner exited %d after SIGTERM; log:\n%s", code, a.log.String())
			}
			t.Logf("runner exited 0, %s after SIGTERM", time.Since(start).Round(time.Millisecond))
			j := jobRows(t, db)[0]
			if !tc.handBack {
				if j.State != "succeeded" || j.Attempt != 1 {
					t.Fatalf("the drained job: %+v, want succeeded on attempt 1", j)
				}
				if got := waitGraded(t, s, ada, id); got["score"] != float64(1) {
					t.Fatalf("drained job graded %v", got)
				}
				return
			}
			if j.State != "queued" || j.Attempt != 0 || j.RunnerID != "" {
				t.Fatalf("the handed-back job: %+v, want queued with the attempt not counted", j)
			}
			if got := getSubmission(t, s, ada, id); got["status"] != "queued" {
				t.Fatalf("submission after hand-back: %v", got["status"])
			}
			startRunnerProc(t, bin, s.url, tok, "rb", "--slots", "1")
			if got := waitGraded(t, s, ada, id); got["score"] != float64(1) {
				t.Fatalf("handed-back job graded %v", got)
			}
			if j := jobRows(t, db)[0]; j.Attempt != 1 || j.State != "succeeded" {
				t.Fatalf("the handed-back job after regrading: %+v", j)
			}
		})
	}
}

func getSubmission(t *testing.T, s *server, token, id string) map[string]any {
	t.Helper()
	var out map[string]any
	getJSON(t, s.url+"/api/v1/submissions/"+id, token, &out)
	return out
}
