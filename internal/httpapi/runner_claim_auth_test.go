package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestClaimAuthenticatesWithAJobQueued: with a job waiting, the claim
// authenticates in its own statement; a missing, guessed, learner's or
// revoked token, and another token's runner, get their refusals (401,
// 403, 404) and lease nothing; the runner's own token then gets the job.
func TestClaimAuthenticatesWithAJobQueued(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newLiveEnv(t, d, httpapi.DefaultTimeouts())
			ada := e.token(t, "ada", domain.RoleLearner)
			tok1, tok2 := e.token(t, "runner1", domain.RoleRunner), e.token(t, "runner2", domain.RoleRunner)
			id1 := e.register(t, tok1, "r1")
			e.submitStarter(t, ada, "ch1")
			claim := runnerproto.ClaimRequest{RunnerID: id1, WaitSeconds: 0.2}
			for _, c := range []struct {
				name, token string
				want        int
			}{{"no token", "", http.StatusUnauthorized}, {"a guessed token", "npg_guess", http.StatusUnauthorized},
				{"a learner's token", ada, http.StatusForbidden}, {"another runner token", tok2, http.StatusNotFound}} {
				if st, body, hdr := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", c.token, claim); st != c.want ||
					c.want == http.StatusUnauthorized && hdr.Get("WWW-Authenticate") == "" {
					t.Errorf("claim with %s: %d %s, want %d", c.name, st, body, c.want)
				}
			}
			st, claimed, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok1, claim)
			var l domain.Lease
			if err := json.Unmarshal([]byte(claimed), &l); st != http.StatusOK || err != nil || l.JobID == 0 || l.Attempt != 1 || len(l.Notebook) == 0 {
				t.Fatalf("runner1's own claim: %d %s", st, claimed)
			}
			u, err := e.db.UserByName(e.ctx, "runner1")
			if err != nil {
				t.Fatal(err)
			}
			if err := e.db.RevokeTokens(e.ctx, u.ID); err != nil {
				t.Fatal(err)
			}
			if st, body, _ := e.call(t, "POST", runnerproto.BasePath+"/jobs/claim", tok1, claim); st != http.StatusUnauthorized {
				t.Errorf("claim with a revoked token: %d %s, want 401", st, body)
			}
		})
	}
}
