package main

import (
	"context"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// Browser tests of the web pages: Debian's headless Chromium driven with
// chromedp against a real `npugrade serve`. Outside CI they skip when no
// Chromium is installed (scripts/deps.sh installs it); in CI they fail.
// Screenshots of every page go to out/screenshots/<test name>/
// (NPUGRADE_SCREENSHOTS overrides the folder).

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium on PATH: CI must run the browser tests (scripts/deps.sh installs Debian's chromium)")
	}
	t.Skip("no chromium on PATH (install Debian's chromium, or run scripts/deps.sh)")
	return ""
}

type tab struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string // screenshots
}

// newTab starts a fresh headless Chromium (own profile, so own cookies).
func newTab(t *testing.T, base string) *tab {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("password-store", "basic"), chromedp.Flag("use-mock-keychain", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	dir := os.Getenv("NPUGRADE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(repoRoot, "out", "screenshots")
	}
	dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &tab{t: t, ctx: ctx, base: base, dir: dir}
}

func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.shot("failed-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(what), "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](b *tab, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *tab) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b *tab) location() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return strings.TrimPrefix(s, b.base)
}

// shot writes a full-page PNG screenshot.
func (b *tab) shot(name string) {
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

// signIn goes to path, is sent to the sign-in page, signs in with token and
// lands back on path.
func (b *tab) signIn(path, token string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("#token")))
	if loc := b.location(); !strings.HasPrefix(loc, "/login?next=") {
		b.t.Fatalf("anonymous %s went to %s, want the sign-in page", path, loc)
	}
	b.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("header .who")))
	if loc := b.location(); loc != path {
		b.t.Fatalf("after signing in at %s: %s", path, loc)
	}
}

// TestWebLearnerAndInstructor: a learner signs in, uploads the chapter 1
// answer, watches the status change and reads the feedback; an instructor
// sees the charts, exports the gradebook and opens the submission; an
// admin creates a user and sees its token once.
func TestWebLearnerAndInstructor(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks in a browser test")
	}
	chromiumPath(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			learnerTok := addUser(t, dbURL, "ada", "learner")
			teacherTok := addUser(t, dbURL, "teacher", "instructor")
			adminTok := addUser(t, dbURL, "root", "admin")
			s := startServer(t, dbURL, "--local-runner", "1")
			defer s.stop()

			// Learner.
			l := newTab(t, s.url)
			l.do("login page", chromedp.Navigate(s.url+"/exercises"), chromedp.WaitVisible(chromedp.CSS("#token")))
			l.shot("01-login")
			l.signIn("/exercises", learnerTok)
			if got := eval[string](l, `document.title`); !strings.Contains(got, "exercises") {
				t.Errorf("exercises page title %q", got)
			}
			l.shot("02-learner-exercises")
			l.do("open ch1", chromedp.Click(chromedp.CSS(`a[href="/exercises/ch1"]`)), chromedp.WaitVisible(chromedp.CSS("#notebook")))
			if n := eval[int](l, `document.querySelectorAll('a[href="/exercises/ch1/starter"]').length`); n != 1 {
				t.Errorf("starter link: %d", n)
			}
			l.shot("03-learner-exercise")
			answer, err := filepath.Abs(filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb"))
			if err != nil {
				t.Fatal(err)
			}
			l.do("upload", chromedp.SetUploadFiles(chromedp.CSS("#notebook"), []string{answer}),
				chromedp.Click(chromedp.CSS(`form[enctype] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#status")))
			if loc := l.location(); !strings.HasPrefix(loc, "/submissions/") {
				t.Fatalf("after upload: %s", loc)
			}
			subPath := l.location()
			first := eval[string](l, `document.querySelector('#status').dataset.status`)
			l.shot("04-learner-submission-" + first)
			seen := []string{first}
			deadline := time.Now().Add(3 * time.Minute)
			for time.Now().Before(deadline) {
				st := eval[string](l, `(document.querySelector('#status')||{dataset:{}}).dataset.status || ''`)
				if st != "" && st != seen[len(seen)-1] {
					seen = append(seen, st)
				}
				if eval[bool](l, `!!document.querySelector('#feedback')`) {
					break
				}
				time.Sleep(150 * time.Millisecond)
			}
			t.Logf("status seen by the learner's page: %v", seen)
			if first != "queued" && first != "running" {
				t.Fatalf("first status %q, want queued or running", first)
			}
			if seen[len(seen)-1] != "graded" || len(seen) < 2 {
				t.Fatalf("status sequence %v does not end in graded", seen)
			}
			l.do("feedback", chromedp.WaitVisible(chromedp.CSS("#feedback")))
			l.shot("05-learner-feedback")
			score := l.text("#score")
			if parts := strings.Split(score, " / "); len(parts) != 2 || parts[0] != parts[1] {
				t.Errorf("the answer scored %q, want full marks", score)
			}
			if n := eval[int](l, `document.querySelectorAll('#feedback tbody tr').length`); n < 5 {
				t.Errorf("feedback has %d rows", n)
			}
			if n := eval[int](l, `document.querySelectorAll('#feedback .badge.ok').length`); n < 5 {
				t.Errorf("%d passing verdicts shown", n)
			}
			// Learners never see the executed notebook.
			if n := eval[int](l, `document.querySelectorAll('ol.notebook').length`); n != 0 {
				t.Error("the learner's page shows the executed notebook")
			}
			// The language switch.
			l.do("switch to Chinese", chromedp.Click(chromedp.CSS(`a[lang="zh-CN"]`)), chromedp.WaitVisible(chromedp.CSS(`html[lang="zh-CN"] #feedback`)))
			if h := l.text("#fb-h"); h != "逐题反馈" {
				t.Errorf("Chinese feedback heading %q", h)
			}
			l.shot("06-learner-feedback-zh")
			l.do("switch back", chromedp.Click(chromedp.CSS(`a[lang="en"]`)), chromedp.WaitVisible(chromedp.CSS(`html[lang="en"] #feedback`)))
			// Learners may not open the dashboard or the CSV.
			l.do("learner dashboard", chromedp.Navigate(s.url+"/dashboard"), chromedp.WaitVisible(chromedp.CSS(".alert")))
			if st := eval[int](l, `fetch('/api/v1/gradebook.csv').then(r => r.status)`, chromedp.EvalAwaitPromise); st != 403 {
				t.Errorf("learner CSV: %d", st)
			}

			// Instructor.
			in := newTab(t, s.url)
			in.signIn("/dashboard", teacherTok)
			if n := eval[int](in, `document.querySelectorAll('svg.chart[role=img] rect').length`); n < 10 {
				t.Errorf("dashboard charts have %d bars", n)
			}
			if !strings.Contains(in.text("#latency"), "p50") {
				t.Error("no latency percentiles")
			}
			if recent := in.text("#recent tbody"); !strings.Contains(recent, "ada") || !strings.Contains(recent, "ch1") || !strings.Contains(recent, "graded") {
				t.Errorf("recent submissions: %q", recent)
			}
			in.shot("07-dashboard")
			in.do("exercise stats", chromedp.Click(chromedp.CSS(`a[href="/dashboard/exercises/ch1"]`)), chromedp.WaitVisible(chromedp.CSS("svg.chart")))
			if n := eval[int](in, `document.querySelectorAll('svg.chart').length`); n != 2 {
				t.Errorf("exercise page has %d charts", n)
			}
			if !strings.Contains(eval[string](in, `document.querySelectorAll('svg.chart')[0].textContent`), "90–100") {
				t.Error("histogram has no 90–100 bin")
			}
			in.shot("08-exercise-stats")
			in.do("gradebook", chromedp.Navigate(s.url+"/dashboard/gradebook?exercise=ch1"), chromedp.WaitVisible(chromedp.CSS("#gradebook")))
			in.shot("09-gradebook")
			dl := t.TempDir()
			dctx, cancelD := context.WithTimeout(in.ctx, time.Minute)
			defer cancelD()
			progress := chromedp.Events(dctx, browser.DownloadProgress)
			in.do("export CSV", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
					Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dl, EventsEnabled: new(true)})
				return err
			}), chromedp.Click(chromedp.CSS("#csv")))
			var csvPath string
			for ev, err := range progress {
				if err != nil {
					t.Fatal(err)
				}
				if ev.State == browser.DownloadProgressStateCompleted {
					csvPath = filepath.Join(dl, ev.GUID)
					break
				}
			}
			if csvPath == "" {
				t.Fatal("the CSV download did not complete")
			}
			f, err := os.Open(csvPath)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := csv.NewReader(f).ReadAll()
			f.Close()
			if err != nil || len(recs) != 2 {
				t.Fatalf("exported CSV: %v %v", recs, err)
			}
			subID := strings.TrimPrefix(subPath, "/submissions/")
			if r := recs[1]; r[0] != "ada" || r[1] != "ch1" || r[2] != "best" || r[3] != r[4] || r[5] != "1" || r[6] != subID {
				t.Errorf("CSV row %v", r)
			}
			in.do("open submission", chromedp.Click(chromedp.CSS(`#gradebook a[href="/dashboard/submissions/`+subID+`"]`)),
				chromedp.WaitVisible(chromedp.CSS("ol.notebook")))
			if n := eval[int](in, `document.querySelectorAll('ol.notebook li.cell.graded.ok').length`); n < 5 {
				t.Errorf("%d graded cells marked pass in the notebook view", n)
			}
			if n := eval[int](in, `document.querySelectorAll('ol.notebook li.cell pre.out').length`); n < 3 {
				t.Errorf("%d outputs rendered", n)
			}
			in.shot("10-instructor-submission")
			// A staged regrade: recompare ch1, preview the change per learner, discard it.
			in.do("regrade form", chromedp.Navigate(s.url+"/dashboard/regrades"), chromedp.WaitVisible(chromedp.CSS("#rg-mode")))
			in.do("stage regrade", chromedp.Click(chromedp.CSS("#rg-all")), chromedp.Submit(chromedp.CSS("#rg-mode")),
				chromedp.WaitVisible(chromedp.CSS("#rg-state")))
			// The answer's score does not move: its row is folded under the
			// summary, not listed among the changes.
			if n := eval[int](in, `document.querySelectorAll('#rg-items tbody tr').length`); n != 0 ||
				!eval[bool](in, `document.querySelector('#rg-unchanged').textContent.includes('ada')`) ||
				!strings.Contains(in.text("#rg-summary"), "0 scores change") || !strings.Contains(in.text("#rg-summary"), "1 unchanged") {
				t.Errorf("regrade preview: %d changed rows, summary %q", n, in.text("#rg-summary"))
			}
			in.shot("11-regrade-preview")
			in.do("discard regrade", chromedp.Click(chromedp.CSS(`form[action$="/discard"] button`)), chromedp.WaitVisible(chromedp.CSS("#rg-state.bad")))

			// Admin.
			ad := newTab(t, s.url)
			ad.signIn("/admin/users", adminTok)
			ad.do("create user", chromedp.SendKeys(chromedp.CSS("#u-name"), "grace"), chromedp.Submit(chromedp.CSS("#u-name")),
				chromedp.WaitVisible(chromedp.CSS("#new-token")))
			if tok := ad.text("#new-token"); !strings.HasPrefix(tok, "npg_") {
				t.Errorf("new token %q", tok)
			}
			ad.shot("12-admin-users")
			ad.do("runners", chromedp.Navigate(s.url+"/admin/runners"), chromedp.WaitVisible(chromedp.CSS("main h1")))
			ad.shot("13-admin-runners")
		})
	}
}

// TestWebHostileOutputsAreInert: a submission whose executed notebook and
// feedback carry <script>, event-handler attributes and HTML is shown to
// the instructor and to the learner; nothing runs, the text is shown as
// text and the HTML output only inside the sandboxed frame.
func TestWebHostileOutputsAreInert(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			evilName := `eve<img src=x onerror="window.pwned='name'">`
			learnerTok := addUser(t, dbURL, evilName, "learner")
			teacherTok := addUser(t, dbURL, "teacher", "instructor")
			s := startServer(t, dbURL, "--local-runner", "0")
			defer s.stop()
			subID := seedHostileSubmission(t, dbURL, evilName)
			// ch1's q1 shows its details only after a feedback release (it
			// has no deadline): the learner must see them to test them.
			releaseFeedback(t, dbURL, "ch1")

			for _, who := range []struct{ name, token, path string }{
				{"instructor", teacherTok, "/dashboard/submissions/" + subID},
				{"learner", learnerTok, "/submissions/" + subID},
			} {
				b := newTab(t, s.url)
				// Record any message a frame posts to this page, before any page loads.
				b.do("install listener", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
					_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
						Source: `window.__msgs = []; window.addEventListener('message', e => window.__msgs.push(String(e.data)));`})
					return err
				}))
				b.signIn(who.path, who.token)
				b.do("settle", chromedp.WaitVisible(chromedp.CSS("#feedback")), chromedp.Sleep(1500*time.Millisecond))
				b.shot("hostile-" + who.name)
				if got := eval[string](b, `typeof window.pwned === 'undefined' ? 'none' : String(window.pwned)`); got != "none" {
					t.Errorf("%s: hostile script ran: window.pwned = %s", who.name, got)
				}
				if title := eval[string](b, `document.title`); title == "pwned" || !strings.HasPrefix(title, "Submission") {
					t.Errorf("%s: title %q", who.name, title)
				}
				// The listener works (a positive control), and no frame posted to it.
				b.do("control message", chromedp.Evaluate[chromedp.Void](`window.postMessage('control', '*')`), chromedp.Sleep(200*time.Millisecond))
				if msgs := eval[[]string](b, `window.__msgs`); len(msgs) != 1 || msgs[0] != "control" {
					t.Errorf("%s: messages %v, want only the control", who.name, msgs)
				}
				body := eval[string](b, `document.body.innerText`)
				for _, want := range []string{`<script>window.pwned=6</script>`, `<img src=x onerror=window.pwned=5>`, evilName} {
					if !strings.Contains(body, want) {
						t.Errorf("%s: page does not show %q as text", who.name, want)
					}
				}
				if n := eval[int](b, `document.querySelectorAll('body script:not([src]), [onerror], [onload], [onclick]').length`); n != 0 {
					t.Errorf("%s: %d inline scripts or handler attributes in the DOM", who.name, n)
				}
				if n := eval[int](b, `document.querySelectorAll('img:not([src^="data:image/png;base64,"])').length`); n != 0 {
					t.Errorf("%s: %d images that are not stored PNGs", who.name, n)
				}
				if who.name != "instructor" {
					continue
				}
				if !strings.Contains(body, `<script>window.pwned=1;document.title='pwned'</script>`) {
					t.Error("the stream output is not shown as text")
				}
				frames := eval[[]map[string]any](b, `Array.from(document.querySelectorAll('iframe')).map(f => ({sandbox: f.getAttribute('sandbox'), srcdoc: f.getAttribute('srcdoc') || '', reach: (() => { try { return !!f.contentDocument } catch (e) { return false } })()}))`)
				if len(frames) != 1 || frames[0]["sandbox"] != "" || !strings.Contains(frames[0]["srcdoc"].(string), "<script>") || frames[0]["reach"] != false {
					t.Errorf("HTML output frames: %v (want one, sandbox=\"\", the HTML in srcdoc, not reachable)", frames)
				}
				b.do("frame into view", chromedp.ScrollIntoView(chromedp.CSS("iframe")), chromedp.Sleep(300*time.Millisecond))
				if png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot()); err == nil {
					_ = os.WriteFile(filepath.Join(b.dir, "hostile-instructor-frame.png"), png, 0o644)
				}
				if n := eval[int](b, `document.querySelectorAll('img[src^="data:image/png;base64,"]').length`); n != 1 {
					t.Errorf("%d PNG outputs shown, want 1 (the fake PNG must not be)", n)
				}
				if n := eval[int](b, `document.querySelectorAll('svg:not(.chart)').length`); n != 0 {
					t.Errorf("an SVG output was rendered as markup")
				}
			}
		})
	}
}

// onePixelPNG is a valid 1×1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="

// seedHostileSubmission stores a graded submission of ch1 whose executed
// notebook and feedback are hostile, as a learner's code could make them.
func seedHostileSubmission(t *testing.T, dbURL, learner string) string {
	t.Helper()
	answer := readFile(t, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb"))
	html := `<b id="bold-in-frame">bold HTML</b><script>parent.postMessage('script-ran','*'); document.title='pwned'</script>` +
		`<img src="x" onerror="parent.postMessage('onerror-ran','*')"><a href="javascript:parent.postMessage('js-url','*')">link</a>`
	svg := `<svg xmlns="http://www.w3.org/2000/svg" onload="parent.postMessage('svg-ran','*')"><script>window.pwned='svg'</script></svg>`
	executed := fmt.Sprintf(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
	 {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Title <script>window.pwned='md'</script>"},
	 {"cell_type": "code", "id": "c1", "metadata": {"grader": {"id": "q1", "points": 1}}, "execution_count": 1,
	  "source": "print('<script>window.pwned=1</script>')",
	  "outputs": [
	   {"output_type": "stream", "name": "stdout", "text": "<script>window.pwned=1;document.title='pwned'</script><img src=x onerror=\"window.pwned=2\">\n"},
	   {"output_type": "display_data", "metadata": {}, "data": {"text/html": %q, "text/plain": "<HTML>"}},
	   {"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": %q}},
	   {"output_type": "display_data", "metadata": {}, "data": {"image/png": "javascript:window.pwned='png'", "text/plain": "<Figure onload=x>"}},
	   {"output_type": "display_data", "metadata": {}, "data": {"image/png": %q}},
	   {"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/plain": "<svg onload=\"window.pwned=3\"></svg>"}},
	   {"output_type": "error", "ename": "ValueError", "evalue": "<script>window.pwned=4</script>", "traceback": ["\u001b[31mValueError\u001b[0m: <script>window.pwned=4</script>"]}
	  ]}
	]}`, html, svg, onePixelPNG)
	if _, err := base64.StdEncoding.DecodeString(onePixelPNG); err != nil {
		t.Fatal(err)
	}
	return seedGraded(t, dbURL, learner, "ch1", answer, store.Grade{Score: 0, MaxScore: 1, Profile: "cpu", RunnerID: "test",
		Executed: []byte(executed), Cells: []domain.CellResult{{
			CellID: "q1", Verdict: domain.VerdictMismatch, Points: 0, MaxPoints: 1, Counted: true,
			Message:  `<img src=x onerror=window.pwned=5>`,
			Observed: `<script>window.pwned=6</script>`,
			Diff:     "- <b onmouseover=\"window.pwned=7\">expected</b>\n+ <script>window.pwned=6</script>",
		}}})
}

// releaseFeedback releases exerciseID's feedback to every learner.
func releaseFeedback(t *testing.T, dbURL, exerciseID string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ReleaseFeedback(ctx, exerciseID, 0, "", domain.User{Name: "test"}); err != nil {
		t.Fatal(err)
	}
}

// seedGraded stores learner's submission of exerciseID (answer as upload
// and rebuilt notebook, in the cohort intake would give it) with the
// grade g, as if a runner had scored it, and returns its id.
func seedGraded(t *testing.T, dbURL, learner, exerciseID string, answer []byte, g store.Grade) string {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	u, err := db.UserByName(ctx, learner)
	if err != nil {
		t.Fatal(err)
	}
	cohort, err := db.SubmissionCohort(ctx, u.ID, exerciseID, "")
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: exerciseID, ExerciseVersion: "test",
		Upload: answer, Rebuilt: answer, Job: jobs.New(db, nil).GradeJob(exerciseID, domain.Requirement{}, 1), CohortID: cohort})
	if err != nil {
		t.Fatal(err)
	}
	g.SubmissionID = sub.ID
	g.Status = scoring.Status(g.Cells)
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.SaveGrade(g) }); err != nil {
		t.Fatal(err)
	}
	return sub.ID
}
