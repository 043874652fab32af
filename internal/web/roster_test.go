package web_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// uploadRoster posts a roster file on the admin page's form.
func uploadRoster(t *testing.T, c *http.Client, base, csrf, body string) (*http.Response, string) {
	t.Helper()
	return postFile(t, c, base+"/admin/users/import", csrf, "roster", []byte(body))
}

// TestRosterUploadAndSections: an admin uploads a roster on the users
// page and downloads the new users' tokens once; a bad roster lists every
// problem; sections then filter the gradebook (page and CSV) and the
// dashboard.
func TestRosterUploadAndSections(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, d)
			admin := e.user(t, "root", domain.RoleAdmin)
			ac := client()
			e.signIn(t, ac, admin)
			_, body := do(t, ac, "GET", e.srv.URL+"/admin/users?lang=zh-CN", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if m == nil || !strings.Contains(body, `id="roster-form"`) || !strings.Contains(body, "导入名单") {
				t.Fatalf("users page has no roster form")
			}
			roster := "name,student_number,section,role\nAda Li,A001,Red,learner\nBo Wu,B002,Blue,\nCy Xu,C003,Red,learner\n"
			if resp, _ := uploadRoster(t, ac, e.srv.URL, "", roster); resp.StatusCode != 403 {
				t.Errorf("roster without CSRF: %d", resp.StatusCode)
			}
			resp, body := uploadRoster(t, ac, e.srv.URL, m[1], "name,student_number,section,role\nX,,Red,learner\nY,Y1,Red,god\n")
			if resp.StatusCode != 422 || strings.Count(between(body, `id="roster-problems"`, "</ul>"), "<li>") != 2 {
				t.Errorf("bad roster: %d %s", resp.StatusCode, body)
			}
			resp, body = uploadRoster(t, ac, e.srv.URL, m[1], roster)
			if resp.StatusCode != 201 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") ||
				!strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("roster import: %d %v", resp.StatusCode, resp.Header)
			}
			recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if err != nil || len(recs) != 4 {
				t.Fatalf("tokens CSV: %v %q", err, body)
			}
			tokens := map[string]string{}
			for _, r := range recs[1:] {
				tokens[r[0]] = r[4]
			}
			// Again: nobody new, so the page says what happened and no token is shown.
			resp, body = uploadRoster(t, ac, e.srv.URL, m[1], strings.Replace(roster, "Bo Wu,B002,Blue", "Bo Wu,B002,Red", 1))
			if resp.StatusCode != 200 || !strings.Contains(between(body, `id="roster-done"`, "</p>"), "0 / 1 / 2") || strings.Contains(body, `id="new-token"`) {
				t.Errorf("re-import: %d %s", resp.StatusCode, between(body, `id="roster-done"`, "</p>"))
			}
			if u, err := e.db.UserByToken(ctx, tokens["B002"]); err != nil || u.Section != "Red" || u.FullName != "Bo Wu" {
				t.Errorf("B002: %+v %v", u, err)
			}
			if err := e.db.RawExec(ctx, "UPDATE users SET section = 'Blue' WHERE name = 'C003'"); err != nil {
				t.Fatal(err)
			}

			// Sections filter the gradebook and the dashboard.
			seedSections(t, e.db)
			_, body = do(t, ac, "GET", e.srv.URL+"/dashboard/gradebook?section=Red&lang=en", nil, nil)
			if !strings.Contains(body, `<option value="Red" selected>`) || !strings.Contains(body, "A001") || !strings.Contains(body, "B002") || strings.Contains(body, "C003") {
				t.Errorf("gradebook of section Red: %s", between(body, `id="gradebook"`, "</table>"))
			}
			if !strings.Contains(body, `href="/api/v1/gradebook.csv?section=Red"`) {
				t.Errorf("the CSV link drops the section")
			}
			_, body = do(t, ac, "GET", e.srv.URL+"/api/v1/gradebook.csv?section=Blue", nil, nil)
			if !strings.Contains(body, "C003,") || strings.Contains(body, "A001") {
				t.Errorf("CSV of section Blue: %s", body)
			}
			_, body = do(t, ac, "GET", e.srv.URL+"/dashboard?section=Blue&lang=en", nil, nil)
			recent := between(body, `id="recent"`, "</table>")
			if !strings.Contains(recent, "C003") || strings.Contains(recent, "A001") || !strings.Contains(body, `id="section-filter"`) {
				t.Errorf("dashboard of section Blue: %s", recent)
			}
			_, body = do(t, ac, "GET", e.srv.URL+"/dashboard?lang=en", nil, nil)
			if recent := between(body, `id="recent"`, "</table>"); !strings.Contains(recent, "C003") || !strings.Contains(recent, "A001") {
				t.Errorf("dashboard of every section: %s", recent)
			}
		})
	}
}

// seedSections gives A001 and C003 a graded submission of ch1.
func seedSections(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	for i, name := range []string{"A001", "C003"} {
		u, err := db.UserByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		sha := fmt.Sprintf("%064d", i+1)
		if err := db.RawExec(ctx, "INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, 1, ?, ?)", sha, []byte("x"), db.Now()); err != nil {
			t.Fatal(err)
		}
		if err := db.RawExec(ctx, `INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, score, max_score, created_at, graded_at)
			VALUES (?, ?, 'ch1', 'v', ?, 'graded', 1, 2, ?, ?)`, "sub-"+name, u.ID, sha, db.Now(), db.Now()); err != nil {
			t.Fatal(err)
		}
	}
}
