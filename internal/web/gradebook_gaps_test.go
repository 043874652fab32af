package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// scoreCh1 stores a submission of ch1 by learner, scored for q1 (pass or
// not) with a manual question waiting for a person when pending.
func scoreCh1(t *testing.T, db *store.DB, learner string, pass, pending bool) string {
	t.Helper()
	ctx := context.Background()
	u, err := db.UserByName(ctx, learner)
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v",
		Upload: []byte("{}"), Rebuilt: []byte("{}"), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	q1 := domain.CellResult{CellID: "q1", Verdict: domain.VerdictMismatch, Counted: true, MaxPoints: 1, Message: "wrong"}
	if pass {
		q1.Verdict, q1.Points, q1.Message = domain.VerdictPass, 1, ""
	}
	cells := []domain.CellResult{q1}
	if pending {
		cells = append(cells, domain.CellResult{CellID: "explain", Verdict: domain.VerdictNeedsManual, Counted: true, MaxPoints: 2})
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		return tx.SaveGrade(store.Grade{Status: scoring.Status(cells), SubmissionID: sub.ID, Score: q1.Points, MaxScore: 3, Cells: cells})
	}); err != nil {
		t.Fatal(err)
	}
	return sub.ID
}

// TestGradebookShowsManualPending: a submission graded for its automatic
// part and waiting for manual grading is in the gradebook page (marked in
// both languages), the CSV (with the section and status columns) and the
// learner's counted score; the exercise's statistics follow ?section=.
func TestGradebookShowsManualPending(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, d)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			ada := e.user(t, "ada", domain.RoleLearner)
			e.user(t, "bob", domain.RoleLearner)
			if err := e.db.RawExec(ctx, "UPDATE users SET section = CASE name WHEN 'ada' THEN 'Red' ELSE 'Blue' END, full_name = CASE name WHEN 'ada' THEN '李雅' ELSE '' END WHERE role = 'learner'"); err != nil {
				t.Fatal(err)
			}
			adaSub := scoreCh1(t, e.db, "ada", true, true)
			scoreCh1(t, e.db, "bob", false, false)

			c := client()
			e.signIn(t, c, teacher)
			_, body := do(t, c, "GET", e.srv.URL+"/api/v1/gradebook.csv?exercise=ch1", nil, nil)
			recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if err != nil || len(recs) != 3 {
				t.Fatalf("csv: %v %q", err, body)
			}
			if h := strings.Join(recs[0], ","); h != "learner,exercise,policy,score,max_score,attempts,submission_id,graded_at,section,status,manual_waiting,name,score_before_penalty" {
				t.Errorf("header %s", h)
			}
			rows := map[string][]string{}
			for _, r := range recs[1:] {
				rows[r[0]] = r
			}
			if r := rows["ada"]; r[3] != "1" || r[4] != "3" || r[5] != "1" || r[6] != adaSub || r[7] == "" || r[8] != "Red" || r[9] != domain.StatusNeedsManual || r[11] != "李雅" {
				t.Errorf("ada's pending row: %v", r)
			}
			if r := rows["bob"]; r[3] != "0" || r[8] != "Blue" || r[9] != domain.StatusGraded || r[11] != "" {
				t.Errorf("bob's row: %v", r)
			}

			for lang, marker := range map[string]string{"en": "manual grading pending", "zh-CN": "待人工评分"} {
				_, body = do(t, c, "GET", e.srv.URL+"/dashboard/gradebook?exercise=ch1&lang="+lang, nil, nil)
				table := between(body, `id="gradebook"`, "</table>")
				adaRow := between(table, `<tr class="manual-pending"><th scope="row">ada</th>`, "</tr>")
				if !strings.Contains(adaRow, `<td class="gb-name">李雅</td>`) || !strings.Contains(adaRow, "1 / 3") || !strings.Contains(adaRow, `mg-pending`) || !strings.Contains(adaRow, marker) || !strings.Contains(adaRow, "<td>Red</td>") {
					t.Errorf("%s: ada's row %q", lang, adaRow)
				}
				if bobRow := between(table, `<th scope="row">bob</th>`, "</tr>"); strings.Contains(bobRow, "mg-pending") || bobRow == "" {
					t.Errorf("%s: bob's row %q", lang, bobRow)
				}
			}

			// The learner's counted score says the same.
			lc := client()
			resp, body := do(t, lc, "GET", e.srv.URL+"/api/v1/exercises/ch1/score", nil, map[string]string{"Authorization": "Bearer " + ada})
			var score struct {
				Score         float64 `json:"score"`
				Attempts      int     `json:"attempts"`
				Status        string  `json:"status"`
				ManualPending bool    `json:"manual_pending"`
			}
			if err := json.Unmarshal([]byte(body), &score); err != nil || resp.StatusCode != 200 || score.Score != 1 || score.Attempts != 1 ||
				!score.ManualPending || score.Status != domain.StatusNeedsManual {
				t.Errorf("counted score: %d %s", resp.StatusCode, body)
			}

			// Statistics: every section (2 learners, 1 pending), then one.
			_, body = do(t, c, "GET", e.srv.URL+"/dashboard/exercises/ch1?lang=en", nil, nil)
			if !strings.Contains(body, `<span id="ex-learners">2</span>`) || !strings.Contains(body, `id="ex-pending">1 `) ||
				!strings.Contains(body, "50% (1/2)") || !strings.Contains(body, `id="ex-section"`) {
				t.Errorf("statistics of every section: %s", between(body, "<main", "</main>"))
			}
			_, body = do(t, c, "GET", e.srv.URL+"/dashboard/exercises/ch1?section=Blue&lang=zh-CN", nil, nil)
			if !strings.Contains(body, `<span id="ex-learners">1</span>`) || strings.Contains(body, `id="ex-pending"`) ||
				!strings.Contains(body, "0% (0/1)") || !strings.Contains(body, `<option value="Blue" selected>`) {
				t.Errorf("statistics of section Blue: %s", between(body, "<main", "</main>"))
			}
			_, body = do(t, c, "GET", e.srv.URL+"/dashboard/exercises/ch1?section=Red&lang=en", nil, nil)
			if !strings.Contains(body, "100% (1/1)") || !strings.Contains(body, `id="ex-pending">1 `) {
				t.Errorf("statistics of section Red: %s", between(body, "<main", "</main>"))
			}
		})
	}
}

// TestGradebookShowsUncountedManualPending: under the best policy, a
// newer submission that waits for manual grading and scores lower for now
// does not count, but the gradebook page says one waits (in both
// languages) and the CSV counts it in manual_waiting.
func TestGradebookShowsUncountedManualPending(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			e.user(t, "cy", domain.RoleLearner)
			counted := scoreCh1(t, e.db, "cy", true, false)
			scoreCh1(t, e.db, "cy", false, true)

			c := client()
			e.signIn(t, c, teacher)
			_, body := do(t, c, "GET", e.srv.URL+"/api/v1/gradebook.csv?exercise=ch1", nil, nil)
			recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if err != nil || len(recs) != 2 {
				t.Fatalf("csv: %v %q", err, body)
			}
			if r := recs[1]; r[2] != domain.CountBest || r[3] != "1" || r[5] != "2" || r[6] != counted || r[9] != domain.StatusGraded || r[10] != "1" {
				t.Errorf("cy's row: %v", r)
			}
			for lang, marker := range map[string]string{"en": "another submission awaits manual grading", "zh-CN": "另有提交待人工评分"} {
				_, body = do(t, c, "GET", e.srv.URL+"/dashboard/gradebook?exercise=ch1&lang="+lang, nil, nil)
				row := between(between(body, `id="gradebook"`, "</table>"), `<tr><th scope="row">cy</th>`, "</tr>")
				if !strings.Contains(row, "1 / 3") || !strings.Contains(row, "mg-pending-other") || !strings.Contains(row, marker) || strings.Contains(row, `"badge warn mg-pending"`) {
					t.Errorf("%s: cy's row %q", lang, row)
				}
			}
		})
	}
}

// TestRegradeAskFormKeepsInput: a learner's regrade request that is not
// accepted (one still open on that question, or a message too long)
// shows their submission page again with why, the form as they filled it.
func TestRegradeAskFormKeepsInput(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			ada := e.user(t, "ada", domain.RoleLearner)
			sub := scoreCh1(t, e.db, "ada", true, false)
			c := client()
			e.signIn(t, c, ada)
			_, body := do(t, c, "GET", e.srv.URL+"/submissions/"+sub+"?lang=zh-CN", nil, nil)
			m := csrfField.FindStringSubmatch(body)
			if m == nil || !strings.Contains(body, `id="rq-form"`) {
				t.Fatalf("no regrade form: %s", between(body, "<main", "</main>"))
			}
			ask := func(message string) (int, string) {
				resp, body := do(t, c, "POST", e.srv.URL+"/submissions/"+sub+"/regrade-requests?lang=zh-CN",
					url.Values{"csrf": {m[1]}, "cell": {"q1"}, "message": {message}}, nil)
				return resp.StatusCode, body
			}
			if st, _ := ask("q1 的输出是对的"); st != 303 {
				t.Fatalf("first request: %d", st)
			}
			st, body := ask("再问一次 q1")
			if st != 409 || !strings.Contains(between(body, `id="rq-ask-error"`, "</div>"), "复核申请未提交") ||
				!strings.Contains(body, "再问一次 q1</textarea>") || !strings.Contains(body, `<option value="q1" selected>`) {
				t.Errorf("a second open request on q1: %d %s", st, between(body, `id="regrade-requests"`, "</section>"))
			}
			st, body = ask(strings.Repeat("长", 4000))
			if st != 422 || !strings.Contains(between(body, `id="rq-ask-error"`, "</div>"), "message: at most") {
				t.Errorf("a message too long: %d %s", st, between(body, `id="rq-ask-error"`, "</div>"))
			}
			reqs, err := e.db.RegradeRequests(context.Background(), domain.RegradeRequestFilter{SubmissionID: sub})
			if err != nil || len(reqs) != 1 {
				t.Errorf("requests recorded: %+v %v", reqs, err)
			}
		})
	}
}
