package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestOneLearnersBurstDelaysAnotherByOneJob: with one runner slot, ten
// uploads of one learner then one of another learner: the other's
// grading starts within one job's time (plus 2 s of polling and
// hand-over) of its upload, not after the ten. Real server, real
// sandboxed kernels, both databases.
func TestOneLearnersBurstDelaysAnotherByOneJob(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	requireSandboxExec(t)
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			bo := addUser(t, dbURL, "bo", "learner")
			s := startServer(t, dbURL, "--local-runner", "1", "--exercises", hostileDir+"/exercises", "--answers", hostileDir+"/answers",
				"--preload=")
			defer s.stop()
			// Each job sleeps, so ten of them take far longer than one.
			nb := withSources(t, readFile(t, hostileDir+"/exercises/hostile/hostile.ipynb"),
				map[string]string{"q1": "import time\ntime.sleep(0.8)\nprint(1)", "q2": `print("ok")`, "q3": `print("after")`})
			var ids []string
			for i := range 10 {
				resp, sub := upload(t, s, ada, "hostile", nb, fmt.Sprintf("ada-%d", i))
				if resp.StatusCode != 202 {
					t.Fatalf("ada's upload %d: %d %v", i, resp.StatusCode, sub)
				}
				ids = append(ids, sub["id"].(string))
			}
			resp, sub := upload(t, s, bo, "hostile", nb, "bo")
			if resp.StatusCode != 202 {
				t.Fatalf("bo's upload: %d %v", resp.StatusCode, sub)
			}
			var mu sync.Mutex
			var longest time.Duration
			var wg sync.WaitGroup
			for _, id := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					g, _ := waitGradedFast(t, s, ada, id)
					if took := stamp(t, g, "graded_at").Sub(stamp(t, g, "started_at")); took > 0 {
						mu.Lock()
						longest = max(longest, took)
						mu.Unlock()
					}
				}()
			}
			got, _ := waitGradedFast(t, s, bo, sub["id"].(string))
			wg.Wait()
			waited := stamp(t, got, "started_at").Sub(stamp(t, got, "created_at"))
			t.Logf("longest of ada's jobs %.2fs; bo's upload waited %.2fs for a runner", longest.Seconds(), waited.Seconds())
			if longest < 800*time.Millisecond {
				t.Fatalf("ada's longest job took %v: the jobs did not run the sleep", longest)
			}
			if waited > longest+2*time.Second {
				t.Errorf("bo's upload waited %v behind ada's ten uploads, more than one job (%v) + 2 s", waited, longest)
			}
		})
	}
}

// stamp reads a submission's timestamp field.
func stamp(t *testing.T, sub map[string]any, field string) time.Time {
	t.Helper()
	v, _ := sub[field].(string)
	at, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		t.Fatalf("%s %q: %v", field, v, err)
	}
	return at
}
