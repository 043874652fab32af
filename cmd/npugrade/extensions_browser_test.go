package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestWebGrantExtension (issue 18): an instructor grants a learner an
// extension on the exercise's extensions page, the learner's exercise page
// shows their own deadline, and the instructor revokes it.
func TestWebGrantExtension(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	// ch1 with a deadline, served from a copy.
	exDir, ansDir := exercisetest.CopyWith(t, filepath.Join(repoRoot, "exercises"), filepath.Join(repoRoot, "answers"), "ch1", map[string]any{
		"deadline": "2026-03-01T12:00:00Z", "late_penalty": []map[string]any{{"after": "0s", "multiplier": 0.5}}})
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			learnerTok := addUser(t, dbURL, "ada", "learner")
			teacherTok := addUser(t, dbURL, "teacher", "instructor")
			s := startServer(t, dbURL, "--local-runner", "0",
				"--exercises", exDir, "--answers", ansDir)
			defer s.stop()

			in := newTab(t, s.url)
			// The instructor works in Beijing time: the pages write every
			// time in it, and the deadline typed is read in it.
			in.do("zone", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Shanghai"})
				return err
			}))
			in.signIn("/dashboard/exercises/ch1", teacherTok)
			in.do("open extensions", chromedp.Click(chromedp.CSS("#ext-link")), chromedp.WaitVisible(chromedp.CSS("#ext-form")))
			if z := in.text("#ext-zone"); z != "(UTC+8)" {
				t.Errorf("the deadline's zone %q, want (UTC+8)", z)
			}
			if n := eval[int](in, `document.querySelectorAll('#ext-learners option[value="ada"]').length`); n != 1 {
				t.Errorf("the learner picker offers ada %d times", n)
			}
			in.shot("01-extensions-empty")
			// datetime-local takes its value as typed digits in the
			// browser's locale; setting it is what a date picker does.
			in.do("fill the form", chromedp.SendKeys(chromedp.CSS("#ext-learner"), "ada"),
				chromedp.SetValue(chromedp.CSS("#ext-deadline"), "2026-03-09T16:30"),
				chromedp.Click(chromedp.CSS(`input[name=late_mode][value=steps]`)),
				chromedp.SendKeys(chromedp.CSS(`.late-steps tbody tr:first-child input[name=late_after]`), "24"),
				chromedp.SendKeys(chromedp.CSS(`.late-steps tbody tr:first-child input[name=late_multiplier]`), "0.8"))
			in.do("grant", chromedp.Click(chromedp.CSS("#ext-form button[type=submit]")), chromedp.WaitVisible(chromedp.CSS("#ext-done")))
			in.shot("02-extension-granted")
			row := in.text("#ext-list tbody tr")
			if !strings.Contains(row, "ada") || !strings.Contains(row, "teacher") || !strings.Contains(row, "× 0.8") {
				t.Errorf("granted row %q", row)
			}
			if n := eval[int](in, `document.querySelectorAll('#ext-list button[type=submit]').length`); n != 1 {
				t.Errorf("%d revoke buttons, want 1", n)
			}
			when := eval[string](in, `document.querySelector('#ext-list tbody tr td time').getAttribute('datetime')`)
			if when != "2026-03-09T08:30:00Z" || !strings.Contains(row, "2026-03-09 16:30:00 UTC+8") {
				t.Errorf("deadline shown %q (%q), want 2026-03-09T08:30:00Z written in UTC+8", when, row)
			}

			l := newTab(t, s.url)
			l.signIn("/exercises/ch1", learnerTok)
			if got := eval[string](l, `document.querySelector('#deadline time').getAttribute('datetime')`); got != "2026-03-09T08:30:00Z" {
				t.Errorf("the learner's deadline %q", got)
			}
			if !strings.Contains(l.text("#extended"), "extended for you") || !strings.Contains(l.text("#late"), "0.8") {
				t.Errorf("the learner's page: %q / %q", l.text("#extended"), l.text("#late"))
			}
			l.shot("03-learner-extended")

			// The notice of the grant is on the page already: wait for the
			// revoke button to go, which only the new page does.
			in.do("revoke", chromedp.Click(chromedp.CSS("#ext-list button[type=submit]")),
				chromedp.WaitNotPresent(chromedp.CSS("#ext-list button[type=submit]")), chromedp.WaitVisible(chromedp.CSS("#ext-done")))
			if got := in.text("#ext-done"); got != "The extension is revoked." {
				t.Errorf("notice after revoking %q", got)
			}
			if !strings.Contains(in.text("#ext-list tbody tr"), "revoked by teacher") {
				t.Errorf("revoked row %q", in.text("#ext-list tbody tr"))
			}
			in.shot("04-extension-revoked")
			l.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#deadline")))
			if n := eval[int](l, `document.querySelectorAll('#extended').length`); n != 0 {
				t.Error("the learner's page still shows the extension")
			}
		})
	}
}
