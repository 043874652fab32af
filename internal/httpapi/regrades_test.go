package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

const policyAnswer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {},
 "cells": [
  {"cell_type": "code", "id": "impl", "metadata": {"grader": {"id": "impl", "solution": true}}, "source": "x = 1", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "open", "metadata": {"grader": {"id": "open", "points": 1}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "closed", "metadata": {"grader": {"id": "closed", "points": 1, "visibility": "hidden"}}, "source": "print(x)", "outputs": [], "execution_count": null},
  {"cell_type": "code", "id": "later", "metadata": {"grader": {"id": "later", "points": 1, "visibility": "after_due_date"}}, "source": "print(x)", "outputs": [], "execution_count": null}
 ]}`

// TestGradingPolicyHTTP: the rate limit answers 429 with Retry-After, and
// learners do not see the details of hidden questions while instructors do.
func TestGradingPolicyHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newPolicyEnv(t, d, `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb", "deadline": "2999-01-01T00:00:00Z", "rate_limit": {"count": 2, "per": "1h"}}`)
			db, ts, learner, teacher := e.db, e.ts, e.learner, e.teacher
			submit := func() *http.Response { return e.post(t, learner, "") }
			var first httpapi.SubmissionJSON
			for i, want := range []int{202, 202, 429} {
				resp := submit()
				if resp.StatusCode != want {
					t.Fatalf("submission %d: status %d, want %d", i+1, resp.StatusCode, want)
				}
				if i == 0 {
					_ = json.NewDecoder(resp.Body).Decode(&first)
				}
				if want == 429 {
					ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
					if err != nil || ra < 3500 || ra > 3600 {
						t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
					}
					if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
						t.Errorf("content type %s", ct)
					}
				}
				resp.Body.Close()
			}

			cells := []domain.CellResult{
				{CellID: "open", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "2"},
				{CellID: "closed", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "3"},
				{CellID: "later", Verdict: "mismatch", MaxPoints: 1, Counted: true, Message: "differs", Observed: "4"},
			}
			if err := db.InTx(context.Background(), func(tx *store.Tx) error {
				return tx.SaveGrade(store.Grade{Status: scoring.Status(cells), SubmissionID: first.ID, MaxScore: 3, Profile: "cpu", Cells: cells})
			}); err != nil {
				t.Fatal(err)
			}
			get := func(token string) map[string]domain.CellResult {
				req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/v1/submissions/"+first.ID, nil)
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var s httpapi.SubmissionJSON
				_ = json.NewDecoder(resp.Body).Decode(&s)
				out := map[string]domain.CellResult{}
				for _, c := range s.Cells {
					out[c.CellID] = c.CellResult
				}
				return out
			}
			tests := []struct {
				who, token, cell string
				visible          bool
			}{
				{"learner", learner, "open", true},
				{"learner", learner, "closed", false},
				{"learner", learner, "later", false},
				{"instructor", teacher, "closed", true},
				{"instructor", teacher, "later", true},
			}
			views := map[string]map[string]domain.CellResult{"learner": get(learner), "instructor": get(teacher)}
			for _, tt := range tests {
				c := views[tt.who][tt.cell]
				if c.Verdict != "mismatch" {
					t.Errorf("%s/%s: the verdict is always shown, got %q", tt.who, tt.cell, c.Verdict)
				}
				if (c.Observed != "") != tt.visible || (c.Message == "differs") != tt.visible {
					t.Errorf("%s/%s: visible=%v, got %+v", tt.who, tt.cell, tt.visible, c)
				}
			}
		})
	}
}
