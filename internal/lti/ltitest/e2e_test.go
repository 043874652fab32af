package ltitest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/cmd/npugrade/compose"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/events"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/lti"
	"github.com/npugrade/npugrade/internal/lti/ltitest"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// answer has one automatic check (q1, 1 point) and a manual cell (why,
// 2 points: rubric items a and b).
const answer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": "### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "markdown", "id": "why", "metadata": {"grader": {"id": "why", "solution": true, "starter": "…",
    "manual": {"points": 2, "rubric": [{"id": "a", "points": 1, "text": "measured"}, {"id": "b", "points": 1, "text": "explained"}]}}}, "source": "because"}
 ]}`

// env is an npugrade server with the LTI tool and a test platform
// registered with it.
type env struct {
	db    *store.DB
	cat   *exercise.Catalog
	ts    *httptest.Server
	plat  *ltitest.Platform
	parts compose.LTIParts
	subs  *intake.Service
	tls   bool // served over https
}

func newEnv(t *testing.T, dialect string) *env {
	t.Helper()
	return newEnvWith(t, dialect, envOptions{})
}

// envOptions change newEnv's set-up.
type envOptions struct {
	platform func(*ltitest.Platform)   // changes the platform first
	reg      func(*domain.LTIPlatform) // changes its registration
	tls      bool                      // npugrade served over https
	db       *store.DB                 // the database (default: a fresh one)
}

// newEnvWith is newEnv with o.
func newEnvWith(t *testing.T, dialect string, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{db: o.db, plat: ltitest.New(t), tls: o.tls}
	if e.db == nil {
		e.db = storetest.Open(t, dialect)
	}
	if o.platform != nil {
		o.platform(e.plat)
	}
	// Due a day ago, late work halved: an extension re-scores it.
	e.cat = exercisetest.Catalog(t, exercisetest.Spec{ID: "gr", Answer: answer, Fields: map[string]any{
		"deadline": time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339), "late_penalty": []map[string]any{{"after": "0s", "multiplier": 0.5}}}})
	var h http.Handler
	e.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	if e.tls {
		e.ts.StartTLS()
	} else {
		e.ts.Start()
	}
	t.Cleanup(e.ts.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.parts = compose.LTI(e.db, e.cat, e.ts.URL, log)
	e.parts.Sender.Backoff = func(int) time.Duration { return 0 }
	srv := compose.Server(compose.Config{DB: e.db, Queue: jobs.New(e.db, nil), Catalog: e.cat, Log: log, LTI: e.parts.Tool,
		FrameAncestors: []string{e.plat.Server.URL}})
	h, e.subs = srv.Handler(), srv.Submissions
	e.plat.ToolJWKS = e.ts.URL + "/lti/jwks"
	r := e.plat.Registration()
	if o.reg != nil {
		o.reg(&r)
	}
	if _, err := (&lti.Platforms{DB: e.db}).Add(ctx, r); err != nil {
		t.Fatal(err)
	}
	return e
}

// browser is a client with its own cookies.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 20 * time.Second}
}

// passBack delivers the outbox to the LTI notifier and sends what it
// owes (rounds times) and returns the platform's accepted scores.
func (e *env) passBack(t *testing.T, rounds int) []ltitest.Score {
	t.Helper()
	ctx := context.Background()
	d := &events.Deliverer{DB: e.db, Notifier: e.parts.Grades}
	if _, err := d.DeliverOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for range rounds {
		if _, err := e.parts.Sender.SendOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return e.plat.Scores()
}

// uploadOnPage posts the answer with the exercise page's form (page is
// its HTML, for the CSRF token) as client, and returns the submission
// the upload's redirect names.
func (e *env) uploadOnPage(t *testing.T, client *http.Client, page string) domain.Submission {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no upload form on the page: %.300s", page)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("csrf", m[1])
	fw, _ := mw.CreateFormFile("notebook", "gr.ipynb")
	_, _ = fw.Write([]byte(answer))
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/exercises/gr/submissions", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", e.ts.URL)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id, ok := strings.CutPrefix(resp.Request.URL.Path, "/submissions/")
	if !ok || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	sub, err := e.db.Submission(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// run grades sub as a runner's completion does: q1 printed the right
// output, the manual cell waits for a person.
func (e *env) run(t *testing.T, sub domain.Submission) {
	t.Helper()
	ctx := context.Background()
	ex, _ := e.cat.Get("gr")
	g, err := (&grade.Submissions{DB: e.db}).Grade(ctx, ex, sub, exercisetest.Executed(t, ex, "2\n"), domain.ExecutionResult{Profile: "cpu"})
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
}

// TestLaunchGradeAndPassBack is the tool's done-when, end to end against
// the test platform over real HTTP with real signed JWTs: an instructor's
// launch links the course to a new cohort; a learner's launch signs them
// into that cohort's exercise page; their upload on that page (the launch's
// session and CSRF token), once graded, reaches
// the platform's AGS score service once (PendingManual: a manual cell
// waits), although the service failed three times first; an extension's
// re-score and the manual grade (FullyGraded) each send the new score,
// and repeated events send nothing; the replayed launch is refused.
func TestLaunchGradeAndPassBack(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnv(t, d)
			teacher, learner := browser(t), browser(t)

			l := e.plat.Launch(t, teacher, e.ts.URL, e.plat.ResourceLink("t-1", "course-1", "gr", ltitest.Instructor))
			if l.Response.StatusCode != http.StatusOK || l.Response.Request.URL.Path != "/exercises/gr" {
				t.Fatalf("instructor launch: %d at %s: %.300s", l.Response.StatusCode, l.Response.Request.URL, l.Body)
			}
			l = e.plat.Launch(t, learner, e.ts.URL, e.plat.ResourceLink("s-1", "course-1", "gr", ltitest.Learner))
			if l.Response.StatusCode != http.StatusOK || l.Response.Request.URL.Path != "/exercises/gr" || !strings.Contains(l.Body, "gr") {
				t.Fatalf("learner launch: %d at %s: %.300s", l.Response.StatusCode, l.Response.Request.URL, l.Body)
			}
			lena, err := e.db.UserByName(ctx, "s-1@example.edu")
			if err != nil || lena.Role != domain.RoleLearner {
				t.Fatalf("the learner's user: %+v %v", lena, err)
			}
			tom, _ := e.db.UserByName(ctx, "t-1@example.edu")
			ms, err := e.db.CohortsOf(ctx, lena.ID)
			var cohort domain.Cohort
			for _, m := range ms {
				if strings.HasPrefix(m.Cohort.Slug, "lti-") && m.Role == domain.RoleLearner {
					cohort = m.Cohort
				}
			}
			if err != nil || cohort.ID == 0 || cohort.Title != "TorchAir 101" {
				t.Fatalf("the learner is not a learner of the course's cohort: %+v %v", ms, err)
			}
			// First seen in the course, they are in its cohort only: not
			// a scoreless row of the default cohort's gradebook.
			if len(ms) != 1 {
				t.Errorf("the learner's cohorts: %+v, want the course's only", ms)
			}

			// The learner uploads on the exercise page the launch opened.
			sub := e.uploadOnPage(t, learner, l.Body)
			if sub.UserID != lena.ID || sub.CohortID != cohort.ID {
				t.Fatalf("upload: %+v (want learner %d, cohort %d)", sub, lena.ID, cohort.ID)
			}
			e.run(t, sub)
			e.plat.FailNext(http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable)
			scores := e.passBack(t, 4)
			if len(scores) != 1 || scores[0].UserID != "s-1" || scores[0].ScoreGiven != 0.5 || scores[0].ScoreMaximum != 3 ||
				scores[0].GradingProgress != lti.PendingManual || scores[0].ActivityProgress != lti.Submitted {
				t.Fatalf("after grading and three failures: %+v (refused: %v)", scores, e.plat.Refusals())
			}
			if n := e.plat.PendingFailures(); n != 0 {
				t.Errorf("%d of the three failures were not met", n)
			}
			if items := e.plat.LineItems(); len(items) != 1 || items[0].ResourceID != "gr" || items[0].ScoreMaximum != 3 {
				t.Errorf("line items: %+v", items)
			}
			if again := e.passBack(t, 2); len(again) != 1 {
				t.Fatalf("nothing changed, yet sent again: %+v", again)
			}
			// A check's event and a failure send nothing.
			for _, kind := range []string{domain.EventChecked, domain.EventFailed} {
				if err := e.parts.Grades.Notify(ctx, domain.Event{ID: 999, Kind: kind, Subject: sub.ID}); err != nil {
					t.Fatal(err)
				}
			}
			if again := e.passBack(t, 1); len(again) != 1 {
				t.Fatalf("a check or failure sent a score: %+v", again)
			}

			ext := &grade.Extensions{DB: e.db, Catalog: e.cat}
			if res, err := ext.Grant(ctx, tom, "gr", grade.ExtensionRequest{Learner: lena.Name,
				Deadline: time.Now().Add(7 * 24 * time.Hour).UTC().Format(time.RFC3339)}); err != nil || res.Rescored != 1 {
				t.Fatalf("extension: %+v %v", res, err)
			}
			scores = e.passBack(t, 1)
			if len(scores) != 2 || scores[1].ScoreGiven != 1 || scores[1].GradingProgress != lti.PendingManual {
				t.Fatalf("after the extension's re-score: %+v", scores)
			}

			ex, _ := e.cat.Get("gr")
			if _, err := (&grade.Manual{DB: e.db}).Grade(ctx, ex, sub.ID, "why", grade.ManualInput{Items: []string{"a", "b"}}, tom); err != nil {
				t.Fatal(err)
			}
			scores = e.passBack(t, 2)
			if len(scores) != 3 || scores[2].ScoreGiven != 3 || scores[2].GradingProgress != lti.FullyGraded || scores[2].LineItem != scores[0].LineItem {
				t.Fatalf("after the manual grade: %+v", scores)
			}

			// The instructor trying the exercise in the course sends nothing.
			own, _, err := e.subs.Submit(ctx, intake.Request{User: tom, ExerciseID: "gr", Notebook: []byte(answer)})
			if err != nil || own.CohortID != cohort.ID {
				t.Fatalf("instructor's submission: cohort %d %v", own.CohortID, err)
			}
			e.run(t, own)
			if scores := e.passBack(t, 1); len(scores) != 3 {
				t.Fatalf("an instructor's grade was sent: %+v", scores)
			}

			resp, body := ltitest.Post(t, browser(t), l.Action, l.IDToken, l.State)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "already used") {
				t.Fatalf("replayed launch: %d %.400s", resp.StatusCode, body)
			}
			if !audited(t, e.db, "lti nonce") {
				t.Error("the replayed launch is not in the audit log")
			}
		})
	}
}

func audited(t *testing.T, db *store.DB, subject string) bool {
	t.Helper()
	evs, err := db.AuditEvents(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Action == domain.AuditLoginFailed && ev.Subject == subject {
			return true
		}
	}
	return false
}

// TestBadLaunchesRefused: a forged signature, an unknown deployment, an
// expired token, a wrong audience and a learner's launch into a course
// no instructor has linked each get a page saying why (in Chinese for a
// Chinese reader) and an audit entry; nobody is signed in.
func TestBadLaunchesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	ok := func() map[string]any { return e.plat.ResourceLink("s-2", "course-2", "gr", ltitest.Instructor) }
	cases := []struct {
		reason, want string
		status       int
		claims       map[string]any
		key          *rsa.PrivateKey
		zh           bool
	}{
		{reason: "signature", want: "not signed by the registered platform", status: 401, claims: ok(), key: other},
		{reason: "deployment", want: "deployment of npugrade is not registered", status: 401, claims: with(ok(), lti.ClaimDeploymentID, "dep-unknown")},
		{reason: "expired", want: "已过期", status: 401, claims: with(with(ok(), "exp", time.Now().Add(-10*time.Minute).Unix()), "iat", time.Now().Add(-20*time.Minute).Unix()), zh: true},
		{reason: "audience", want: "meant for another tool", status: 401, claims: with(ok(), "aud", "another-tool")},
		{reason: "unlinked", want: "not set up in npugrade yet", status: 403, claims: e.plat.ResourceLink("s-3", "course-3", "gr", ltitest.Learner)},
	}
	// A platform whose key set is down: 503, not a forgery.
	down := newEnvWith(t, "sqlite", envOptions{reg: func(p *domain.LTIPlatform) { p.JWKSURL = "http://127.0.0.1:1/jwks" }})
	if l := down.plat.Launch(t, browser(t), down.ts.URL, down.plat.ResourceLink("s-2", "course-2", "gr", ltitest.Instructor)); l.Response.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(l.Body, "keys cannot be read") || !audited(t, down.db, "lti unavailable") {
		t.Errorf("platform keys down: %d %.300s", l.Response.StatusCode, l.Body)
	}
	for _, c := range cases {
		client := browser(t)
		if c.zh {
			client.Transport = acceptLanguage{"zh-CN"}
		}
		e.plat.SignWith(c.key)
		l := e.plat.Launch(t, client, e.ts.URL, c.claims)
		if l.Response.StatusCode != c.status || !strings.Contains(l.Body, c.want) || l.Response.Request.URL.Path != "/lti/launch" {
			t.Errorf("%s: %d at %s, want %d with %q: %.500s", c.reason, l.Response.StatusCode, l.Response.Request.URL.Path, c.status, c.want, l.Body)
		}
		if !audited(t, e.db, "lti "+c.reason) {
			t.Errorf("%s: no audit entry", c.reason)
		}
	}
	e.plat.SignWith(nil)
}

func with(c map[string]any, k string, v any) map[string]any { c[k] = v; return c }

type acceptLanguage struct{ lang string }

func (a acceptLanguage) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept-Language", a.lang)
	return http.DefaultTransport.RoundTrip(r)
}
