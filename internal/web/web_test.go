package web_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/httpapi/apitest"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

type env struct {
	db  *store.DB
	srv *httptest.Server
	cat *exercise.Catalog
}

func newEnv(t testing.TB, dialect string) *env {
	t.Helper()
	return newEnvWith(t, dialect, "../../exercises", "../../answers")
}

func newEnvWith(t testing.TB, dialect, exercises, answers string) *env {
	t.Helper()
	db := storetest.Open(t, dialect)
	cat, err := exercise.Load(exercises, answers)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q := jobs.New(db, log)
	s := compose.Server(compose.Config{DB: db, Queue: q, Catalog: cat, Log: log})
	srv := httptest.NewServer(apitest.Handler(t, s.Handler()))
	t.Cleanup(srv.Close)
	return &env{db: db, srv: srv, cat: cat}
}

func (e *env) user(t testing.TB, name string, role domain.Role) string {
	t.Helper()
	_, tok, err := e.db.CreateUser(context.Background(), name, role)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// signIn signs c in with token on the sign-in form.
func (e *env) signIn(t *testing.T, c *http.Client, token string) {
	t.Helper()
	if resp, body := do(t, c, "POST", e.srv.URL+"/login", url.Values{"token": {token}}, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d %s", resp.StatusCode, body)
	}
}

// client is a browser-like client: a cookie jar and no redirect following.
func client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, u string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func TestSignInSessionsAndCSRF(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			learner := e.user(t, "ada", domain.RoleLearner)
			admin := e.user(t, "root", domain.RoleAdmin)
			runner := e.user(t, "r1", domain.RoleRunner)
			c := client()

			// Anonymous pages go to the sign-in page and come back.
			for _, p := range []string{"/", "/exercises", "/dashboard", "/admin/users", "/submissions/x"} {
				resp, _ := do(t, c, "GET", e.srv.URL+p, nil, nil)
				if resp.StatusCode != 303 || resp.Header.Get("Location") != "/login?next="+url.QueryEscape(p) {
					t.Errorf("anonymous %s: %d %s", p, resp.StatusCode, resp.Header.Get("Location"))
				}
			}
			resp, body := do(t, c, "GET", e.srv.URL+"/login", nil, map[string]string{"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})
			if resp.StatusCode != 200 || !strings.Contains(body, `<html lang="zh-CN"`) || !strings.Contains(body, "登录") {
				t.Errorf("Chinese sign-in page: %d", resp.StatusCode)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
				t.Errorf("CSP %q", csp)
			}
			// Bad tokens, runner tokens, cross-site posts and open redirects.
			for _, tc := range []struct {
				token, next, origin string
				status              int
				location            string
			}{
				{"npg_wrong", "", "", 401, ""},
				{runner, "", "", 401, ""},
				{learner, "", "http://evil.example", 403, ""},
				{learner, "//evil.example/x", "", 303, "/exercises"},
				{learner, "/exercises/ch1", e.srv.URL, 303, "/exercises/ch1"},
			} {
				hdr := map[string]string{}
				if tc.origin != "" {
					hdr["Origin"] = tc.origin
				}
				resp, _ := do(t, client(), "POST", e.srv.URL+"/login", url.Values{"token": {tc.token}, "next": {tc.next}}, hdr)
				if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
					t.Errorf("login %+v: %d %q", tc, resp.StatusCode, resp.Header.Get("Location"))
				}
			}
			// A good sign-in sets a hardened cookie.
			resp, _ = do(t, c, "POST", e.srv.URL+"/login", url.Values{"token": {admin}}, nil)
			if resp.StatusCode != 303 || resp.Header.Get("Location") != "/dashboard" {
				t.Fatalf("admin login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}
			sc := resp.Header.Get("Set-Cookie")
			if !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Lax") || strings.Contains(sc, "Secure") {
				t.Errorf("cookie %q", sc)
			}
			resp, _ = do(t, client(), "POST", e.srv.URL+"/login", url.Values{"token": {admin}}, map[string]string{"X-Forwarded-Proto": "https"})
			if !strings.Contains(resp.Header.Get("Set-Cookie"), "Secure") {
				t.Errorf("cookie behind TLS: %q", resp.Header.Get("Set-Cookie"))
			}
			resp, body = do(t, c, "GET", e.srv.URL+"/admin/users", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if resp.StatusCode != 200 || m == nil {
				t.Fatalf("users page: %d", resp.StatusCode)
			}
			// A form without the CSRF token, or with another, is refused.
			for _, tok := range []string{"", "00", strings.Repeat("a", len(m[1]))} {
				resp, _ = do(t, c, "POST", e.srv.URL+"/admin/users", url.Values{"csrf": {tok}, "name": {"x" + tok}, "role": {"learner"}}, nil)
				if resp.StatusCode != 403 {
					t.Errorf("CSRF token %q: %d", tok, resp.StatusCode)
				}
			}
			if _, err := e.db.UserByName(context.Background(), "x"); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Error("a user was created without a CSRF token")
			}
			resp, body = do(t, c, "POST", e.srv.URL+"/admin/users", url.Values{"csrf": {m[1]}, "name": {"grace"}, "role": {"learner"}}, nil)
			if resp.StatusCode != 201 || !strings.Contains(body, `id="new-token">npg_`) {
				t.Errorf("create user: %d", resp.StatusCode)
			}
			resp, body = do(t, c, "POST", e.srv.URL+"/admin/users", url.Values{"csrf": {m[1]}, "name": {"grace"}, "role": {"learner"}}, nil)
			if resp.StatusCode != 409 || !strings.Contains(body, "already exists") { // ECONFLICT, as the API says it
				t.Errorf("duplicate user: %d", resp.StatusCode)
			}
			// Learners may not open instructor or admin pages.
			lc := client()
			e.signIn(t, lc, learner)
			for _, p := range []string{"/dashboard", "/dashboard/gradebook", "/admin/users", "/admin/runners"} {
				if resp, _ := do(t, lc, "GET", e.srv.URL+p, nil, nil); resp.StatusCode != 403 {
					t.Errorf("learner %s: %d", p, resp.StatusCode)
				}
			}
			if resp, _ := do(t, lc, "GET", e.srv.URL+"/submissions/nope", nil, nil); resp.StatusCode != 404 {
				t.Errorf("unknown submission: %d", resp.StatusCode)
			}
			// Sign out needs the CSRF token; afterwards the cookie is dead.
			if resp, _ := do(t, c, "POST", e.srv.URL+"/logout", url.Values{}, nil); resp.StatusCode != 403 {
				t.Errorf("logout without CSRF: %d", resp.StatusCode)
			}
			if resp, _ := do(t, c, "POST", e.srv.URL+"/logout", url.Values{"csrf": {m[1]}}, nil); resp.StatusCode != 303 {
				t.Errorf("logout: %d", resp.StatusCode)
			}
			if resp, _ := do(t, c, "GET", e.srv.URL+"/dashboard", nil, nil); resp.StatusCode != 303 {
				t.Errorf("after logout: %d", resp.StatusCode)
			}
		})
	}
}

func TestGradebookCSV(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			learner := e.user(t, "=HYPERLINK(1)", domain.RoleLearner)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			seed(t, e.db, 3, []string{"ch1", "ch2"}, 2)
			for _, tc := range []struct {
				name, auth string
				status     int
			}{
				{"anonymous", "", 401}, {"bad token", "Bearer npg_x", 401}, {"learner", "Bearer " + learner, 403},
			} {
				resp, body := do(t, client(), "GET", e.srv.URL+"/api/v1/gradebook.csv", nil, map[string]string{"Authorization": tc.auth})
				if resp.StatusCode != tc.status || resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Errorf("%s: %d %s %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
			}
			resp, body := do(t, client(), "GET", e.srv.URL+"/api/v1/gradebook.csv?exercise=ch9", nil, map[string]string{"Authorization": "Bearer " + teacher})
			if resp.StatusCode != 422 {
				t.Errorf("unknown exercise: %d %s", resp.StatusCode, body)
			}
			resp, body = do(t, client(), "GET", e.srv.URL+"/api/v1/gradebook.csv", nil, map[string]string{"Authorization": "Bearer " + teacher})
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
				t.Fatalf("csv: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			// 4 learners × 5 catalog exercises, plus the header.
			if len(recs) != 1+4*len(e.cat.List()) || strings.Join(recs[0], ",") != "learner,exercise,policy,score,max_score,attempts,submission_id,graded_at,section,status,manual_waiting,name,score_before_penalty" {
				t.Fatalf("%d records, header %v", len(recs), recs[0])
			}
			var formula, scored int
			for _, r := range recs[1:] {
				if r[0] == "'=HYPERLINK(1)" {
					formula++
				}
				if r[5] == "2" {
					scored++
					if r[3] != "9" || r[4] != "10" || r[2] != "best" || r[6] == "" || r[7] == "" {
						t.Errorf("scored row %v", r)
					}
				}
			}
			if formula != len(e.cat.List()) || scored != 3*2 {
				t.Errorf("formula-safe rows %d, scored rows %d", formula, scored)
			}
			// A signed-in instructor's browser may export too; the filters apply.
			c := client()
			e.signIn(t, c, teacher)
			resp, body = do(t, c, "GET", e.srv.URL+"/api/v1/gradebook.csv?exercise=ch2&learner=learner-000001", nil, nil)
			if resp.StatusCode != 200 || strings.Count(body, "\n") != 2 || !strings.Contains(body, "learner-000001,ch2,best,9,10,2,") {
				t.Errorf("session export: %d %q", resp.StatusCode, body)
			}
		})
	}
}

// seed writes learners × exercises × attempts graded submissions in bulk
// (scores 9 then 3 of 10), straight into the tables.
func seed(t testing.TB, db *store.DB, learners int, exercises []string, attempts int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Add(-time.Hour)
	err := db.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.RawExec("INSERT INTO blobs (sha256, size, data, created_at) VALUES ('seed', 2, ?, ?)", []byte("{}"), now); err != nil {
			return err
		}
		users := make([]map[string]any, 0, 1000)
		subs := make([]map[string]any, 0, 1000)
		flush := func() error {
			if len(users) > 0 {
				if err := tx.RawInsert("users", users); err != nil {
					return err
				}
				users = users[:0]
			}
			if len(subs) > 0 {
				if err := tx.RawInsert("submissions", subs); err != nil {
					return err
				}
				subs = subs[:0]
			}
			return nil
		}
		var firstID int64
		if err := tx.RawScan(&firstID, "SELECT COALESCE(MAX(id), 0) FROM users"); err != nil {
			return err
		}
		for i := 0; i < learners; i++ {
			id := firstID + int64(i) + 1
			users = append(users, map[string]any{"id": id, "name": fmt.Sprintf("learner-%06d", i), "role": "learner", "created_at": now})
			for _, ex := range exercises {
				for a := 0; a < attempts; a++ {
					score := 9.0
					if a > 0 {
						score = 3
					}
					at := now.Add(time.Duration(a) * time.Second)
					subs = append(subs, map[string]any{"id": fmt.Sprintf("s%07d%s%d", id, ex, a), "user_id": id, "exercise_id": ex,
						"exercise_version": "v", "notebook_sha256": "seed", "status": "graded", "score": score, "max_score": 10.0,
						"created_at": at, "graded_at": at.Add(3 * time.Second)})
				}
			}
			if len(subs) >= 1000 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if db.Dialect == "postgres" {
			return tx.RawExec("SELECT setval(pg_get_serial_sequence('users', 'id'), (SELECT MAX(id) FROM users))")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
}

func TestRegradePages(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			c := client()
			e.signIn(t, c, teacher)
			resp, body := do(t, c, "GET", e.srv.URL+"/dashboard/regrades", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if resp.StatusCode != 200 || m == nil || !strings.Contains(body, `name="mode"`) {
				t.Fatalf("regrade form: %d", resp.StatusCode)
			}
			resp, body = do(t, c, "POST", e.srv.URL+"/dashboard/regrades", url.Values{"csrf": {m[1]}, "exercise": {"ch9"}, "mode": {"twice"}}, nil)
			if resp.StatusCode != 422 || !strings.Contains(body, "ch9") || !strings.Contains(body, "twice") {
				t.Errorf("invalid regrade: %d %s", resp.StatusCode, body)
			}
			if resp, _ := do(t, c, "POST", e.srv.URL+"/dashboard/regrades", url.Values{"exercise": {"ch1"}, "mode": {"recompare"}}, nil); resp.StatusCode != 403 {
				t.Errorf("stage without CSRF: %d", resp.StatusCode)
			}
			resp, _ = do(t, c, "POST", e.srv.URL+"/dashboard/regrades", url.Values{"csrf": {m[1]}, "exercise": {"ch1"}, "mode": {"recompare"}, "all": {"1"}}, nil)
			loc := resp.Header.Get("Location")
			if resp.StatusCode != 303 || !strings.HasPrefix(loc, "/dashboard/regrades/") {
				t.Fatalf("stage: %d %s", resp.StatusCode, loc)
			}
			resp, body = do(t, c, "GET", e.srv.URL+loc, nil, nil)
			if resp.StatusCode != 200 || !strings.Contains(body, `id="rg-state"`) {
				t.Fatalf("regrade page: %d", resp.StatusCode)
			}
			resp, _ = do(t, c, "POST", e.srv.URL+loc+"/discard", url.Values{"csrf": {m[1]}}, nil)
			if resp.StatusCode != 303 {
				t.Errorf("discard: %d", resp.StatusCode)
			}
			if _, body = do(t, c, "GET", e.srv.URL+loc, nil, nil); !strings.Contains(body, ">discarded<") {
				t.Errorf("regrade not discarded")
			}
			if resp, _ := do(t, c, "POST", e.srv.URL+loc+"/apply", url.Values{"csrf": {m[1]}}, nil); resp.StatusCode != 409 && resp.StatusCode != 422 {
				t.Errorf("apply after discard: %d", resp.StatusCode)
			}
			if resp, _ := do(t, c, "GET", e.srv.URL+"/dashboard/regrades/x", nil, nil); resp.StatusCode != 404 {
				t.Errorf("bad id: %d", resp.StatusCode)
			}
			// Past regrades are listed under the form, with their outcome.
			_, body = do(t, c, "GET", e.srv.URL+"/dashboard/regrades", nil, nil)
			id := strings.TrimPrefix(loc, "/dashboard/regrades/")
			if !strings.Contains(body, `id="rg-past"`) || !strings.Contains(body, `<a href="`+loc+`">`+id+`</a>`) ||
				!strings.Contains(between(body, `<a href="`+loc+`">`, "</tr>"), "discarded") {
				t.Errorf("past regrades not listed")
			}
		})
	}
}

// TestLearnerPageRedactsHiddenDetails: a question with visibility hidden
// shows its verdict to the learner but not its output or message; the
// instructor sees everything.
func TestLearnerPageRedactsHiddenDetails(t *testing.T) {
	t.Parallel()
	exDir, ansDir := exercisetest.CopyWith(t, "../../exercises", "../../answers", "ch1", map[string]any{
		"visibility": map[string]string{"q1": "hidden"}})
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnvWith(t, d, exDir, ansDir)
			learner := e.user(t, "ada", domain.RoleLearner)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			ctx := context.Background()
			u, _ := e.db.UserByName(ctx, "ada")
			q := jobs.New(e.db, nil)
			sub, _, err := e.db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v",
				Upload: []byte("{}"), Rebuilt: []byte("{}"), Job: q.GradeJob("ch1", domain.Requirement{}, 1)})
			if err != nil {
				t.Fatal(err)
			}
			err = e.db.InTx(context.Background(), func(tx *store.Tx) error {
				return tx.SaveGrade(store.Grade{Status: domain.StatusGraded, SubmissionID: sub.ID, Score: 1, MaxScore: 2, Cells: []domain.CellResult{
					{CellID: "q1", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true, Message: "SECRET-MESSAGE", Observed: "SECRET-OBSERVED"},
					{CellID: "q2", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true, Message: "visible-message", Observed: "visible-output"},
				}})
			})
			if err != nil {
				t.Fatal(err)
			}
			lc, tc := client(), client()
			e.signIn(t, lc, learner)
			e.signIn(t, tc, teacher)
			_, body := do(t, lc, "GET", e.srv.URL+"/submissions/"+sub.ID, nil, nil)
			if strings.Contains(body, "SECRET") || !strings.Contains(body, "details of this question are") ||
				strings.Contains(body, "visible-output") || !strings.Contains(body, "releases feedback") || !strings.Contains(body, "mismatch") {
				t.Errorf("learner page does not redact q1, or shows q2 (after_due_date, no deadline) before a release:\n%s", body)
			}
			_, body = do(t, tc, "GET", e.srv.URL+"/dashboard/submissions/"+sub.ID, nil, nil)
			if !strings.Contains(body, "SECRET-OBSERVED") {
				t.Error("the instructor does not see the hidden details")
			}
		})
	}
}
