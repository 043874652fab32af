package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/httpapi/apitest"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// policyEnv is a server over the "pol" exercise (policyAnswer: one
// visible, one hidden and one after_due_date question) on a fresh
// database of one dialect.
type policyEnv struct {
	db               *store.DB
	ts               *httptest.Server
	learner, teacher string
}

func newPolicyEnv(t *testing.T, dialect, exerciseJSON string) *policyEnv {
	t.Helper()
	ctx := context.Background()
	cat := exercisetest.Load(t, "pol", exerciseJSON, policyAnswer)
	db := storetest.Open(t, dialect)
	ts, _ := testServer(t, db, cat)
	e := &policyEnv{db: db, ts: ts}
	var err error
	if _, e.learner, err = db.CreateUser(ctx, "lena", domain.RoleLearner); err != nil {
		t.Fatal(err)
	}
	if _, e.teacher, err = db.CreateUser(ctx, "tom", domain.RoleInstructor); err != nil {
		t.Fatal(err)
	}
	return e
}

// testServer serves the API of a server over db and cat (intake
// included), every exchange checked against api/openapi.yaml.
func testServer(t *testing.T, db *store.DB, cat *exercise.Catalog) (*httptest.Server, *intake.Service) {
	t.Helper()
	q := jobs.New(db, nil)
	srv := compose.Server(compose.Config{DB: db, Queue: q, Catalog: cat, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	subs := srv.Submissions
	ts := httptest.NewServer(apitest.Handler(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return ts, subs
}

// call sends method path as token, with a JSON body when one is given,
// and returns the status and the body.
func (e *policyEnv) call(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return e.do(t, req)
}

// submit posts policyAnswer with an Idempotency-Key and returns status and body.
func (e *policyEnv) submit(t *testing.T, token, key string) (int, string) {
	t.Helper()
	resp := e.post(t, token, key)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// graded submits policyAnswer as token (with key) and stores the grade g
// for it, as a runner's completion would; it returns the submission's id.
func (e *policyEnv) graded(t *testing.T, token, key string, g store.Grade) string {
	t.Helper()
	st, body := e.submit(t, token, key)
	if st != http.StatusAccepted {
		t.Fatalf("submit: %d %s", st, body)
	}
	g.SubmissionID = between(body, `"id":"`, `"`)
	g.Status = scoring.Status(g.Cells)
	if err := e.db.InTx(context.Background(), func(tx *store.Tx) error { return tx.SaveGrade(g) }); err != nil {
		t.Fatal(err)
	}
	return g.SubmissionID
}

// post posts policyAnswer (with an Idempotency-Key unless key is empty);
// the caller closes the response.
func (e *policyEnv) post(t *testing.T, token, key string) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("exercise", "pol")
	fw, _ := mw.CreateFormFile("notebook", "a.ipynb")
	_, _ = fw.Write([]byte(policyAnswer))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/api/v1/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (e *policyEnv) get(t *testing.T, token, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return e.do(t, req)
}

func (e *policyEnv) do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRedactionEveryResponseShape: every response that carries a graded
// submission — the idempotent replay of POST /submissions, GET one, the
// list, the history — shows a learner the same redacted cells as GET:
// no observed output, expected output or diff of hidden and
// after_due_date questions. Instructors see them.
func TestRedactionEveryResponseShape(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb", "deadline": "2999-01-01T00:00:00Z"}`)
			cells := []domain.CellResult{
				{CellID: "open", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "OPEN-OBS", Expected: "OPEN-EXP"},
				{CellID: "closed", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "HIDDEN-OBS", Expected: "HIDDEN-EXP", Diff: "HIDDEN-DIFF"},
				{CellID: "later", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "LATER-OBS", Expected: "LATER-EXP", Diff: "LATER-DIFF"},
			}
			id := e.graded(t, e.learner, "same-file", store.Grade{MaxScore: 3, Profile: "cpu", Cells: cells})
			secrets := []string{"HIDDEN-OBS", "HIDDEN-EXP", "HIDDEN-DIFF", "LATER-OBS", "LATER-EXP", "LATER-DIFF"}
			shapes := []struct {
				name  string
				token string
				call  func() (int, string)
				leaks bool // instructors see every detail
				cells bool // the list carries no cells
			}{
				{"replayed POST", e.learner, func() (int, string) { return e.submit(t, e.learner, "same-file") }, false, true},
				{"GET one", e.learner, func() (int, string) { return e.get(t, e.learner, "/api/v1/submissions/"+id) }, false, true},
				{"GET list", e.learner, func() (int, string) { return e.get(t, e.learner, "/api/v1/submissions") }, false, false},
				{"GET list of exercise", e.learner, func() (int, string) { return e.get(t, e.learner, "/api/v1/submissions?exercise=pol") }, false, false},
				{"instructor GET one", e.teacher, func() (int, string) { return e.get(t, e.teacher, "/api/v1/submissions/"+id) }, true, true},
				{"instructor history", e.teacher, func() (int, string) { return e.get(t, e.teacher, "/api/v1/submissions/"+id+"/history") }, true, true},
			}
			for _, sh := range shapes {
				st, body := sh.call()
				if st >= 300 {
					t.Errorf("%s: status %d: %s", sh.name, st, body)
					continue
				}
				if !strings.Contains(body, id) || strings.Contains(body, "OPEN-OBS") != sh.cells {
					t.Errorf("%s: the visible question's output is missing: %s", sh.name, body)
				}
				for _, sec := range secrets {
					if strings.Contains(body, sec) != (sh.leaks && sh.cells) {
						t.Errorf("%s: contains %s = %v, want %v: %s", sh.name, sec, !sh.leaks, sh.leaks, body)
					}
				}
			}
			if st, _ := e.get(t, e.learner, "/api/v1/submissions/"+id+"/history"); st != http.StatusForbidden {
				t.Errorf("learner history: status %d, want 403", st)
			}
		})
	}
}

func between(s, start, end string) string {
	_, after, ok := strings.Cut(s, start)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, end)
	return v
}

// TestAfterDueDateWithoutDeadlineWaitsForRelease: with no deadline, an
// after_due_date question's details (its expected output and
// explanation) stay hidden until an instructor releases feedback, never
// shown at the first submission; the release opens them.
func TestAfterDueDateWithoutDeadlineWaitsForRelease(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb"}`)
			cells := []domain.CellResult{
				{CellID: "open", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "OPEN-OBS", Expected: "OPEN-EXP"},
				{CellID: "later", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs\n解析：LATER-EXPLANATION", Observed: "LATER-OBS", Expected: "LATER-EXP", Diff: "LATER-DIFF"},
			}
			id := e.graded(t, e.learner, "k1", store.Grade{MaxScore: 2, Profile: "cpu", Cells: cells})
			st, body := e.get(t, e.learner, "/api/v1/submissions/"+id)
			if st != http.StatusOK || !strings.Contains(body, "OPEN-EXP") {
				t.Fatalf("GET: %d %s", st, body)
			}
			for _, sec := range []string{"LATER-OBS", "LATER-EXP", "LATER-DIFF", "LATER-EXPLANATION"} {
				if strings.Contains(body, sec) {
					t.Errorf("before any release the learner sees %s: %s", sec, body)
				}
			}
			if !strings.Contains(body, "shown once your instructor releases feedback") {
				t.Errorf("the hidden question does not say when it opens: %s", body)
			}
			req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/api/v1/exercises/pol/feedback/release", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+e.teacher)
			req.Header.Set("Content-Type", "application/json")
			if st, b := e.do(t, req); st >= 300 {
				t.Fatalf("release: %d %s", st, b)
			}
			if _, body = e.get(t, e.learner, "/api/v1/submissions/"+id); !strings.Contains(body, "LATER-EXP") || !strings.Contains(body, "LATER-EXPLANATION") {
				t.Errorf("after the release the details are still hidden: %s", body)
			}
		})
	}
}
