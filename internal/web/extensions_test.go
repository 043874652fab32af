package web_test

import (
	"html"
	"net/url"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// deadlineExercises copies ch1 with a deadline and a late penalty.
func deadlineExercises(t *testing.T) (exercises, answers string) {
	t.Helper()
	return exercisetest.CopyWith(t, "../../exercises", "../../answers", "ch1", map[string]any{
		"deadline": "2026-03-01T12:00:00Z", "late_penalty": []map[string]any{{"after": "0s", "multiplier": 0.5}}})
}

// TestExtensionPages: an instructor grants an extension on the page (a
// bad form shows every problem, in Chinese too), the learner's exercise
// page shows their own deadline, and revoking restores the exercise's.
func TestExtensionPages(t *testing.T) {
	t.Parallel()
	exDir, ansDir := deadlineExercises(t)
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, d, exDir, ansDir)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			learner := e.user(t, "ada", domain.RoleLearner)
			c, lc := client(), client()
			e.signIn(t, c, teacher)
			e.signIn(t, lc, learner)
			page := e.srv.URL + "/dashboard/exercises/ch1/extensions"

			if resp, _ := do(t, lc, "GET", page, nil, nil); resp.StatusCode != 403 {
				t.Errorf("learner on the extensions page: %d", resp.StatusCode)
			}
			_, stats := do(t, c, "GET", e.srv.URL+"/dashboard/exercises/ch1", nil, nil)
			if !strings.Contains(stats, `href="/dashboard/exercises/ch1/extensions"`) {
				t.Errorf("the exercise's dashboard does not link its extensions")
			}
			resp, body := do(t, c, "GET", page+"?lang=zh-CN", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if resp.StatusCode != 200 || m == nil || !strings.Contains(body, "批准延期") || !strings.Contains(body, "尚无延期") {
				t.Fatalf("extensions page (zh-CN): %d %s", resp.StatusCode, body)
			}
			resp, body = do(t, c, "POST", page, url.Values{"csrf": {m[1]}, "learner": {"teacher"}, "deadline": {"2026-02-01T00:00"},
				"late_penalty": {`[{"after": "1h", "multiplier": 3}]`}}, nil)
			if resp.StatusCode != 422 || !strings.Contains(body, "未能批准延期") || strings.Count(between(body, `id="ext-problems"`, "</ul>"), "<li>") != 3 {
				t.Errorf("bad grant: %d %s", resp.StatusCode, body)
			}
			if probs := html.UnescapeString(between(body, `id="ext-problems"`, "</ul>")); !strings.Contains(probs, "不是学员") ||
				!strings.Contains(probs, "不晚于练习的截止时间") || !strings.Contains(probs, "系数须在 0 到 1 之间") || strings.Contains(probs, "learner") {
				t.Errorf("the problems are not in Chinese: %s", probs)
			}
			if resp, _ := do(t, c, "POST", page, url.Values{"learner": {"ada"}, "deadline": {"2026-03-09T00:00"}}, nil); resp.StatusCode != 403 {
				t.Errorf("grant without CSRF: %d", resp.StatusCode)
			}
			resp, _ = do(t, c, "POST", page, url.Values{"csrf": {m[1]}, "learner": {"ada"}, "deadline": {"2026-03-09T00:00"}}, nil)
			if resp.StatusCode != 303 || resp.Header.Get("Location") != "/dashboard/exercises/ch1/extensions?done=granted" {
				t.Fatalf("grant: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			_, body = do(t, c, "GET", page+"?done=granted&lang=en", nil, nil)
			row := between(body, `<th scope="row">ada</th>`, "</tr>")
			if !strings.Contains(body, "The extension is granted.") || !strings.Contains(row, "2026-03-09 00:00:00 UTC") || !strings.Contains(row, "as the exercise") {
				t.Errorf("granted extension not listed: %s", body)
			}
			_, gb := do(t, c, "GET", e.srv.URL+"/dashboard/gradebook?exercise=ch1&lang=en", nil, nil)
			if row := between(gb, `<th scope="row">ada</th>`, "</tr>"); !strings.Contains(row, "extension to") || !strings.Contains(row, "2026-03-09 00:00:00 UTC") ||
				strings.Count(gb, "ext-badge") != 1 {
				t.Errorf("the gradebook does not mark ada's extension: %s", row)
			}
			_, mine := do(t, lc, "GET", e.srv.URL+"/exercises/ch1?lang=en", nil, nil)
			if dl := between(mine, `id="deadline"`, "</dd>"); !strings.Contains(dl, "2026-03-09 00:00:00 UTC") || !strings.Contains(dl, `id="extended"`) ||
				!strings.Contains(dl, "2026-03-01 12:00:00 UTC") {
				t.Errorf("the learner's page does not show their deadline: %s", dl)
			}

			resp, _ = do(t, c, "POST", page+"/ada/revoke", url.Values{"csrf": {m[1]}}, nil)
			if resp.StatusCode != 303 {
				t.Fatalf("revoke: %d", resp.StatusCode)
			}
			if resp, _ := do(t, c, "POST", page+"/ada/revoke", url.Values{"csrf": {m[1]}}, nil); resp.StatusCode != 404 {
				t.Errorf("revoke again: %d", resp.StatusCode)
			}
			_, mine = do(t, lc, "GET", e.srv.URL+"/exercises/ch1?lang=en", nil, nil)
			if dl := between(mine, `id="deadline"`, "</dd>"); !strings.Contains(dl, "2026-03-01 12:00:00 UTC") || strings.Contains(dl, `id="extended"`) {
				t.Errorf("after the revocation the learner's page shows: %s", dl)
			}
			ac := client()
			e.signIn(t, ac, e.user(t, "root", domain.RoleAdmin))
			_, audit := do(t, ac, "GET", e.srv.URL+"/admin/audit?lang=en", nil, nil)
			if !strings.Contains(audit, "extension granted") || !strings.Contains(audit, "extension revoked") || !strings.Contains(audit, "ada on ch1") {
				t.Errorf("the audit page does not show the extension's grant and revocation")
			}
		})
	}
}
