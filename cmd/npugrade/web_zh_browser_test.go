package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

// englishWords are words of the grader's and the pages' English that must
// not appear on a Chinese learner page. Quoted text (the learner's own
// output), code (exception names, MIME types) and the author's 解析 are
// removed first.
var englishWords = regexp.MustCompile(`(?i)\b(the|output|outputs|expected|cell|cells|pass|passes|mismatch|graded|queued|running|failed|line|got|question|questions|attempt|attempts|points|score|matches|differs|submitted|deadline|learner)\b`)

func withoutCode(s string) string {
	// The exercise author's own explanation (解析) is course content, not
	// the grader's words: it may name technical terms such as "FX pass".
	s = regexp.MustCompile(`(?s)解析：.*$`).ReplaceAllString(s, "")
	s = regexp.MustCompile(`"[^"]*"|“[^”]*”|\b[A-Za-z_.]*(Error|Exception)\b(: [^；]*)?|\b[a-z]+/[a-z0-9.+-]+\b|\bq[0-9]+\b`).ReplaceAllString(s, "")
	return s
}

// TestWebLearnerChinese: a learner whose browser asks for Chinese uploads
// a notebook with wrong answers; the exercise list, the exercise page and
// the graded submission show verdicts, feedback messages and the summary
// in Chinese, with no English left in them.
func TestWebLearnerChinese(t *testing.T) {
	if testing.Short() {
		t.Skip("executes notebooks in a browser test")
	}
	chromiumPath(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			tok := addUser(t, dbURL, "lin", "learner")
			s := startServer(t, dbURL, "--local-runner", "1")
			defer s.stop()

			l := newTab(t, s.url)
			l.do("Chinese", chromedp.Navigate(s.url+"/login?lang=zh-CN"), chromedp.WaitVisible(chromedp.CSS(`html[lang="zh-CN"] #token`)))
			l.signIn("/exercises", tok)
			l.do("open ch1", chromedp.Click(chromedp.CSS(`a[href="/exercises/ch1"]`)), chromedp.WaitVisible(chromedp.CSS("#notebook")))
			if intro := l.text("main p.muted"); !strings.Contains(intro, "道题") || englishWords.MatchString(intro) {
				t.Errorf("exercise summary line in Chinese: %q", intro)
			}
			wrong, err := filepath.Abs(filepath.Join(repoRoot, "answers/ch1/fixtures/normalised-answers.ipynb"))
			if err != nil {
				t.Fatal(err)
			}
			l.do("upload", chromedp.SetUploadFiles(chromedp.CSS("#notebook"), []string{wrong}),
				chromedp.Click(chromedp.CSS(`form[enctype] button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS("#status")))
			deadline := time.Now().Add(3 * time.Minute)
			for !eval[bool](l, `!!document.querySelector('#feedback')`) {
				if time.Now().After(deadline) {
					t.Fatal("no feedback after 3 minutes")
				}
				time.Sleep(200 * time.Millisecond)
			}
			l.do("feedback", chromedp.WaitVisible(chromedp.CSS("#feedback")))
			l.shot("01-learner-feedback-zh")

			verdicts := eval[[]string](l, `[...document.querySelectorAll('#feedback .badge')].map(e => e.textContent.trim())`)
			raw := eval[[]string](l, `[...document.querySelectorAll('#feedback .badge')].map(e => e.dataset.verdict)`)
			if len(verdicts) < 8 || !strings.Contains(strings.Join(raw, ","), "mismatch") {
				t.Fatalf("verdicts %v (%v), want 8 with a mismatch", verdicts, raw)
			}
			for _, v := range verdicts {
				if regexp.MustCompile(`[A-Za-z]`).MatchString(v) {
					t.Errorf("verdict %q is not in Chinese", v)
				}
			}
			msgs := eval[[]string](l, `[...document.querySelectorAll('#feedback .msg, #summary, #status, main h1, #feedback th')].map(e => e.textContent.trim())`)
			for _, m := range msgs {
				if w := englishWords.FindString(withoutCode(m)); w != "" {
					t.Errorf("English %q on the Chinese page: %q", w, m)
				}
			}
			if !strings.Contains(strings.Join(msgs, "\n"), "输出") {
				t.Errorf("no Chinese feedback message among %q", msgs)
			}
			l.do("back to the exercise", chromedp.Navigate(s.url+"/exercises/ch1"), chromedp.WaitVisible(chromedp.CSS("#hist-h")))
			hist := l.text("main")
			if w := englishWords.FindString(withoutCode(hist)); w != "" {
				t.Errorf("English %q on the Chinese exercise page", w)
			}
			l.shot("02-learner-exercise-zh")
		})
	}
}
