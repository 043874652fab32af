package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestWebCohortsStaffSeeOnlyTheirCohort is the cohorts' done-when in a
// browser: with two cohorts on one server, instructor A's dashboard and
// gradebook pages show A's learner and never cohort B's; the admin, who
// sees both, picks one cohort with the header's picker.
func TestWebCohortsStaffSeeOnlyTheirCohort(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	answer, err := os.ReadFile(filepath.Join(repoRoot, "answers", "ch1", "01.05_chapter_practice_answer.ipynb"))
	if err != nil {
		t.Skipf("the chapter 1 answer: %v", err)
	}
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			adminTok := addUser(t, dbURL, "root", "admin")
			for _, slug := range []string{"spring", "autumn"} {
				var out, errb bytes.Buffer
				if code := run(context.Background(), []string{"cohort", "create", slug, "--title", "TorchAir " + slug, "--db", dbURL}, &out, &errb); code != 0 {
					t.Fatalf("cohort create: %s", errb.String())
				}
			}
			inA := addUser(t, dbURL, "ina", "instructor", "--cohort", "spring")
			addUser(t, dbURL, "ada-spring", "learner", "--cohort", "spring")
			addUser(t, dbURL, "bob-autumn", "learner", "--cohort", "autumn")
			cells := []domain.CellResult{{CellID: "q1", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true}}
			for _, l := range []string{"ada-spring", "bob-autumn"} {
				seedGraded(t, dbURL, l, "ch1", answer, store.Grade{Score: 1, MaxScore: 1, Profile: "cpu", Cells: cells})
			}
			s := startServer(t, dbURL, "--local-runner", "0")
			defer s.stop()

			a := newTab(t, s.url)
			a.signIn("/dashboard", inA)
			if body := a.text("main"); !strings.Contains(body, "ada-spring") || strings.Contains(body, "bob-autumn") {
				t.Errorf("instructor A's dashboard: want ada-spring and not bob-autumn:\n%s", body)
			}
			if n := eval[int](a, `document.querySelectorAll('#cohort-pick').length`); n != 0 {
				t.Errorf("a picker for one cohort (%d)", n)
			}
			a.do("gradebook", chromedp.Navigate(s.url+"/dashboard/gradebook"), chromedp.WaitVisible(chromedp.CSS("main table")))
			a.shot("cohorts-01-gradebook-instructor-a")
			if body := a.text("main"); !strings.Contains(body, "ada-spring") || strings.Contains(body, "bob-autumn") {
				t.Errorf("instructor A's gradebook: want ada-spring and not bob-autumn:\n%s", body)
			}
			a.do("another cohort's gradebook", chromedp.Navigate(s.url+"/dashboard/gradebook?cohort=autumn"), chromedp.WaitVisible(chromedp.CSS("main")))
			if body := a.text("main"); strings.Contains(body, "bob-autumn") {
				t.Errorf("instructor A picked autumn by URL and saw:\n%s", body)
			}

			ad := newTab(t, s.url)
			ad.signIn("/dashboard/gradebook", adminTok)
			if body := ad.text("main"); !strings.Contains(body, "ada-spring") || !strings.Contains(body, "bob-autumn") {
				t.Errorf("the admin's gradebook: want both learners:\n%s", body)
			}
			// The new page is the one whose picker has autumn selected
			// (an attribute the old page's changed value does not set).
			ad.do("pick autumn", chromedp.SetValue(chromedp.CSS("#cohort-pick"), "autumn"),
				chromedp.Click(chromedp.CSS("form.cohort-pick button[type=submit]")),
				chromedp.WaitReady(chromedp.CSS(`#cohort-pick option[value="autumn"][selected]`)), chromedp.WaitVisible(chromedp.CSS("main table")))
			ad.shot("cohorts-02-gradebook-admin-autumn")
			if loc := ad.location(); !strings.Contains(loc, "cohort=autumn") {
				t.Errorf("after picking: %s", loc)
			}
			if body := ad.text("main"); strings.Contains(body, "ada-spring") || !strings.Contains(body, "bob-autumn") {
				t.Errorf("the admin's autumn gradebook: want bob-autumn only:\n%s", body)
			}
			// The pick follows the header's links.
			ad.do("dashboard", chromedp.Click(chromedp.CSS(`header nav a[href^="/dashboard?"]`)), chromedp.WaitVisible(chromedp.CSS("main h1")))
			if loc := ad.location(); loc != "/dashboard?cohort=autumn" {
				t.Errorf("the dashboard link went to %s", loc)
			}
			if body := ad.text("main"); strings.Contains(body, "ada-spring") || !strings.Contains(body, "bob-autumn") {
				t.Errorf("the admin's autumn dashboard: want bob-autumn only:\n%s", body)
			}
		})
	}
}
