package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestWebManualPendingAndFormProblems (issue 18's known gaps, in a
// browser): a submission waiting for manual grading is in the gradebook,
// marked, and in the exercise's statistics, which a section filters; a
// manual grade and a regrade answer with problems come back as their
// forms, the problems listed inline and what the instructor typed kept,
// and nothing is recorded until they are mended.
func TestWebManualPendingAndFormProblems(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := storetest.URL(t, d)
			addUser(t, dbURL, "ada", "learner")
			addUser(t, dbURL, "bob", "learner")
			teacherTok := addUser(t, dbURL, "teacher", "instructor")
			s := startManualServer(t, dbURL, "0")
			defer s.stop()
			adaSub := seedManualSubmission(t, dbURL, "ada", "图模式更快。")
			bobSub := seedManualSubmission(t, dbURL, "bob", "没有测量。")
			db, err := store.Open(ctx, dbURL, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.RawExec(ctx, "UPDATE users SET section = CASE name WHEN 'ada' THEN 'Red' ELSE 'Blue' END WHERE role = 'learner'"); err != nil {
				t.Fatal(err)
			}

			in := newTab(t, s.url)
			in.signIn("/dashboard/gradebook?lang=en", teacherTok)
			if n := eval[int](in, `document.querySelectorAll('#gradebook tr.manual-pending .mg-pending').length`); n != 2 {
				t.Errorf("%d rows marked manual grading pending, want 2", n)
			}
			if row := in.text("#gradebook tr.manual-pending"); !strings.Contains(row, "1 / 3") || !strings.Contains(row, "manual grading pending") {
				t.Errorf("pending row %q", row)
			}
			in.shot("01-gradebook-pending")

			// The exercise's statistics: both learners, then section Blue.
			in.do("statistics", chromedp.Navigate(s.url+"/dashboard/exercises/manual?lang=en"), chromedp.WaitVisible(chromedp.CSS("#ex-filter")))
			if n := in.text("#ex-learners"); n != "2" {
				t.Errorf("learners in the statistics: %s", n)
			}
			in.do("section Blue", chromedp.SetValue(chromedp.CSS("#ex-section"), "Blue"), chromedp.Click(chromedp.CSS("#ex-apply")),
				chromedp.WaitReady(chromedp.CSS(`#ex-section option[value="Blue"][selected]`)))
			if n := in.text("#ex-learners"); n != "1" || !strings.Contains(in.location(), "section=Blue") {
				t.Errorf("section Blue: %s learners at %s", n, in.location())
			}
			in.shot("02-statistics-section")

			// A manual grade with problems: the form comes back with them.
			in.do("grading page", chromedp.Navigate(s.url+"/dashboard/manual/manual/explain?sub="+adaSub+"&lang=zh-CN"), chromedp.WaitVisible(chromedp.CSS("#mg-form")))
			in.do("grade with a too large adjustment", chromedp.Click(chromedp.CSS("#item-compare")),
				chromedp.SendKeys(chromedp.CSS("#mg-comment"), "测量清楚，但收益说明不足"), chromedp.SetValue(chromedp.CSS("#mg-adjust"), "5"),
				chromedp.Click(chromedp.CSS("#mg-save")), chromedp.WaitVisible(chromedp.CSS("#mg-problems")))
			if p := in.text("#mg-error"); !strings.Contains(p, "评分未保存") || !strings.Contains(p, "adjustment 5") {
				t.Errorf("problems shown: %q", p)
			}
			if c := eval[string](in, `document.querySelector('#mg-comment').value`); c != "测量清楚，但收益说明不足" {
				t.Errorf("the comment typed is gone: %q", c)
			}
			if !eval[bool](in, `document.querySelector('#item-compare').checked && !document.querySelector('#item-benefit').checked`) ||
				eval[string](in, `document.querySelector('#mg-adjust').value`) != "5" {
				t.Error("the items or the adjustment typed are gone")
			}
			if who := in.text("#mg-learner"); who != "ada" {
				t.Errorf("the form came back on %q's submission", who)
			}
			in.shot("03-manual-problems")
			if sub, _ := db.Submission(ctx, adaSub); sub.Status != domain.StatusNeedsManual {
				t.Errorf("an invalid grade changed the submission: %s", sub.Status)
			}
			in.do("mend and save", chromedp.SetValue(chromedp.CSS("#mg-adjust"), "0.5"), chromedp.Click(chromedp.CSS("#mg-save")),
				chromedp.WaitVisible(chromedp.CSS("#mg-saved")))
			if sub, _ := db.Submission(ctx, adaSub); sub.Status != domain.StatusGraded || sub.Score != 2.5 {
				t.Errorf("after the mended grade: %s %g", sub.Status, sub.Score)
			}

			// A regrade answer with problems: the queue again, that form
			// filled in as typed, the problem above it.
			bob, _ := db.UserByName(ctx, "bob")
			req, err := db.CreateRegradeRequest(ctx, domain.RegradeRequest{SubmissionID: bobSub, CellID: "q1-check", Message: "请再看一下"}, bob)
			if err != nil {
				t.Fatal(err)
			}
			form := "#rq-" + strconv.FormatInt(req.ID, 10)
			in.do("queue", chromedp.Navigate(s.url+"/dashboard/regrade-requests?lang=en"), chromedp.WaitVisible(chromedp.CSS(form+" .rq-answer")))
			in.do("answer without a reason", chromedp.SendKeys(chromedp.CSS(form+" textarea"), "q1 looks right to me"),
				chromedp.SendKeys(chromedp.CSS(form+` input[name="points"]`), "0.5"),
				chromedp.Click(chromedp.CSS(form+" button")), chromedp.WaitVisible(chromedp.CSS(form+" .rq-problems")))
			if p := in.text(form + " .rq-error"); !strings.Contains(p, "not sent") || !strings.Contains(p, "reason: required") {
				t.Errorf("answer problems: %q", p)
			}
			if a := eval[string](in, `document.querySelector('`+form+` textarea').value`); a != "q1 looks right to me" {
				t.Errorf("the answer typed is gone: %q", a)
			}
			if p := eval[string](in, `document.querySelector('`+form+` input[name="points"]').value`); p != "0.5" {
				t.Errorf("the points typed are gone: %q", p)
			}
			in.shot("04-regrade-answer-problems")
			if r, _ := db.RegradeRequest(ctx, req.ID); r.State != domain.RegradeRequestOpen {
				t.Errorf("an invalid answer answered the request: %+v", r)
			}
			in.do("mend and send", chromedp.SendKeys(chromedp.CSS(form+` input[name="reason"]`), "half right"),
				chromedp.Click(chromedp.CSS(form+" button")), chromedp.WaitVisible(chromedp.CSS(form+`[data-state="answered"] .rq-override`)))
			if sub, _ := db.Submission(ctx, bobSub); sub.Score != 0.5 {
				t.Errorf("bob's score after the override: %g", sub.Score)
			}
			acts := strings.Join(auditActions(t, dbURL), "\n")
			if strings.Count(acts, "manual-grade teacher submission "+adaSub) != 1 || strings.Count(acts, "score-override teacher submission "+bobSub) != 1 ||
				strings.Count(acts, "regrade-answered teacher") != 1 {
				t.Errorf("audit log (one grade, one override, one answer):\n%s", acts)
			}
		})
	}
}
