package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerproto"
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
			if err := e.db.SetRunnerScope(e.ctx, u.ID, fleet.RunnerScope{Profiles: []string{"cpu"}, Labels: map[string]string{"site": "lab1"}}); err != nil {
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
			// The fleet shows what it attested beside what it may be.
			staff := e.token(t, "tom", domain.RoleInstructor)
			var fleet []httpapi.RunnerJSON
			st, body, _ := e.call(t, "GET", "/api/v1/runners", staff, nil)
			if err := json.Unmarshal([]byte(body), &fleet); st != http.StatusOK || err != nil || len(fleet) != 1 {
				t.Fatalf("GET /api/v1/runners: %d %s", st, body)
			}
			if r := fleet[0]; r.Profile != "cpu" || r.Allowed == nil || strings.Join(r.Allowed.Profiles, ",") != "cpu" || r.Allowed.Labels["site"] != "lab1" {
				t.Errorf("fleet entry: attested %s, allowed %+v", r.Profile, r.Allowed)
			}
			// So does the runners page.
			admin, _, err := e.db.CreateUser(e.ctx, "root", domain.RoleAdmin)
			if err != nil {
				t.Fatal(err)
			}
			sid, _, err := e.db.CreateWebSession(e.ctx, admin.ID, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest("GET", e.url+"/admin/runners", nil)
			req.Header.Set("Cookie", "npugrade_session="+sid)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(page), `<td class="allowed"><code>cpu</code> <code>site=lab1</code>`) {
				t.Errorf("/admin/runners: %d, no allowed column with cpu and site=lab1", resp.StatusCode)
			}
		})
	}
}

// TestUnboundRunnerTokenIsCPUOnly: a runner token created without
// --profiles may register a CPU runner, and a made-up NPU report is
// refused with a problem saying how an admin allows it.
func TestUnboundRunnerTokenIsCPUOnly(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			tok := e.token(t, "any-runner", domain.RoleRunner)
			st, body, hdr := e.call(t, "POST", runnerproto.BasePath+"/register", tok, runnerproto.RegisterRequest{Name: "fake-a2", Slots: 1,
				Labels: map[string]string{"site": "lab1"}, Report: envprobe.Report{Profile: "npu-a2", Verdict: "ok"}})
			if st != http.StatusForbidden || !strings.HasPrefix(hdr.Get("Content-Type"), "application/problem+json") ||
				!strings.Contains(body, "bound to no profiles") || !strings.Contains(body, "--profiles npu-a2") {
				t.Errorf("an unbound token registering npu-a2: %d %s, want a 403 problem", st, body)
			}
			id := e.register(t, tok, "cpu-host")
			fleet := fleetOf(t, e)
			if len(fleet) != 1 || fleet[0].ID != id || fleet[0].Allowed == nil || strings.Join(fleet[0].Allowed.Profiles, ",") != "cpu" {
				t.Errorf("fleet of an unbound token's cpu runner: %+v", fleet)
			}
		})
	}
}

func fleetOf(t *testing.T, e *liveEnv) []httpapi.RunnerJSON {
	t.Helper()
	staff := e.token(t, "fleet-reader", domain.RoleAdmin)
	st, body, _ := e.call(t, "GET", "/api/v1/runners", staff, nil)
	var out []httpapi.RunnerJSON
	if err := json.Unmarshal([]byte(body), &out); st != 200 || err != nil {
		t.Fatalf("GET /api/v1/runners: %d %s", st, body)
	}
	return out
}
