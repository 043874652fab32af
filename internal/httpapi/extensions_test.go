package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestExtensionsHTTP: POST, GET and DELETE /api/v1/exercises/{id}/extensions
// for instructors only; a bad grant lists every problem; a grant rescores
// the learner's late submission and a revocation restores the penalty.
func TestExtensionsHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb",
				"deadline": "2026-03-01T12:00:00Z", "late_penalty": [{"after": "0s", "multiplier": 0.5}]}`)
			e.db.Clock = func() time.Time { return due.Add(48 * time.Hour) }
			cells := []domain.CellResult{
				{CellID: "open", Verdict: "pass", Points: 1, MaxPoints: 1, Counted: true},
				{CellID: "closed", Verdict: "pass", Points: 1, MaxPoints: 1, Counted: true},
				{CellID: "later", Verdict: "pass", Points: 1, MaxPoints: 1, Counted: true},
			}
			id := e.graded(t, e.learner, "", store.Grade{Score: 1.5, MaxScore: 3, Profile: "cpu", Cells: cells,
				Message: "all graded cells pass; submitted after the deadline: score multiplied by 0.5"})
			score := func() float64 {
				_, body := e.get(t, e.teacher, "/api/v1/submissions/"+id)
				var s httpapi.SubmissionJSON
				_ = json.Unmarshal([]byte(body), &s)
				return s.Score
			}

			const path = "/api/v1/exercises/pol/extensions"
			if st, _ := e.call(t, http.MethodPost, path, e.learner, `{"learner": "lena", "deadline": "2026-04-01T00:00:00Z"}`); st != http.StatusForbidden {
				t.Errorf("learner grants: %d, want 403", st)
			}
			st, body := e.call(t, http.MethodPost, path, e.teacher, `{"learner": "ghost", "deadline": "soon", "late_penalty": [{"after": "1h", "multiplier": -1}]}`)
			var prob struct{ Problems []string }
			_ = json.Unmarshal([]byte(body), &prob)
			if st != http.StatusUnprocessableEntity || len(prob.Problems) != 3 {
				t.Errorf("bad grant: %d %s, want 422 with 3 problems", st, body)
			}
			if st, _ := e.call(t, http.MethodPost, "/api/v1/exercises/nope/extensions", e.teacher, `{"learner": "lena", "deadline": "2026-04-01T00:00:00Z"}`); st != http.StatusNotFound {
				t.Errorf("unknown exercise: %d", st)
			}
			if st, body := e.call(t, http.MethodPost, path, e.teacher, `{"learner": 7}`); st != http.StatusUnprocessableEntity {
				t.Errorf("not the request's shape: %d %s", st, body)
			}

			st, body = e.call(t, http.MethodPost, path, e.teacher, `{"learner": "lena", "deadline": "2026-03-05T00:00:00Z"}`)
			if st != http.StatusCreated || !strings.Contains(body, `"rescored":1`) {
				t.Fatalf("grant: %d %s", st, body)
			}
			if s := score(); s != 3 {
				t.Errorf("score after the grant %g, want 3 (no penalty)", s)
			}
			st, body = e.call(t, http.MethodGet, path, e.teacher, "")
			if st != http.StatusOK || !strings.Contains(body, `"learner":"lena"`) || !strings.Contains(body, `"granted_by":"tom"`) {
				t.Errorf("list: %d %s", st, body)
			}
			if st, _ := e.call(t, http.MethodGet, path, e.learner, ""); st != http.StatusForbidden {
				t.Errorf("learner lists: %d, want 403", st)
			}
			if st, body := e.call(t, http.MethodDelete, path+"/lena", e.teacher, ""); st != http.StatusOK || !strings.Contains(body, `"revoked_by":"tom"`) {
				t.Errorf("revoke: %d %s", st, body)
			}
			if s := score(); s != 1.5 {
				t.Errorf("score after the revocation %g, want 1.5", s)
			}
			if st, _ := e.call(t, http.MethodDelete, path+"/lena", e.teacher, ""); st != http.StatusNotFound {
				t.Errorf("revoke again: %d, want 404", st)
			}
			if st, body := e.call(t, http.MethodGet, path+"?revoked=true", e.teacher, ""); st != http.StatusOK || !strings.Contains(body, `"revoked_at"`) {
				t.Errorf("list with revoked: %d %s", st, body)
			}
		})
	}
}

// TestExtensionKeepsDetailsHidden: after the exercise's deadline, a
// learner without an extension sees the details of after_due_date
// questions, but one with an extension does not until their own
// deadline (they could otherwise read the expected output while still
// working).
func TestExtensionKeepsDetailsHidden(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb", "deadline": "2026-03-01T12:00:00Z"}`)
			e.db.Clock = func() time.Time { return due.Add(-time.Hour) }
			_, bobTok, _ := e.db.CreateUser(ctx, "bob", domain.RoleLearner)
			ids := map[string]string{}
			for name, tok := range map[string]string{"lena": e.learner, "bob": bobTok} {
				cells := []domain.CellResult{{CellID: "later", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "LATER-OBS", Expected: "LATER-EXP"}}
				ids[name] = e.graded(t, tok, "", store.Grade{MaxScore: 1, Profile: "cpu", Cells: cells})
			}
			req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/api/v1/exercises/pol/extensions", strings.NewReader(`{"learner": "lena", "deadline": "2026-03-03T12:00:00Z"}`))
			req.Header.Set("Authorization", "Bearer "+e.teacher)
			req.Header.Set("Content-Type", "application/json")
			if st, body := e.do(t, req); st != http.StatusCreated {
				t.Fatalf("grant: %d %s", st, body)
			}
			e.db.Clock = func() time.Time { return due.Add(24 * time.Hour) }
			if _, body := e.get(t, bobTok, "/api/v1/submissions/"+ids["bob"]); !strings.Contains(body, "LATER-EXP") {
				t.Errorf("bob, past the deadline, does not see the details: %s", body)
			}
			_, body := e.get(t, e.learner, "/api/v1/submissions/"+ids["lena"])
			if strings.Contains(body, "LATER-EXP") || strings.Contains(body, "LATER-OBS") || !strings.Contains(body, "2026-03-03 12:00 UTC") {
				t.Errorf("lena, before her own deadline, sees the details: %s", body)
			}
			if _, body := e.get(t, e.learner, "/api/v1/submissions?exercise=pol"); strings.Contains(body, "LATER-EXP") {
				t.Errorf("lena's list shows the details: %s", body)
			}
			e.db.Clock = func() time.Time { return due.Add(72 * time.Hour) }
			if _, body := e.get(t, e.learner, "/api/v1/submissions/"+ids["lena"]); !strings.Contains(body, "LATER-EXP") {
				t.Errorf("lena, past her own deadline, does not see the details: %s", body)
			}
		})
	}
}
