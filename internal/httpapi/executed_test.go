package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// executedPolicy is policyAnswer as a runner returns it: outputs on every
// question, a probe cell the server added, and the probe seed.
const executedPolicy = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"npugrade": {"probe_seed": 777111}},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": "x = 1", "outputs": [], "execution_count": 1},
  {"cell_type": "code", "id": "open", "metadata": {"grader": {"id": "open", "points": 1}}, "source": "print(x)", "outputs": [{"output_type": "stream", "name": "stdout", "text": "OPEN-OUT\n"}], "execution_count": 2},
  {"cell_type": "code", "id": "closed", "metadata": {"grader": {"id": "closed", "points": 1, "visibility": "hidden"}}, "source": "print(x)", "outputs": [{"output_type": "stream", "name": "stdout", "text": "HIDDEN-OUT\n"}], "execution_count": 3},
  {"cell_type": "code", "id": "later", "metadata": {"grader": {"id": "later", "points": 1, "visibility": "after_due_date"}}, "source": "print(x)", "outputs": [{"output_type": "stream", "name": "stdout", "text": "LATER-OUT\n"}], "execution_count": 4},
  {"cell_type": "code", "id": "probe", "metadata": {"grader": {"id": "probe-open", "probe": true, "for": "open", "points": 1}}, "source": "PROBE_SECRET_CODE()", "outputs": [{"output_type": "stream", "name": "stdout", "text": "PROBE-OUT\n"}], "execution_count": 5}
 ]}`

// TestLearnerExecutedNotebook: GET /api/v1/submissions/{id}/executed gives
// a learner their own notebook without the probe cell, the probe seed or
// the outputs of hidden questions; another learner gets 404; instructors
// get it whole.
func TestLearnerExecutedNotebook(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb", "deadline": "2999-01-01T00:00:00Z"}`)
			id := e.graded(t, e.learner, "k", store.Grade{MaxScore: 3, Profile: "cpu", Executed: []byte(executedPolicy),
				Cells: []domain.CellResult{{CellID: "open", Verdict: "pass", Points: 1, MaxPoints: 1, Counted: true}}})
			_, other, err := e.db.CreateUser(context.Background(), "olga", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			path := "/api/v1/submissions/" + id + "/executed"
			st, nb := e.get(t, e.learner, path)
			if st != http.StatusOK || !strings.Contains(nb, "OPEN-OUT") {
				t.Fatalf("learner's executed notebook: %d %s", st, nb)
			}
			for _, leak := range []string{"PROBE_SECRET_CODE", "PROBE-OUT", "777111", "HIDDEN-OUT", "LATER-OUT"} {
				if strings.Contains(nb, leak) {
					t.Errorf("the learner's copy contains %s", leak)
				}
			}
			if st, _ := e.get(t, other, path); st != http.StatusNotFound {
				t.Errorf("another learner: %d", st)
			}
			if st, whole := e.get(t, e.teacher, path); st != http.StatusOK || !strings.Contains(whole, "PROBE_SECRET_CODE") {
				t.Errorf("instructor: %d", st)
			}
		})
	}
}
