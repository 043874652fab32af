package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/similarity"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// simAnswer has one solution cell; its given line (outside the solution
// region) is starter code every submission carries.
const simAnswer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": "GIVEN\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null}
 ]}`

const simGiven = "def helper(table, key):\n    rows = [r for r in table if r[0] == key]\n    return sorted(rows, key=lambda r: r[1])[:10]\n"

// TestSimilarityReportHTTP: four learners submit (real intake); the one
// whose code is another's with renamed variables forms the top pair of
// GET /api/v1/exercises/{id}/similarity, honest pairs are not reported,
// the given code is ignored, learners may not read it, and reading it is
// in the audit log. On SQLite and Postgres.
func TestSimilarityReportHTTP(t *testing.T) {
	t.Parallel()
	answer := strings.Replace(simAnswer, "GIVEN", strings.ReplaceAll(strings.ReplaceAll(simGiven, `"`, `\"`), "\n", `\n`), 1)
	cat := exercisetest.Load(t, "sim", `{"id": "sim", "title": "s", "starter": "s.ipynb", "answer": "a.ipynb"}`, answer)
	notebookOf := func(code string) []byte {
		var nb map[string]any
		_ = json.Unmarshal([]byte(answer), &nb)
		cell := nb["cells"].([]any)[0].(map[string]any)
		cell["source"] = simGiven + code
		b, _ := json.Marshal(nb)
		return b
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			ts, subs := testServer(t, db, cat)
			_, teacher, _ := db.CreateUser(ctx, "tom", domain.RoleInstructor)
			var learnerTok string
			for _, name := range []string{"a", "b", "c", "d"} {
				u, tok, err := db.CreateUser(ctx, "learner-"+name, domain.RoleLearner)
				if err != nil {
					t.Fatal(err)
				}
				learnerTok = tok
				code, err := os.ReadFile(filepath.Join("..", "similarity", "testdata", name+".py"))
				if err != nil {
					t.Fatal(err)
				}
				if name == "a" { // an earlier attempt of a's does not count: the latest does
					if _, _, err := subs.Submit(ctx, intake.Request{User: u, ExerciseID: "sim", Notebook: notebookOf("y = 2\n")}); err != nil {
						t.Fatal(err)
					}
				}
				if _, _, err := subs.Submit(ctx, intake.Request{User: u, ExerciseID: "sim", Notebook: notebookOf(string(code))}); err != nil {
					t.Fatal(err)
				}
			}
			get := func(token, query string) (int, string) {
				req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/exercises/sim/similarity"+query, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if st, _ := get(learnerTok, ""); st != http.StatusForbidden {
				t.Errorf("learner reads the report: %d", st)
			}
			if st, body := get(teacher, "?threshold=2&limit=0"); st != http.StatusUnprocessableEntity || !strings.Contains(body, "threshold") || !strings.Contains(body, "limit") {
				t.Errorf("bad options: %d %s", st, body)
			}
			st, body := get(teacher, "")
			var rep similarity.Report
			if err := json.Unmarshal([]byte(body), &rep); st != http.StatusOK || err != nil {
				t.Fatalf("report: %d %v %s", st, err, body)
			}
			if rep.Submissions != 4 || len(rep.Pairs) != 1 {
				t.Fatalf("report: %d submissions, pairs %+v", rep.Submissions, rep.Pairs)
			}
			top := rep.Pairs[0]
			if top.A.Learner != "learner-a" || top.B.Learner != "learner-b" || top.Score < 0.8 || len(top.Fragments) == 0 {
				t.Errorf("top pair %s–%s %.2f", top.A.Learner, top.B.Learner, top.Score)
			}
			for _, f := range top.Fragments {
				if strings.Contains(f.AText, "def helper") {
					t.Errorf("the given code is reported as a match: %q", f.AText)
				}
			}
			// Every pair, however faint: the honest ones are far below.
			_, body = get(teacher, "?threshold=0.01")
			_ = json.Unmarshal([]byte(body), &rep)
			for _, p := range rep.Pairs[1:] {
				if p.Score >= 0.3 {
					t.Errorf("honest pair %s–%s scores %.2f", p.A.Learner, p.B.Learner, p.Score)
				}
			}
			events, _ := db.AuditEvents(ctx, 10)
			if len(events) == 0 || events[0].Action != similarity.AuditReport || events[0].Actor != "tom" || events[0].Subject != "sim" {
				t.Errorf("audit log: %+v", events)
			}
		})
	}
}
