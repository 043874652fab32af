package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestRemoteRunner grades through a `npugrade runner` that reaches the
// server only over HTTP with a runner token, then checks that a result
// sent with a lease token the server no longer honours is refused.
func TestRemoteRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	// The chapter answers need the cpu environment's PyTorch 2.x.
	envDir := envtest.RequireCPU(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			runnerTok := addUser(t, dbURL, "runner-1", "runner")
			s := startServer(t, dbURL, "--local-runner", "0", "--lease-ttl", "6s")
			defer s.stop()

			// A learner token is refused on runner routes.
			if resp, _ := request(t, "POST", s.url+"/api/runner/v1/register", ada, strings.NewReader(`{}`), "application/json", nil); resp.StatusCode != 403 {
				t.Fatalf("learner token on runner route: %d", resp.StatusCode)
			}

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"runner", "--server", s.url, "--token", runnerTok, "--slots", "1", "--name", "cpu-host", "--log-level", "warn",
					"--env", filepath.Base(envDir), "--envs-dir", filepath.Dir(envDir)}, io.Discard, os.Stderr)
			}()
			defer func() {
				cancel()
				select {
				case <-done:
				case <-time.After(60 * time.Second):
					t.Error("runner did not stop")
				}
			}()

			answer := readFile(t, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb"))
			_, sub := upload(t, s, ada, "ch1", answer, "")
			graded := waitGraded(t, s, ada, sub["id"].(string))
			if graded["status"] != "graded" || graded["score"] != graded["max_score"] {
				t.Fatalf("remote runner graded %v", graded)
			}
			if fp, _ := graded["env_fingerprint"].(string); fp == "" || fp == "local-cpu" {
				t.Fatalf("the score does not record the remote runner's environment fingerprint: %q", fp)
			}
			// The runner registered its build, shown to instructors as a label.
			staff := addUser(t, dbURL, "tina", "instructor")
			var fleet []RunnerJSONView
			getJSON(t, s.url+"/api/v1/runners", staff, &fleet)
			if len(fleet) != 1 || fleet[0].Labels["version"] != buildinfo.Version() {
				t.Errorf("the runner's version label: %+v", fleet)
			}

			// A late result for a job the server does not lease to this token.
			resp, b := request(t, "POST", s.url+"/api/runner/v1/jobs/1/complete", runnerTok,
				strings.NewReader(`{"lease_token":"stale","result":{"profile":"cpu"}}`), "application/json", nil)
			if resp.StatusCode != 409 {
				t.Fatalf("stale complete: %d %s", resp.StatusCode, b)
			}
			var p map[string]any
			if json.Unmarshal(b, &p) != nil || p["status"] != float64(409) {
				t.Fatalf("not a problem document: %s", b)
			}
		})
	}
}
