package web_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestPagesInTheViewersZone: with the zone cookie app.js sets, every time
// on a page is in that zone and names it (no UTC beside UTC+8), and the
// extension form reads the deadline typed into it in that zone.
func TestPagesInTheViewersZone(t *testing.T) {
	t.Parallel()
	exDir, ansDir := deadlineExercises(t)
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, d, exDir, ansDir)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			e.user(t, "ada", domain.RoleLearner)
			c := client()
			e.signIn(t, c, teacher)
			base, _ := url.Parse(e.srv.URL)
			c.Jar.SetCookies(base, []*http.Cookie{{Name: "npugrade_tz", Value: "Asia/Shanghai", Path: "/"}})
			page := e.srv.URL + "/dashboard/exercises/ch1/extensions"

			resp, body := do(t, c, "GET", page+"?lang=en", nil, nil)
			body = html.UnescapeString(body)
			m := csrfField.FindStringSubmatch(body)
			if resp.StatusCode != 200 || m == nil {
				t.Fatalf("extensions page: %d", resp.StatusCode)
			}
			if !strings.Contains(body, `data-tz="Asia/Shanghai"`) || !strings.Contains(body, "2026-03-01 20:00:00 UTC+8") ||
				!strings.Contains(between(body, `id="ext-zone"`, "</span>"), "UTC+8") {
				t.Errorf("the exercise's deadline is not in the viewer's zone: %s", between(body, `<p class="muted">`, "</p>"))
			}
			if !strings.Contains(between(body, `<datalist id="ext-learners">`, "</datalist>"), `<option value="ada">`) ||
				strings.Contains(between(body, `<datalist id="ext-learners">`, "</datalist>"), `value="teacher"`) {
				t.Errorf("the learner picker: %s", between(body, `<datalist id="ext-learners">`, "</datalist>"))
			}

			// Steps chosen but none filled: refused with the reason.
			resp, body = do(t, c, "POST", page+"?lang=en", url.Values{"csrf": {m[1]}, "learner": {"ada"}, "deadline": {"2026-03-09T16:30"},
				"late_mode": {"steps"}, "late_after": {"", "x"}, "late_multiplier": {"", ""}}, nil)
			body = html.UnescapeString(body)
			if resp.StatusCode != 422 || !strings.Contains(body, "step 2: hours late") || !strings.Contains(body, `step 2: "" is not a number`) {
				t.Errorf("bad steps: %d %s", resp.StatusCode, between(body, `id="ext-problems"`, "</ul>"))
			}
			resp, _ = do(t, c, "POST", page, url.Values{"csrf": {m[1]}, "learner": {"ada"}, "deadline": {"2026-03-09T16:30"},
				"late_mode": {"steps"}, "late_after": {"24", "", ""}, "late_multiplier": {"0.8", "", ""}}, nil)
			if resp.StatusCode != 303 {
				t.Fatalf("grant: %d", resp.StatusCode)
			}
			list, err := e.db.Extensions(t.Context(), "ch1", false)
			if err != nil || len(list) != 1 || !list[0].Deadline.Equal(time.Date(2026, 3, 9, 8, 30, 0, 0, time.UTC)) ||
				!strings.Contains(string(list[0].LatePenalty), `"multiplier":0.8`) {
				t.Fatalf("stored extension: %+v %v", list, err)
			}
			_, body = do(t, c, "GET", page+"?lang=en", nil, nil)
			body = html.UnescapeString(body)
			row := between(body, `<th scope="row">ada</th>`, "</tr>")
			if !strings.Contains(row, "2026-03-09 16:30:00 UTC+8") || !strings.Contains(row, `datetime="2026-03-09T08:30:00Z"`) {
				t.Errorf("the granted deadline: %s", row)
			}
			if strings.Contains(strings.ReplaceAll(body, "UTC+8", ""), "UTC") {
				t.Errorf("a time in UTC on a page in UTC+8")
			}
		})
	}
}
