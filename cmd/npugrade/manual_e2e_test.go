package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// manualFixtures is an exercise with one automatic question (q1-check)
// and one manually graded explanation (explain: 2 points, rubric
// compare +1, benefit +1, wrong -0.5).
var manualFixtures = filepath.Join("testdata", "manual")

func startManualServer(t *testing.T, dbURL string, runners string) *server {
	t.Helper()
	return startServer(t, dbURL, "--local-runner", runners, "--env", "host",
		"--exercises", filepath.Join(manualFixtures, "exercises"), "--answers", filepath.Join(manualFixtures, "answers"))
}

func jsonBody(t *testing.T, _ any, b []byte) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return out
}

func cellOf(sub map[string]any, id string) map[string]any {
	cells, _ := sub["cells"].([]any)
	for _, c := range cells {
		if m, _ := c.(map[string]any); m["id"] == id {
			return m
		}
	}
	return nil
}

func countEvents(t *testing.T, dbURL, kind, subject string) int {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.RawScan(context.Background(), &n, "SELECT COUNT(*) FROM outbox WHERE kind = ? AND subject = ?", kind, subject); err != nil {
		t.Fatal(err)
	}
	return n
}

func auditActions(t *testing.T, dbURL string) []string {
	t.Helper()
	db, err := store.Open(context.Background(), dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evs, err := db.AuditEvents(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Action+" "+e.Actor+" "+e.Subject)
	}
	return out
}

// TestManualGradingEndToEnd: a submission with a manual cell is graded
// for its automatic part by a real runner (a graded event), is
// needs-manual with the manual cell waiting, and is graded with the total
// once an instructor applies rubric items through the API; every
// decision is on record and in the audit log.
func TestManualGradingEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			teacher := addUser(t, dbURL, "teacher", "instructor")
			s := startManualServer(t, dbURL, "1")
			defer s.stop()

			answer := readFile(t, filepath.Join(manualFixtures, "answers", "manual", "manual_answer.ipynb"))
			resp, created := uploadT(t, s, ada, "manual", answer, "")
			if resp.StatusCode != 202 {
				t.Fatalf("upload: %d %v", resp.StatusCode, created)
			}
			id := created["id"].(string)
			sub := waitGraded(t, s, ada, id)
			if sub["status"] != "needs-manual" || sub["score"] != 1.0 || sub["max_score"] != 3.0 {
				t.Fatalf("after the runner: status %v score %v/%v, want needs-manual 1/3 (%v)", sub["status"], sub["score"], sub["max_score"], sub["message"])
			}
			if c := cellOf(sub, "q1-check"); c["verdict"] != "pass" {
				t.Errorf("automatic cell: %v", c)
			}
			if c := cellOf(sub, "explain"); c["verdict"] != "needs-manual" || c["points"] != 0.0 || c["max_points"] != 2.0 {
				t.Errorf("manual cell before grading: %v", c)
			}
			if n := countEvents(t, dbURL, "graded", id); n != 1 {
				t.Errorf("%d graded events for the automatic part, want 1", n)
			}

			put := func(token, cell, body string) (int, map[string]any) {
				resp, b := request(t, "PUT", s.url+"/api/v1/submissions/"+id+"/manual/"+cell, token, strings.NewReader(body), "application/json", nil)
				return resp.StatusCode, jsonBody(t, resp.Body, b)
			}
			if st, _ := put(ada, "explain", `{"items": ["compare"]}`); st != 403 {
				t.Errorf("a learner grading: %d, want 403", st)
			}
			st, p := put(teacher, "explain", `{"items": ["compare", "nope", "compare"], "adjustment": 9}`)
			if probs, _ := p["problems"].([]any); st != 422 || len(probs) != 3 {
				t.Errorf("a bad grade: %d %v, want 422 with 3 problems", st, p)
			}
			if st, p := put(teacher, "q1-check", `{"items": []}`); st != 404 {
				t.Errorf("grading an automatic cell by hand: %d %v", st, p)
			}
			if st, p := put(teacher, "explain", `{"items": [], "extra": 1}`); st != 422 {
				t.Errorf("an unknown field: %d %v", st, p)
			}
			st, graded := put(teacher, "explain", `{"items": ["compare", "benefit"], "adjustment": -0.5, "comment": "测量清楚，但缺少 profiler trace"}`)
			if st != 200 || graded["status"] != "graded" || graded["score"] != 2.5 {
				t.Fatalf("grading the manual cell: %d %v", st, graded)
			}
			if n := countEvents(t, dbURL, "graded", id); n != 2 {
				t.Errorf("%d graded events after manual grading, want 2", n)
			}
			// The exercise's feedback is on_release: the learner sees the
			// points, and the comment only once it is released to them.
			_, b := request(t, "GET", s.url+"/api/v1/submissions/"+id, ada, nil, "", nil)
			mine := jsonBody(t, nil, b)
			if c := cellOf(mine, "explain"); c["points"] != 1.5 || strings.Contains(c["message"].(string), "profiler") ||
				!strings.Contains(c["message"].(string), "once your instructor releases it") {
				t.Errorf("before the release the learner sees %v", c)
			}
			if resp, b := request(t, "POST", s.url+"/api/v1/exercises/manual/feedback/release", ada, strings.NewReader(`{}`), "application/json", nil); resp.StatusCode != 403 {
				t.Errorf("a learner releasing feedback: %d %s", resp.StatusCode, b)
			}
			if resp, b := request(t, "POST", s.url+"/api/v1/exercises/manual/feedback/release", teacher, strings.NewReader(`{"learner": "nobody"}`), "application/json", nil); resp.StatusCode != 422 {
				t.Errorf("releasing to an unknown learner: %d %s", resp.StatusCode, b)
			}
			if resp, b := request(t, "POST", s.url+"/api/v1/exercises/manual/feedback/release", teacher, strings.NewReader(`{"learner": "ada"}`), "application/json", nil); resp.StatusCode != 200 {
				t.Fatalf("release to ada: %d %s", resp.StatusCode, b)
			}
			_, b = request(t, "GET", s.url+"/api/v1/submissions/"+id, ada, nil, "", nil)
			mine = jsonBody(t, nil, b)
			c := cellOf(mine, "explain")
			if c["verdict"] != "manual" || c["points"] != 1.5 || !strings.Contains(c["message"].(string), "缺少 profiler trace") ||
				!strings.Contains(c["message"].(string), "阐述了图模式的优化收益") {
				t.Errorf("the learner's view of the manual cell: %v", c)
			}
			_, b = request(t, "GET", s.url+"/api/v1/submissions/"+id+"/manual", teacher, nil, "", nil)
			log := jsonBody(t, nil, b)
			if gs, _ := log["grades"].([]any); len(gs) != 1 || gs[0].(map[string]any)["grader"] != "teacher" || gs[0].(map[string]any)["points"] != 1.5 {
				t.Errorf("manual grade log: %v", log)
			}
			regradeRequest(t, s, dbURL, ada, teacher, id)
			acts := strings.Join(auditActions(t, dbURL), "\n")
			for _, want := range []string{"manual-grade teacher submission " + id + " cell explain", "feedback-released teacher manual to ada",
				"regrade-requested ada submission " + id + " cell explain", "score-override teacher submission " + id + " cell explain",
				"regrade-answered teacher regrade request"} {
				if !strings.Contains(acts, want) {
					t.Errorf("audit log has no %q:\n%s", want, acts)
				}
			}
		})
	}
}

// regradeRequest: the learner asks about the explanation with a message;
// the instructor finds it in the queue and answers with an override to
// full points and a reason; the learner sees the answer, and the old
// score is in the score history with the reason.
func regradeRequest(t *testing.T, s *server, dbURL, ada, teacher, id string) {
	t.Helper()
	url := s.url + "/api/v1/submissions/" + id + "/regrade-requests"
	if resp, b := request(t, "POST", url, ada, strings.NewReader(`{"cell": "nope", "message": ""}`), "application/json", nil); resp.StatusCode != 422 ||
		len(jsonBody(t, nil, b)["problems"].([]any)) != 2 {
		t.Errorf("a bad request: %d %s", resp.StatusCode, b)
	}
	if resp, b := request(t, "POST", url, teacher, strings.NewReader(`{"cell": "explain", "message": "x"}`), "application/json", nil); resp.StatusCode != 403 {
		t.Errorf("an instructor asking on a learner's behalf: %d %s", resp.StatusCode, b)
	}
	resp, b := request(t, "POST", url, ada, strings.NewReader(`{"cell": "explain", "message": "我附上了 profiler trace，请重新评分"}`), "application/json", nil)
	if resp.StatusCode != 201 {
		t.Fatalf("ask: %d %s", resp.StatusCode, b)
	}
	if resp, b := request(t, "POST", url, ada, strings.NewReader(`{"cell": "explain", "message": "again"}`), "application/json", nil); resp.StatusCode != 409 {
		t.Errorf("a second open request on one question: %d %s", resp.StatusCode, b)
	}
	if resp, _ := request(t, "GET", s.url+"/api/v1/regrade-requests?state=open", ada, nil, "", nil); resp.StatusCode != 403 {
		t.Errorf("a learner reading the queue: %d", resp.StatusCode)
	}
	_, b = request(t, "GET", s.url+"/api/v1/regrade-requests?state=open", teacher, nil, "", nil)
	queue, _ := jsonBody(t, nil, b)["requests"].([]any)
	if len(queue) != 1 || queue[0].(map[string]any)["learner"] != "ada" {
		t.Fatalf("queue: %s", b)
	}
	rid := fmt.Sprint(queue[0].(map[string]any)["id"])
	answer := s.url + "/api/v1/regrade-requests/" + rid + "/answer"
	if resp, b := request(t, "POST", answer, teacher, strings.NewReader(`{"answer": "ok", "points": 2}`), "application/json", nil); resp.StatusCode != 422 {
		t.Errorf("an override without a reason: %d %s", resp.StatusCode, b)
	}
	if resp, b := request(t, "POST", answer, teacher, strings.NewReader(`{"answer": "ok", "points": 5, "reason": "r"}`), "application/json", nil); resp.StatusCode != 422 {
		t.Errorf("an override above the question's points: %d %s", resp.StatusCode, b)
	}
	resp, b = request(t, "POST", answer, teacher, strings.NewReader(`{"answer": "trace 看过了，给满分", "points": 2, "reason": "profiler trace 证明了收益"}`), "application/json", nil)
	if resp.StatusCode != 200 || jsonBody(t, nil, b)["state"] != "answered" {
		t.Fatalf("answer: %d %s", resp.StatusCode, b)
	}
	if resp, b := request(t, "POST", answer, teacher, strings.NewReader(`{"answer": "again"}`), "application/json", nil); resp.StatusCode != 409 {
		t.Errorf("answering twice: %d %s", resp.StatusCode, b)
	}
	_, b = request(t, "GET", url, ada, nil, "", nil)
	mine, _ := jsonBody(t, nil, b)["requests"].([]any)
	if len(mine) != 1 || mine[0].(map[string]any)["answer"] != "trace 看过了，给满分" || mine[0].(map[string]any)["override_points"] != 2.0 {
		t.Errorf("the learner's requests: %s", b)
	}
	_, b = request(t, "GET", s.url+"/api/v1/submissions/"+id+"/history", teacher, nil, "", nil)
	h := jsonBody(t, nil, b)
	cur, _ := h["current"].(map[string]any)
	hist, _ := h["history"].([]any)
	if cur["score"] != 3.0 || len(hist) != 1 || hist[0].(map[string]any)["score"] != 2.5 ||
		!strings.Contains(fmt.Sprint(hist[0].(map[string]any)["reason"]), "profiler trace 证明了收益") {
		t.Errorf("score history after the override: %s", b)
	}
}
