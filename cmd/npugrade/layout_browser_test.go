package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// layoutCheck runs in the page and lists what does not fit the viewport:
// an element that makes the page scroll sideways (the outermost one that
// sticks out of a parent that does not), a chart outside its card or with
// a label outside the chart or too small to read, a badge taller than two
// lines of its font. Each problem names the element as a CSS path with
// its width.
const layoutCheck = `(() => {
  const out = [], vw = window.innerWidth;
  const path = e => {
    const parts = [];
    for (let n = e; n && n.nodeType === 1 && parts.length < 5; n = n.parentElement) {
      let s = n.tagName.toLowerCase();
      if (n.id) { parts.unshift(s + '#' + n.id); break; }
      const cls = typeof n.className === 'string' ? n.className.trim() : '';
      if (cls) s += '.' + cls.split(/\s+/).join('.');
      parts.unshift(s);
    }
    return parts.join(' > ');
  };
  const scrolls = e => {
    for (let n = e.parentElement; n && n !== document.body; n = n.parentElement) {
      const o = getComputedStyle(n).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
    }
    return false;
  };
  if (document.documentElement.scrollWidth > vw) {
    out.push('the page is ' + document.documentElement.scrollWidth + ' px wide in a ' + vw + ' px window');
    let n = 0;
    for (const e of document.body.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      if (r.right <= vw + 0.5 || r.width === 0 || scrolls(e) || getComputedStyle(e).position === 'fixed') continue;
      const p = e.parentElement && e.parentElement.getBoundingClientRect();
      if (p && p.right > vw + 0.5 && e.parentElement !== document.body) continue;
      out.push('  ' + path(e) + ' ends at ' + Math.round(r.right) + ' px (' + Math.round(r.width) + ' px wide)');
      if (++n >= 6) break;
    }
  }
  for (const svg of document.querySelectorAll('svg.chart')) {
    const card = svg.closest('.card') || svg.parentElement, a = svg.getBoundingClientRect(), b = card.getBoundingClientRect();
    if (a.left < b.left - 0.5 || a.right > b.right + 0.5 || a.top < b.top - 0.5 || a.bottom > b.bottom + 0.5)
      out.push('chart ' + path(svg) + ' (' + Math.round(a.width) + ' px wide, ' + Math.round(a.left) + '..' + Math.round(a.right) +
        ') is not inside its card (' + Math.round(b.left) + '..' + Math.round(b.right) + ')');
    const scale = a.width / svg.viewBox.baseVal.width;
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.left < a.left - 1 || r.right > a.right + 1 || r.top < a.top - 1 || r.bottom > a.bottom + 1)
        out.push('chart label "' + t.textContent + '" of ' + path(svg) + ' is clipped (' + Math.round(r.left) + '..' + Math.round(r.right) +
          ' in ' + Math.round(a.left) + '..' + Math.round(a.right) + ')');
      const px = parseFloat(t.getAttribute('font-size')) * scale;
      if (px < 10) { out.push('chart label "' + t.textContent + '" of ' + path(svg) + ' is ' + px.toFixed(1) + ' px'); break; }
    }
  }
  for (const e of document.querySelectorAll('.badge')) {
    const cs = getComputedStyle(e), r = e.getBoundingClientRect();
    const line = parseFloat(cs.lineHeight) || 1.5 * parseFloat(cs.fontSize);
    if (r.height > 2.2 * line) out.push('badge ' + path(e) + ' "' + e.textContent.trim() + '" is ' + Math.round(r.height) + ' px tall, ' + Math.round(r.width) + ' px wide');
  }
  return out;
})()`

// visibleText is the page's text a Chinese reader reads in the page's own
// words: code, the learner's outputs, the language switch and form values
// are left out.
const visibleText = `(() => {
  const c = document.body.cloneNode(true);
  c.querySelectorAll('pre, code, textarea, script, style, iframe, [lang="en"], option, .rq-message, .md, #device-client').forEach(e => e.remove());
  return c.textContent.replace(/\s+/g, ' ');
})()`

// englishSentence is three English words in a row (a phrase of the
// pages left untranslated); technical names and ids are taken out first.
var englishSentence = regexp.MustCompile(`\b[A-Za-z]{2,}(?:[ ,]+[A-Za-z]{2,}){2,}\b`)

// pageWords are words of the staff pages' English that englishWords
// (the learner's pages) lacks.
var pageWords = regexp.MustCompile(`(?i)\b(instructor|admin|submission|submissions|grading|waiting|released|best|latest|unchanged|draining|revoked|active|requested)\b`)

// technical terms and names that stay as they are in Chinese text.
var technical = regexp.MustCompile(`（learner、instructor 或 admin，留空为 learner）|TorchAir|npugraph_ex|npugrade|JupyterHub|CANN|LTI 1\.3|LTI|LMS|CSV|JSON|URL|URI|API|MOSS|Python|winnowing|recompare|reexecute|UTC|p50|p90|p99|PNG|https?|Atlas|NPU|CPU|cpu|Canvas|deployment_id|ipynb|npg_\S*|(?i:Chapter \d+ [A-Za-z: ]+)`)

// TestWebPagesFitPhoneAndDesktop visits every learner and staff page of a
// server with graded submissions at 390×844 (a phone) and 1280×800, in
// English and in Chinese: no page scrolls sideways, every chart lies in
// its card with readable labels, no badge wraps per character, and the
// Chinese pages leave no English sentence. SQLite only: the pages do not
// depend on the dialect (the store tests cover both), and the walk of
// some hundred page loads is the slow part. NPUGRADE_LAYOUT_SHOTS=1
// saves a screenshot of every page, not only of those that fail.
func TestWebPagesFitPhoneAndDesktop(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	dbURL := storetest.URL(t, "sqlite")
	adminTok := addUser(t, dbURL, "root", "admin")
	for _, slug := range []string{"spring", "autumn"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"cohort", "create", slug, "--title", "TorchAir " + slug + " 2026", "--db", dbURL}, &out, &errb); code != 0 {
			t.Fatalf("cohort create: %s", errb.String())
		}
	}
	learnerTok := addUser(t, dbURL, "ada", "learner", "--cohort", "spring")
	addUser(t, dbURL, "bob", "learner", "--cohort", "autumn")
	teacherTok := addUser(t, dbURL, "teacher", "instructor", "--cohort", "spring")

	// One server for ch1 and the manual fixture: copy both into one tree
	// (the catalog reads directories, not links).
	exDir, ansDir := t.TempDir(), t.TempDir()
	for _, c := range [][2]string{
		{filepath.Join(repoRoot, "exercises", "ch1"), filepath.Join(exDir, "ch1")},
		{filepath.Join(repoRoot, "answers", "ch1"), filepath.Join(ansDir, "ch1")},
		{filepath.Join(manualFixtures, "exercises", "manual"), filepath.Join(exDir, "manual")},
		{filepath.Join(manualFixtures, "answers", "manual"), filepath.Join(ansDir, "manual")},
	} {
		if err := os.CopyFS(c[1], os.DirFS(c[0])); err != nil {
			t.Fatal(err)
		}
	}
	// The fixture's title is English only; a course gives a Chinese one.
	meta := filepath.Join(exDir, "manual", "exercise.json")
	raw := readFile(t, meta)
	if err := os.WriteFile(meta, bytes.Replace(raw, []byte(`"title": "Manual grading"`), []byte(`"title": "人工评分练习"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	answer := readFile(t, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb"))
	adaSub := seedLayoutSubmission(t, dbURL, "ada", answer, 0)
	seedLayoutSubmission(t, dbURL, "ada", answer, 3)
	seedLayoutSubmission(t, dbURL, "bob", answer, 5)
	manualSub := seedManualSubmission(t, dbURL, "ada", "**图模式**更快：2.0 ms → 0.8 ms")
	releaseFeedback(t, dbURL, "ch1")
	askRegrade(t, dbURL, "ada", adaSub, "q2", "我的输出和期望输出只差一个空格，请再看一下。")

	s := startServer(t, dbURL, "--local-runner", "0", "--exercises", exDir, "--answers", ansDir)
	defer s.stop()
	deviceCode := startDeviceSignIn(t, s.url)

	learner := []string{
		"/exercises", "/exercises/ch1", "/submissions/" + adaSub, "/submissions/" + manualSub, "/account", "/device",
		"/device?code=" + url.QueryEscape(deviceCode),
	}
	staff := []string{
		"/dashboard", "/dashboard/exercises/ch1", "/dashboard/exercises/manual", "/dashboard/gradebook",
		"/dashboard/submissions/" + adaSub, "/dashboard/submissions/" + manualSub, "/dashboard/manual/manual/explain",
		"/dashboard/regrades", "/dashboard/regrade-requests", "/dashboard/exercises/ch1/extensions",
		"/dashboard/exercises/ch1/similarity", "/dashboard/references",
	}
	admin := []string{"/dashboard", "/admin/users", "/admin/runners", "/admin/audit", "/admin/lti"}

	anon := newTab(t, s.url)
	walkLayout(t, anon, []string{"/login"})
	l := newTab(t, s.url)
	l.signIn("/exercises", learnerTok)
	walkLayout(t, l, learner)
	// A refused upload: the page's reasons, on a phone, in Chinese.
	bad := filepath.Join(t.TempDir(), "broken.ipynb")
	if err := os.WriteFile(bad, []byte("this is not a notebook"), 0o644); err != nil {
		t.Fatal(err)
	}
	l.do("refused upload", chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.url+"/exercises/ch1?lang=zh-CN"),
		chromedp.SetUploadFiles(chromedp.CSS("#notebook"), []string{bad}),
		chromedp.Click(chromedp.CSS(`form[enctype] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(".alert")))
	alert := l.text(".alert")
	if w := englishSentence.FindString(withoutCode(alert)); w != "" || !strings.Contains(alert, "笔记本不是有效的 JSON") {
		l.shot("refused-upload-zh")
		t.Errorf("the refused upload's reasons in Chinese: %q", alert)
	}
	if problems := eval[[]string](l, layoutCheck); len(problems) > 0 {
		l.shot("refused-upload-zh")
		t.Errorf("the refused upload's page at 390 px:\n%s", strings.Join(problems, "\n"))
	}
	in := newTab(t, s.url)
	in.signIn("/dashboard", teacherTok)
	// A staged regrade, to show its preview.
	in.do("regrade form", chromedp.Navigate(s.url+"/dashboard/regrades"), chromedp.WaitVisible(chromedp.CSS("#rg-mode")))
	in.do("stage regrade", chromedp.Click(chromedp.CSS("#rg-all")), chromedp.Submit(chromedp.CSS("#rg-mode")),
		chromedp.WaitVisible(chromedp.CSS("#rg-state, .alert")))
	walkLayout(t, in, append(staff, in.location()))
	ad := newTab(t, s.url)
	ad.signIn("/dashboard", adminTok)
	if opts := eval[[]string](ad, `[...document.querySelectorAll('#cohort-pick option')].map(o => o.value)`); len(opts) < 3 {
		t.Errorf("the admin's cohort picker offers %q, want all and the two cohorts", opts)
	}
	walkLayout(t, ad, admin)
}

// walkLayout opens each path at a phone's and a desktop's size, in
// English and Chinese, and reports what does not fit (with a screenshot)
// and, in Chinese, English phrases left on the page.
func walkLayout(t *testing.T, b *tab, paths []string) {
	t.Helper()
	sizes := []struct {
		name string
		w, h int64
	}{{"phone", 390, 844}, {"desktop", 1280, 800}}
	for _, lang := range []string{"en", "zh-CN"} {
		for _, sz := range sizes {
			b.do("viewport", chromedp.EmulateViewport(sz.w, sz.h))
			for _, p := range paths {
				sep := "?"
				if strings.Contains(p, "?") {
					sep = "&"
				}
				resp, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(b.base+p+sep+"lang="+lang))
				if err != nil {
					t.Fatalf("open %s: %v", p, err)
				}
				name := fmt.Sprintf("%s-%s-%s", sz.name, lang, regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(p), "-"))
				if resp.Status != http.StatusOK {
					b.shot(name)
					t.Errorf("%s (%s): status %d", p, lang, resp.Status)
					continue
				}
				if os.Getenv("NPUGRADE_LAYOUT_SHOTS") != "" {
					b.shot(name) // every page, to look at
				}
				// A message key without a message shows itself as ‹key›.
				if keys := regexp.MustCompile(`‹[^›]*›`).FindAllString(eval[string](b, `document.body.textContent`), 5); len(keys) > 0 {
					t.Errorf("%s (%s) shows messages that have no text: %v", p, lang, keys)
				}
				if problems := eval[[]string](b, layoutCheck); len(problems) > 0 {
					b.shot(name)
					t.Errorf("%s at %d px (%s):\n%s", p, sz.w, lang, strings.Join(problems, "\n"))
				}
				if lang != "zh-CN" || sz.name != "phone" {
					continue
				}
				text := technical.ReplaceAllString(withoutCode(eval[string](b, visibleText)), "")
				var english []string
				for _, re := range []*regexp.Regexp{englishWords, pageWords} {
					if w := re.FindString(text); w != "" {
						english = append(english, fmt.Sprintf("word %q in …%s…", w, around(text, w)))
					}
				}
				for _, s := range englishSentence.FindAllString(text, 5) {
					english = append(english, fmt.Sprintf("%q", s))
				}
				if len(english) > 0 {
					b.shot(name)
					t.Errorf("%s in Chinese leaves English: %s", p, strings.Join(english, "; "))
				}
			}
		}
	}
}

// around is a little of s on either side of the first w in it.
func around(s, w string) string {
	i := strings.Index(strings.ToLower(s), strings.ToLower(w))
	if i < 0 {
		return ""
	}
	return s[max(0, i-40):min(len(s), i+len(w)+40)]
}

// seedLayoutSubmission stores a graded submission of ch1 whose feedback
// has every kind of cell the pages show (a pass, a mismatch with its
// outputs and diff, an error, a hidden test) and whose executed notebook
// has outputs, long lines included; passed of the first questions pass.
func seedLayoutSubmission(t *testing.T, dbURL, learner string, answer []byte, passed int) string {
	t.Helper()
	var nb map[string]any
	if err := json.Unmarshal(answer, &nb); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("tensor([0.1234, 0.5678, 0.9012, 0.3456]) ", 12)
	for _, c := range nb["cells"].([]any) {
		cell := c.(map[string]any)
		if cell["cell_type"] != "code" {
			continue
		}
		cell["execution_count"] = 1
		cell["outputs"] = []any{
			map[string]any{"output_type": "stream", "name": "stdout", "text": "loss: 0.0421\n" + long + "\n"},
			map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{"image/png": onePixelPNG, "text/plain": "<Figure>"}},
		}
	}
	executed, err := json.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	var cells []domain.CellResult
	for i := 1; i <= 19; i++ {
		id := fmt.Sprintf("q%d", i)
		c := domain.CellResult{CellID: id, MaxPoints: 1, Counted: true}
		switch {
		case i <= passed:
			c.Verdict, c.Points, c.Message = domain.VerdictPass, 1, "output matches"
		case i%3 == 0:
			c.Verdict, c.Message = domain.VerdictError, "the cell raised RuntimeError: npugraph_ex backend failed to compile the graph"
		default:
			c.Verdict = domain.VerdictMismatch
			c.Message = "output differs from the expected output at line 2 (token 3): got 0.5679"
			c.Observed, c.Expected = "loss: 0.0421\n"+long, "loss: 0.0421\n"+strings.ReplaceAll(long, "0.5678", "0.5679")
			c.Diff = "- " + long + "\n+ " + strings.ReplaceAll(long, "0.5678", "0.5679")
		}
		cells = append(cells, c)
	}
	return seedGraded(t, dbURL, learner, "ch1", answer, store.Grade{Score: float64(passed), MaxScore: 19, Profile: "cpu", RunnerID: "test",
		Message: fmt.Sprintf("%d of 19 graded cells pass", passed), Executed: executed, Cells: cells})
}

// askRegrade records learner's regrade request on a cell.
func askRegrade(t *testing.T, dbURL, learner, subID, cell, message string) {
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
	if _, err := db.CreateRegradeRequest(ctx, domain.RegradeRequest{SubmissionID: subID, CellID: cell, Message: message}, u); err != nil {
		t.Fatal(err)
	}
}

// startDeviceSignIn starts a device sign-in as a notebook client does and
// returns the code the learner is to approve.
func startDeviceSignIn(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/device/code", url.Values{"client_name": {"npugrade.py on jupyter-abc"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dc deviceCodeReply
	if err := json.NewDecoder(resp.Body).Decode(&dc); err != nil {
		t.Fatal(err)
	}
	return dc.UserCode
}
