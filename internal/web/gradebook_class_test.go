package web_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

var (
	gbRowHead = regexp.MustCompile(`<tr(?: class="manual-pending")?><th scope="row">([^<]*)</th>`)
	gbRange   = regexp.MustCompile(`<span id="gb-range">([^<]*)</span>`)
)

// gradebookPage reads one gradebook page: the learners of its rows in
// order, the pager's range and the table's body.
func gradebookPage(t *testing.T, e *env, tok, query string) (learners []string, rng, table string) {
	t.Helper()
	c := client()
	e.signIn(t, c, tok)
	resp, body := do(t, c, "GET", e.srv.URL+"/dashboard/gradebook?"+query, nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("gradebook?%s: %d %s", query, resp.StatusCode, body)
	}
	table = between(body, `<table id="gradebook">`, "</table>")
	for _, m := range gbRowHead.FindAllStringSubmatch(table, -1) {
		learners = append(learners, m[1])
	}
	if m := gbRange.FindStringSubmatch(body); m != nil {
		rng = m[1]
	}
	return learners, rng, body
}

// TestGradebookPagesAClass: 500 learners × 5 exercises make 500 learner
// rows, 50 a page, each with a column per exercise and a total; the pager
// counts 500 and the last page ends at the 500th learner; the search
// finds one learner by full name or login, the exercise filter keeps one
// column, and a page that is not a number is refused (422, not a 5xx).
func TestGradebookPagesAClass(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, d)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			var exercises []string
			for _, ex := range e.cat.List() {
				exercises = append(exercises, ex.ID)
			}
			if len(exercises) != 5 {
				t.Fatalf("catalog: %v, want 5 exercises", exercises)
			}
			seed(t, e.db, 500, exercises, 1)
			if err := e.db.RawExec(ctx, "UPDATE users SET full_name = 'Zhang Wei' WHERE name = 'learner-000321'"); err != nil {
				t.Fatal(err)
			}

			learners, rng, body := gradebookPage(t, e, teacher, "lang=en")
			if len(learners) != 50 || learners[0] != "learner-000000" || learners[49] != "learner-000049" || rng != "1–50 of 500 learners" {
				t.Fatalf("page 1: %d rows (%v … ), range %q", len(learners), learners[:min(len(learners), 2)], rng)
			}
			if !strings.Contains(body, `<div class="table-scroll">`) || !strings.Contains(body, `href="/dashboard/gradebook?lang=en&amp;page=2"`) ||
				strings.Contains(body, `id="gb-prev"`) {
				t.Errorf("page 1's wrapper or pager links: %s", between(body, `<nav class="gb-pager"`, "</nav>"))
			}
			firstRow := between(body, `<th scope="row">learner-000000</th>`, "</tr>")
			if n := strings.Count(firstRow, `class="gb-cell"`); n != 5 || strings.Count(firstRow, "9 / 10") != 5 || !strings.Contains(firstRow, `<td class="gb-total">45 / `) {
				t.Errorf("the first learner's row has %d exercise cells: %s", n, firstRow)
			}
			for _, ex := range exercises {
				if !strings.Contains(body, `<th scope="col" class="gb-ex"`) || !strings.Contains(firstRow, `data-exercise="`+ex+`"`) {
					t.Errorf("no column for %s", ex)
				}
			}

			// Every page: 500 distinct learners, in order.
			seen := map[string]bool{}
			for p := 1; p <= 10; p++ {
				learners, rng, _ := gradebookPage(t, e, teacher, fmt.Sprintf("lang=en&page=%d", p))
				if want := fmt.Sprintf("%d–%d of 500 learners", (p-1)*50+1, p*50); len(learners) != 50 || rng != want {
					t.Errorf("page %d: %d rows, range %q (want %q)", p, len(learners), rng, want)
				}
				for i, l := range learners {
					if want := fmt.Sprintf("learner-%06d", (p-1)*50+i); l != want || seen[l] {
						t.Errorf("page %d row %d: %s, want %s once", p, i, l, want)
					}
					seen[l] = true
				}
			}
			if len(seen) != 500 {
				t.Errorf("%d learners over the pages, want 500", len(seen))
			}
			learners, rng, body = gradebookPage(t, e, teacher, "lang=en&page=10")
			if learners[len(learners)-1] != "learner-000499" || rng != "451–500 of 500 learners" || strings.Contains(body, `id="gb-next"`) ||
				!strings.Contains(body, `href="/dashboard/gradebook?lang=en&amp;page=9"`) {
				t.Errorf("last page: ends at %s, range %q, pager %s", learners[len(learners)-1], rng, between(body, `<nav class="gb-pager"`, "</nav>"))
			}
			// Past the end: the last page.
			if learners, rng, _ = gradebookPage(t, e, teacher, "lang=en&page=99"); rng != "451–500 of 500 learners" || len(learners) != 50 {
				t.Errorf("page 99: %d rows, range %q", len(learners), rng)
			}

			// Search by full name (any case) and by login; in Chinese too.
			learners, rng, body = gradebookPage(t, e, teacher, "lang=en&learner=zhang")
			if len(learners) != 1 || learners[0] != "learner-000321" || rng != "1–1 of 1 learner" ||
				!strings.Contains(body, `<td class="gb-name">Zhang Wei</td>`) {
				t.Errorf("search by name: %v, range %q", learners, rng)
			}
			if learners, rng, _ = gradebookPage(t, e, teacher, "lang=zh-CN&learner=learner-00032"); len(learners) != 10 || rng != "1–10 共 10 名学员" {
				t.Errorf("search by login: %v, range %q", learners, rng)
			}

			// One exercise: one column, no total.
			_, _, body = gradebookPage(t, e, teacher, "lang=en&exercise=ch2&page=3")
			row := between(body, `<th scope="row">learner-000100</th>`, "</tr>")
			if strings.Count(row, `class="gb-cell"`) != 1 || !strings.Contains(row, `data-exercise="ch2"`) || strings.Contains(body, `gb-total`) {
				t.Errorf("ch2 only, page 3: %s", row)
			}

			c := client()
			e.signIn(t, c, teacher)
			for _, bad := range []string{"0", "-1", "two"} {
				if resp, body := do(t, c, "GET", e.srv.URL+"/dashboard/gradebook?page="+bad, nil, nil); resp.StatusCode != 422 || !strings.Contains(body, bad) {
					t.Errorf("page=%s: %d", bad, resp.StatusCode)
				}
			}
		})
	}
}

// TestGradebookCSVScoreBeforePenaltyAndQuestions: graded through the one
// grading use case, a late submission's CSV row has score below
// score_before_penalty (the points before the late penalty), an on-time
// one has them equal; ?questions=1 appends a column per question with the
// points got, the page marks the late score, and a bad ?questions= is a
// problem (422).
func TestGradebookCSVScoreBeforePenaltyAndQuestions(t *testing.T) {
	t.Parallel()
	due := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cat := exercisetest.Catalog(t, exercisetest.Spec{ID: "late", Fields: map[string]any{
		"deadline": "2026-03-01T12:00:00Z", "late_penalty": []map[string]any{{"after": "0s", "multiplier": 0.5}}}})
	ex, err := cat.Get("late")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnvWith(t, d, filepath.Dir(ex.Dir), filepath.Dir(ex.AnswerDir))
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			subs := &intake.Service{DB: e.db, Queue: jobs.New(e.db, nil), Catalog: e.cat}
			exLoaded, _ := e.cat.Get("late")
			submit := func(name string, at time.Time, q2 string) string {
				t.Helper()
				e.db.Clock = func() time.Time { return at }
				u, _, err := e.db.CreateUser(ctx, name, domain.RoleLearner)
				if err != nil {
					t.Fatal(err)
				}
				sub, _, err := subs.Submit(ctx, intake.Request{User: u, ExerciseID: "late", Notebook: []byte(exercisetest.Answer)})
				if err != nil {
					t.Fatal(err)
				}
				g, err := (&grade.Submissions{DB: e.db}).Grade(ctx, exLoaded, sub, exercisetest.Executed(t, exLoaded, q2), domain.ExecutionResult{Profile: "cpu"})
				if err != nil {
					t.Fatal(err)
				}
				if err := e.db.RawExec(ctx, "UPDATE jobs SET state = ? WHERE submission_id = ?", domain.JobSucceeded, sub.ID); err != nil {
					t.Fatal(err)
				}
				g.Status = scoring.Status(g.Cells)
				if err := e.db.InTx(ctx, func(tx *store.Tx) error { return tx.SaveGrade(g) }); err != nil {
					t.Fatal(err)
				}
				return sub.ID
			}
			submit("ada", due.Add(-time.Hour), "2\n")   // on time, both right: 2
			submit("bob", due.Add(24*time.Hour), "3\n") // late, q2 wrong: 1 × 0.5
			e.db.Clock = time.Now
			if _, _, err := e.db.CreateUser(ctx, "cy", domain.RoleLearner); err != nil {
				t.Fatal(err)
			}

			hdr := map[string]string{"Authorization": "Bearer " + teacher}
			resp, body := do(t, client(), "GET", e.srv.URL+"/api/v1/gradebook.csv?questions=1", nil, hdr)
			recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if resp.StatusCode != 200 || err != nil || len(recs) != 4 {
				t.Fatalf("csv: %d %v %q", resp.StatusCode, err, body)
			}
			if h := strings.Join(recs[0], ","); h != "learner,exercise,policy,score,max_score,attempts,submission_id,graded_at,section,status,manual_waiting,name,score_before_penalty,late/q1,late/q2" {
				t.Errorf("header %s", h)
			}
			rows := map[string][]string{}
			for _, r := range recs[1:] {
				rows[r[0]] = r
			}
			if r := rows["ada"]; r[3] != "2" || r[4] != "2" || r[12] != "2" || r[13] != "1" || r[14] != "1" {
				t.Errorf("ada, on time: %v", r)
			}
			if r := rows["bob"]; r[3] != "0.5" || r[12] != "1" || r[13] != "1" || r[14] != "0" {
				t.Errorf("bob, late: %v (want score 0.5 < score_before_penalty 1, q1 1, q2 0)", r)
			}
			if r := rows["cy"]; r[3] != "" || r[12] != "" || r[13] != "" || r[14] != "" {
				t.Errorf("cy, no submission: %v", r)
			}

			// Without ?questions the new column is the last.
			_, body = do(t, client(), "GET", e.srv.URL+"/api/v1/gradebook.csv?learner=bob", nil, hdr)
			if recs, _ = csv.NewReader(strings.NewReader(body)).ReadAll(); len(recs) != 2 || len(recs[0]) != 13 || recs[1][3] != "0.5" || recs[1][12] != "1" {
				t.Errorf("csv without questions: %q", body)
			}
			resp, body = do(t, client(), "GET", e.srv.URL+"/api/v1/gradebook.csv?questions=some", nil, hdr)
			if resp.StatusCode != 422 || resp.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, "questions") {
				t.Errorf("bad questions: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}

			// The page marks bob's late score, in both languages.
			for lang, word := range map[string]string{"en": ">late<", "zh-CN": ">迟交<"} {
				_, _, page := gradebookPage(t, e, teacher, "lang="+lang)
				bob, ada := between(page, `<th scope="row">bob</th>`, "</tr>"), between(page, `<th scope="row">ada</th>`, "</tr>")
				if !strings.Contains(bob, "0.5 / 2") || !strings.Contains(bob, "late-badge") || !strings.Contains(bob, word) || strings.Contains(ada, "late-badge") {
					t.Errorf("%s: bob's row %q, ada's %q", lang, bob, ada)
				}
			}
		})
	}
}
