package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestWarmSparesReported: a runner's warm spares (how many, how many
// ready, the memory they hold) travel with its registration and its
// heartbeats and are what GET /api/v1/runners shows; out-of-range values
// are refused with every problem listed, and a token reports only its own
// runner's spares.
func TestWarmSparesReported(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			tok := e.token(t, "r1", domain.RoleRunner)
			report := envprobe.Validate(envprobe.Report{Arch: "x86_64", Python: "3.13.5", Torch: "2.6.0+debian", NPUGraphExBackend: true, Environment: "cpu"})
			register := func(ws *runnerproto.WarmSpares) (int, string) {
				st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/register", tok, runnerproto.RegisterRequest{Name: "r1", Slots: 2,
					Report: report, WarmSpares: ws})
				return st, body
			}
			st, body := register(&runnerproto.WarmSpares{PerSlot: 2, Kept: 1, Ready: 3, MemoryBytes: -1})
			if st != http.StatusUnprocessableEntity || !strings.Contains(body, "warm_spares.ready") || !strings.Contains(body, "warm_spares.memory_bytes") {
				t.Errorf("registration with ready > kept and negative memory: %d %s, want 422 listing both", st, body)
			}
			st, body = register(&runnerproto.WarmSpares{PerSlot: 2, Kept: 4, Ready: 4, MemoryBytes: 2 << 30})
			if st != http.StatusOK {
				t.Fatalf("register: %d %s", st, body)
			}
			var reg runnerproto.RegisterResponse
			_ = json.Unmarshal([]byte(body), &reg)
			staff := e.token(t, "staff", domain.RoleAdmin)
			spares := func(id string) *runnerproto.WarmSpares {
				t.Helper()
				st, body, _ := e.call(t, "GET", "/api/v1/runners", staff, nil)
				var fleet []httpapi.RunnerJSON
				if err := json.Unmarshal([]byte(body), &fleet); st != 200 || err != nil {
					t.Fatalf("GET /api/v1/runners: %d %s", st, body)
				}
				for _, r := range fleet {
					if r.ID == id {
						return r.WarmSpares
					}
				}
				t.Fatalf("runner %s not in the fleet", id)
				return nil
			}
			if got := spares(reg.RunnerID); got == nil || *got != (runnerproto.WarmSpares{PerSlot: 2, Kept: 4, Ready: 4, MemoryBytes: 2 << 30}) {
				t.Errorf("fleet after registration: warm_spares %+v", got)
			}
			// A runner without spares shows none.
			if id := e.register(t, e.token(t, "cold", domain.RoleRunner), "cold"); spares(id) != nil {
				t.Errorf("a runner without spares shows %+v", spares(id))
			}

			// Heartbeats update them (the runner holds a lease).
			ada := e.token(t, "ada", domain.RoleLearner)
			mp, ct := multipartBody(starterOf(t, "ch1"))
			req, _ := http.NewRequest("POST", e.url+"/api/v1/submissions", bytes.NewReader(mp))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+ada)
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 202 {
				t.Fatalf("submit: %v %v", resp, err)
			}
			st, claimed, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok, runnerproto.ClaimRequest{RunnerID: reg.RunnerID, WaitSeconds: 5})
			var l domain.Lease
			if err := json.Unmarshal([]byte(claimed), &l); st != 200 || err != nil {
				t.Fatalf("claim: %d %s", st, claimed)
			}
			hb := fmt.Sprintf("%s/jobs/%d/heartbeat", runnerproto.BasePath, l.JobID)
			now := runnerproto.WarmSpares{PerSlot: 2, Kept: 4, Ready: 3, MemoryBytes: 3 << 29}
			if st, body, _ := e.call(t, "POST", hb, tok, runnerproto.HeartbeatRequest{LeaseToken: l.Token, RunnerID: reg.RunnerID, WarmSpares: &now}); st != 200 {
				t.Fatalf("heartbeat with warm spares: %d %s", st, body)
			}
			if got := spares(reg.RunnerID); got == nil || *got != now {
				t.Errorf("fleet after a heartbeat: warm_spares %+v, want %+v", got, now)
			}
			bad := runnerproto.WarmSpares{PerSlot: -1, Kept: 4, Ready: 9}
			if st, body, _ := e.call(t, "POST", hb, tok, runnerproto.HeartbeatRequest{LeaseToken: l.Token, RunnerID: reg.RunnerID, WarmSpares: &bad}); st != http.StatusUnprocessableEntity ||
				!strings.Contains(body, "per_slot") || !strings.Contains(body, "warm_spares.ready") {
				t.Errorf("heartbeat with bad warm spares: %d %s, want 422 listing both", st, body)
			}
			// Another token's runner id: refused, nothing recorded for it.
			otherTok := e.token(t, "r2", domain.RoleRunner)
			otherID := e.register(t, otherTok, "r2")
			fake := runnerproto.WarmSpares{PerSlot: 9, Kept: 9, Ready: 9, MemoryBytes: 9}
			if st, body, _ := e.call(t, "POST", hb, tok, runnerproto.HeartbeatRequest{LeaseToken: l.Token, RunnerID: otherID, WarmSpares: &fake}); st != http.StatusNotFound {
				t.Errorf("heartbeat naming another token's runner: %d %s, want 404", st, body)
			}
			if got := spares(otherID); got != nil {
				t.Errorf("another token set r2's warm spares: %+v", got)
			}
			// A plain heartbeat (no spares) leaves them as they were.
			if st, body, _ := e.call(t, "POST", hb, tok, runnerproto.LeaseRequest{LeaseToken: l.Token}); st != 200 {
				t.Errorf("plain heartbeat: %d %s", st, body)
			}
			if got := spares(reg.RunnerID); got == nil || *got != now {
				t.Errorf("fleet after a plain heartbeat: warm_spares %+v, want %+v", got, now)
			}
		})
	}
}
