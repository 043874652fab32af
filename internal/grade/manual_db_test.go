package grade_test

import (
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

const manualAnswer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"grader": {"compare": "tokens"}},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": "### BEGIN SOLUTION\nx = 1\n### END SOLUTION", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "markdown", "id": "why", "metadata": {"grader": {"id": "why", "solution": true, "starter": "…",
    "manual": {"points": 2, "rubric": [{"id": "a", "points": A_POINTS, "text": "measured"}, {"id": "b", "points": 1, "text": "explained"}]}}}, "source": "because"}
 ]}`

// TestManualGradesKeptAndRubricChangeReapplied: a manual grade makes the
// submission graded with the total; a new run of it (a regrade) keeps the
// grade in force; a changed rubric is re-applied to it, on record and in
// the audit log.
func TestManualGradesKeptAndRubricChangeReapplied(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			answer := strings.Replace(manualAnswer, "A_POINTS", "1", 1)
			b := setup(t, db, answer)
			ctx, cat, ex, teacher := b.ctx, b.cat, b.ex, b.teacher
			sub := b.submit(t, answer)
			run := func() { t.Helper(); b.run(t, sub) }
			run()
			if s, _ := db.Submission(ctx, sub.ID); s.Status != domain.StatusNeedsManual || s.Score != 1 || s.MaxScore != 3 {
				t.Fatalf("after the run: %s %g/%g", s.Status, s.Score, s.MaxScore)
			}
			m := grade.Manual{DB: db}
			if err := m.SyncRubrics(ctx, cat); err != nil { // the first rubric seen: recorded, nothing to re-apply
				t.Fatal(err)
			}
			s, err := m.Grade(ctx, ex, sub.ID, "why", grade.ManualInput{Items: []string{"a", "b"}, Comment: "good"}, teacher)
			// No deadline: the score before the penalty follows the points.
			if err != nil || s.Status != domain.StatusGraded || s.Score != 3 || s.RawScore != 3 {
				t.Fatalf("after grading by hand: %v %+v", err, s)
			}
			run() // a regrade's new run keeps the grade in force
			if s, _ := db.Submission(ctx, sub.ID); s.Status != domain.StatusGraded || s.Score != 3 || s.Cells[1].Verdict != domain.VerdictManual {
				t.Fatalf("after a new run: %s %g %+v", s.Status, s.Score, s.Cells)
			}
			changed := load(t, strings.Replace(manualAnswer, "A_POINTS", "0.5", 1))
			if err := m.SyncRubrics(ctx, changed); err != nil {
				t.Fatal(err)
			}
			if s, _ := db.Submission(ctx, sub.ID); s.Score != 2.5 || s.RawScore != 2.5 || s.Cells[1].Points != 1.5 {
				t.Errorf("after the rubric change: %g %+v", s.Score, s.Cells)
			}
			if err := m.SyncRubrics(ctx, changed); err != nil { // seen: nothing again
				t.Fatal(err)
			}
			log, err := m.Log(ctx, sub.ID)
			if err != nil || len(log) != 2 || log[0].Grader != "tom" || log[1].Kind != store.ManualRubricChange || log[1].Points != 1.5 {
				t.Errorf("manual grade log: %v %+v", err, log)
			}
			evs, _ := db.AuditEvents(ctx, 100)
			var acts []string
			for _, e := range evs {
				acts = append(acts, e.Action+" "+e.Actor)
			}
			if all := strings.Join(acts, ","); !strings.Contains(all, "rubric-changed npugrade") || !strings.Contains(all, "manual-grade tom") {
				t.Errorf("audit log: %s", all)
			}
		})
	}
}
