package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// Browser tests of the instructor workflows of issue 18 on the manual
// fixture exercise (testdata/manual): grading a manual cell with its
// rubric, releasing feedback, answering a regrade request. Submissions
// are seeded as a runner would have scored them (the runner path is
// TestManualGradingEndToEnd's).

// seedManualSubmission stores a submission of the manual exercise scored
// for its automatic part (q1-check passes), its explanation cell waiting
// for a person; explanation is the learner's Markdown.
func seedManualSubmission(t *testing.T, dbURL, learner, explanation string) string {
	t.Helper()
	answer := readFile(t, filepath.Join(manualFixtures, "answers", "manual", "manual_answer.ipynb"))
	executed := fmt.Sprintf(`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
	 {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "solution": true}}, "execution_count": 1, "source": "def add(a, b):\n    return a + b", "outputs": []},
	 {"cell_type": "code", "id": "q1-check", "metadata": {"grader": {"id": "q1-check", "points": 1}}, "execution_count": 2, "source": "print(add(1, 1))",
	  "outputs": [{"output_type": "stream", "name": "stdout", "text": "2\n"}]},
	 {"cell_type": "markdown", "id": "explain", "metadata": {"grader": {"id": "explain", "solution": true}}, "source": %q}
	]}`, explanation)
	return seedGraded(t, dbURL, learner, "manual", answer, store.Grade{Score: 1, MaxScore: 3, Profile: "cpu", RunnerID: "test",
		Message: "all graded cells pass; 1 questions wait for manual grading", Executed: []byte(executed), Cells: []domain.CellResult{
			{CellID: "q1-check", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true, Message: "output matches"},
			{CellID: "explain", Verdict: domain.VerdictNeedsManual, MaxPoints: 2, Counted: true, Message: "this question is graded by an instructor"},
		}})
}

// TestWebGradeManualCell (also releasing feedback and answering a regrade
// request, on the same submission): an instructor opens the manual grading page for
// the explanation question, sees the learner's Markdown rendered (and its
// script inert), applies two rubric items with one click each, writes a
// comment and saves-and-moves to the next learner; going back shows the
// first submission graded with the total; the learner sees the manual
// points and comment; the audit log has the grade.
func TestWebGradeManualCell(t *testing.T) {
	chromiumPath(t)
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			adaTok := addUser(t, dbURL, "ada", "learner")
			addUser(t, dbURL, "bob", "learner")
			teacherTok := addUser(t, dbURL, "teacher", "instructor")
			s := startManualServer(t, dbURL, "0")
			defer s.stop()
			adaSub := seedManualSubmission(t, dbURL, "ada", "**图模式**更快：2.0 ms → 0.8 ms <script>window.pwned=1</script>")
			bobSub := seedManualSubmission(t, dbURL, "bob", "没有测量。")

			in := newTab(t, s.url)
			in.signIn("/dashboard/manual/manual/explain", teacherTok)
			in.do("grading page", chromedp.WaitVisible(chromedp.CSS("#mg-form")))
			in.shot("01-manual-grading")
			if n := eval[int](in, `document.querySelectorAll('#mg-items input[type=checkbox]').length`); n != 3 {
				t.Errorf("%d rubric items, want 3", n)
			}
			// The first learner in this grader's order; go to ada's submission.
			if who := in.text("#mg-learner"); who != "ada" {
				in.do("open ada", chromedp.Navigate(s.url+"/dashboard/manual/manual/explain?sub="+adaSub), chromedp.WaitVisible(chromedp.CSS("#mg-form")))
			}
			if n := eval[int](in, `document.querySelectorAll('#mg-cell .md strong').length`); n != 1 {
				t.Errorf("the learner's Markdown is not rendered (%d <strong>)", n)
			}
			if n := eval[int](in, `document.querySelectorAll('#mg-cell script').length`); n != 0 || eval[bool](in, `typeof window.pwned !== 'undefined'`) {
				t.Error("the learner's script is in the page")
			}
			in.do("grade", chromedp.Click(chromedp.CSS("#item-compare")), chromedp.Click(chromedp.CSS("#item-benefit")),
				chromedp.SendKeys(chromedp.CSS("#mg-comment"), "测量清楚"), chromedp.SetValue(chromedp.CSS("#mg-adjust"), "-0.5"))
			hasNext := eval[bool](in, `!!document.querySelector('#mg-save-next')`)
			if hasNext {
				in.do("save and next", chromedp.Click(chromedp.CSS("#mg-save-next")), chromedp.WaitVisible(chromedp.CSS("#mg-prev")))
				if who := in.text("#mg-learner"); who != "bob" {
					t.Errorf("next learner %q, want bob", who)
				}
				in.do("back", chromedp.Navigate(s.url+"/dashboard/manual/manual/explain?sub="+adaSub), chromedp.WaitVisible(chromedp.CSS("#mg-form")))
			} else {
				in.do("save", chromedp.Click(chromedp.CSS("#mg-save")), chromedp.WaitVisible(chromedp.CSS("#mg-saved")))
				if !eval[bool](in, `!!document.querySelector('#mg-prev')`) {
					t.Error("the last of two submissions has no previous link")
				}
			}
			in.shot("02-manual-graded")
			if st := eval[string](in, `document.querySelector('#mg-status').dataset.status`); st != "graded" {
				t.Errorf("ada's submission is %s after grading", st)
			}
			if pts := in.text("#mg-points"); !strings.Contains(pts, "1.5 / 2") {
				t.Errorf("points %q, want 1.5 / 2", pts)
			}
			if !eval[bool](in, `document.querySelector('#item-compare').checked && !document.querySelector('#item-wrong').checked`) {
				t.Error("the applied items are not shown checked")
			}
			in.do("mode: this submission", chromedp.Click(chromedp.CSS("#mg-mode-submission")), chromedp.WaitVisible(chromedp.CSS("#mg-position")))
			if pos := in.text("#mg-position"); pos != "1 / 1" {
				t.Errorf("submission mode position %q", pos)
			}
			in.do("Chinese", chromedp.Navigate(s.url+"/dashboard/manual/manual/explain?sub="+bobSub+"&lang=zh-CN"), chromedp.WaitVisible(chromedp.CSS("#mg-rubric-h")))
			if h := in.text("#mg-rubric-h"); h != "评分细则" {
				t.Errorf("Chinese rubric heading %q", h)
			}
			in.shot("03-manual-zh")

			// The exercise's feedback waits for a release: the learner sees
			// the points, not the comment, until the instructor releases it.
			l := newTab(t, s.url)
			l.signIn("/submissions/"+adaSub, adaTok)
			l.do("feedback", chromedp.WaitVisible(chromedp.CSS("#q-explain")))
			if row := l.text("#q-explain"); strings.Contains(row, "测量清楚") || !strings.Contains(row, "1.5 / 2") {
				t.Errorf("before the release the learner sees %q", row)
			}
			in.do("exercise page", chromedp.Navigate(s.url+"/dashboard/exercises/manual?lang=en"), chromedp.WaitVisible(chromedp.CSS("#fr-form")))
			if p := in.text("#fr-policy"); p != "on_release" {
				t.Errorf("feedback policy shown %q", p)
			}
			in.do("release to everyone", chromedp.Click(chromedp.CSS("#fr-release")), chromedp.WaitVisible(chromedp.CSS("#fr-done")))
			if list := in.text("#fr-list"); !strings.Contains(list, "everyone") || !strings.Contains(list, "teacher") {
				t.Errorf("releases listed: %q", list)
			}
			in.shot("05-feedback-released")
			l.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#q-explain")))
			row := l.text("#q-explain")
			if !strings.Contains(row, "1.5 / 2") || !strings.Contains(row, "测量清楚") || !strings.Contains(row, "阐述了图模式的优化收益") {
				t.Errorf("the learner's manual feedback: %q", row)
			}
			if sc := l.text("#score"); sc != "2.5 / 3" {
				t.Errorf("learner's score %q, want 2.5 / 3", sc)
			}
			l.shot("04-learner-manual-feedback")

			// A regrade request: the learner asks about the explanation, the
			// instructor answers from the queue with full points and a
			// reason, the learner sees the answer and the new score.
			l.do("ask", chromedp.SetValue(chromedp.CSS("#rq-cell"), "explain"), chromedp.SendKeys(chromedp.CSS("#rq-message"), "我附上了 trace"),
				chromedp.Click(chromedp.CSS("#rq-ask")), chromedp.WaitVisible(chromedp.CSS(`#regrade-requests .rq[data-state="open"]`)))
			l.shot("06-regrade-asked")
			in.do("queue", chromedp.Navigate(s.url+"/dashboard/regrade-requests"), chromedp.WaitVisible(chromedp.CSS(".rq-answer")))
			if q := in.text("main"); !strings.Contains(q, "ada") || !strings.Contains(q, "我附上了 trace") {
				t.Errorf("queue: %q", q)
			}
			in.shot("07-regrade-queue")
			in.do("answer", chromedp.SendKeys(chromedp.CSS(".rq-answer textarea"), "看过了，给满分"),
				chromedp.SendKeys(chromedp.CSS(`.rq-answer input[name="points"]`), "2"),
				chromedp.SendKeys(chromedp.CSS(`.rq-answer input[name="reason"]`), "trace 证明了收益"),
				chromedp.Click(chromedp.CSS(".rq-answer button")), chromedp.WaitVisible(chromedp.CSS(`.rq[data-state="answered"] .rq-override`)))
			in.shot("08-regrade-answered")
			l.do("reload after the answer", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#regrade-requests .rq[data-state="answered"]`)))
			if a := l.text("#regrade-requests"); !strings.Contains(a, "看过了，给满分") {
				t.Errorf("the learner's answer: %q", a)
			}
			if sc := l.text("#score"); sc != "3 / 3" {
				t.Errorf("score after the override %q, want 3 / 3", sc)
			}
			l.shot("09-learner-regrade-answer")
			acts := strings.Join(auditActions(t, dbURL), "\n")
			for _, want := range []string{"manual-grade teacher submission " + adaSub + " cell explain", "feedback-released teacher manual to everyone",
				"regrade-requested ada submission " + adaSub + " cell explain", "score-override teacher submission " + adaSub + " cell explain",
				"regrade-answered teacher regrade request"} {
				if !strings.Contains(acts, want) {
					t.Errorf("audit log has no %q:\n%s", want, acts)
				}
			}
		})
	}
}
