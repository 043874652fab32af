package httpapi_test

import (
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

// TestEventsListScoreChanges: granting an extension to a learner whose
// late submission was penalised changes its score, and GET /api/v1/events
// lists the score-changed event (old and new score, reason, who) after the
// graded one; the cursor leaves nothing to read again; learners may not
// read events, and a bad query lists every problem.
func TestEventsListScoreChanges(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb",
				"deadline": "2026-03-01T12:00:00Z", "late_penalty": [{"after": "0s", "multiplier": 0.5}]}`)
			e.db.Clock = func() time.Time { return due.Add(48 * time.Hour) }
			cells := []domain.CellResult{{CellID: "open", Verdict: "pass", Points: 2, MaxPoints: 2, Counted: true}}
			id := e.graded(t, e.learner, "", store.Grade{Score: 1, MaxScore: 2, Profile: "cpu", Cells: cells,
				Message: "all graded cells pass; submitted after the deadline: score multiplied by 0.5"})
			if st, body := e.call(t, http.MethodPost, "/api/v1/exercises/pol/extensions", e.teacher, `{"learner": "lena", "deadline": "2026-03-05T00:00:00Z"}`); st != http.StatusCreated {
				t.Fatalf("grant: %d %s", st, body)
			}
			st, body := e.call(t, http.MethodGet, "/api/v1/events?learner=lena&exercise=pol", e.teacher, "")
			var page httpapi.EventsJSON
			if err := json.Unmarshal([]byte(body), &page); st != http.StatusOK || err != nil {
				t.Fatalf("events: %d %s", st, body)
			}
			var kinds []string
			var changed *domain.ScoreChanged
			for _, ev := range page.Events {
				kinds = append(kinds, ev.Kind)
				if ev.Kind == domain.EventScoreChanged {
					changed = &domain.ScoreChanged{}
					_ = json.Unmarshal(ev.Payload, changed)
				}
			}
			if strings.Join(kinds, ",") != "graded,score-changed" || changed == nil || changed.Submission != id ||
				changed.OldScore == nil || *changed.OldScore != 1 || changed.NewScore != 2 || changed.Reason != domain.ScoreReasonExtension || changed.Actor != "tom" {
				t.Errorf("events: %s", body)
			}
			if st, body := e.call(t, http.MethodGet, "/api/v1/events?kind=score-changed&after="+page.Next, e.teacher, ""); st != http.StatusOK || !strings.Contains(body, `"events":[]`) || !strings.Contains(body, `"next":"`+page.Next+`"`) {
				t.Errorf("after the cursor: %d %s", st, body)
			}
			if st, body := e.call(t, http.MethodGet, "/api/v1/events?kind=score-changed", e.teacher, ""); st != http.StatusOK || strings.Count(body, `"kind":"score-changed"`) != 1 {
				t.Errorf("by kind: %d %s", st, body)
			}
			if st, _ := e.call(t, http.MethodGet, "/api/v1/events", e.learner, ""); st != http.StatusForbidden {
				t.Errorf("a learner reads events: %d, want 403", st)
			}
			st, body = e.call(t, http.MethodGet, "/api/v1/events?after=x&kind=nope&limit=0&since=yesterday&learner=ghost", e.teacher, "")
			var prob struct{ Problems []string }
			_ = json.Unmarshal([]byte(body), &prob)
			if st != http.StatusUnprocessableEntity || len(prob.Problems) != 5 {
				t.Errorf("bad query: %d %s, want 422 with 5 problems", st, body)
			}
		})
	}
}
