package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestRunnerTokenActsOnlyAsItsRunners: runner2's token can neither claim
// as runner1 nor drain it; runner1's own token can do both.
func TestRunnerTokenActsOnlyAsItsRunners(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			tok1, tok2 := e.token(t, "runner1", domain.RoleRunner), e.token(t, "runner2", domain.RoleRunner)
			id1 := e.register(t, tok1, "r1")
			e.register(t, tok2, "r2")
			claim := runnerproto.ClaimRequest{RunnerID: id1, WaitSeconds: 0.1}
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok2, claim); st != http.StatusNotFound {
				t.Errorf("runner2's token claiming as runner1: %d %s, want 404", st, body)
			}
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/drain", tok2, runnerproto.DrainRequest{RunnerID: id1}); st != http.StatusNotFound {
				t.Errorf("runner2's token draining runner1: %d %s, want 404", st, body)
			}
			rs, err := e.db.Runners(e.ctx, e.db.Now().Add(-3600e9))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.ID == id1 && r.Draining {
					t.Error("runner1 is draining after another token asked")
				}
			}
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok1, claim); st != http.StatusNoContent {
				t.Errorf("runner1's own claim: %d %s", st, body)
			}
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/drain", tok1, runnerproto.DrainRequest{RunnerID: id1}); st != http.StatusNoContent {
				t.Errorf("runner1's own drain: %d %s", st, body)
			}
		})
	}
}

// TestRunnerTokenScope: a runner token bound to profiles and labels
// (npugrade user add --profiles/--labels) cannot register another
// environment or other labels; within its scope it registers.
func TestRunnerTokenScope(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			u, tok, err := e.db.CreateUser(e.ctx, "lab1-runner", domain.RoleRunner)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.db.SetRunnerScope(e.ctx, u.ID, store.RunnerScope{Profiles: []string{"cpu"}, Labels: map[string]string{"site": "lab1"}}); err != nil {
				t.Fatal(err)
			}
			reg := func(profile string, labels map[string]string) (int, string) {
				st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/register", tok, runnerproto.RegisterRequest{Name: "x", Slots: 1, Labels: labels,
					Report: envprobe.Report{Profile: profile, Verdict: "ok"}})
				return st, body
			}
			if st, body := reg("npu-a2", map[string]string{"site": "lab1"}); st != http.StatusForbidden || !strings.Contains(body, "only profiles cpu") {
				t.Errorf("a made-up NPU report: %d %s, want 403", st, body)
			}
			if st, body := reg("cpu", map[string]string{"site": "lab2"}); st != http.StatusForbidden || !strings.Contains(body, "site=lab1") {
				t.Errorf("another site's label: %d %s, want 403", st, body)
			}
			if st, body := reg("cpu", map[string]string{"site": "lab1", "extra": "y"}); st != http.StatusOK {
				t.Errorf("within its scope: %d %s", st, body)
			}
		})
	}
}
