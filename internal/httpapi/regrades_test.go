package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/httpapi/apitest"
	"github.com/npugrade/npugrade/internal/queue"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
	"github.com/npugrade/npugrade/internal/submission"
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
			ctx := context.Background()
			root := t.TempDir()
			exDir, ansDir := filepath.Join(root, "ex", "pol"), filepath.Join(root, "ans", "pol")
			_ = os.MkdirAll(exDir, 0o755)
			_ = os.MkdirAll(ansDir, 0o755)
			cfg := `{"id": "pol", "title": "p", "starter": "s.ipynb", "answer": "a.ipynb", "deadline": "2999-01-01T00:00:00Z", "rate_limit": {"count": 2, "per": "1h"}}`
			_ = os.WriteFile(filepath.Join(exDir, "exercise.json"), []byte(cfg), 0o644)
			_ = os.WriteFile(filepath.Join(ansDir, "a.ipynb"), []byte(policyAnswer), 0o644)
			cat, err := exercise.Load(filepath.Join(root, "ex"), filepath.Join(root, "ans"))
			if err != nil {
				t.Fatal(err)
			}
			db := storetest.Open(t, d)
			q := queue.New(db, nil)
			srv := &httpapi.Server{DB: db, Queue: q, Catalog: cat, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Submissions: &submission.Service{DB: db, Queue: q, Catalog: cat}}
			ts := httptest.NewServer(apitest.Handler(t, srv.Handler()))
			defer ts.Close()
			_, learner, _ := db.CreateUser(ctx, "lena", domain.RoleLearner)
			_, teacher, _ := db.CreateUser(ctx, "tom", domain.RoleInstructor)

			submit := func() *http.Response {
				var body bytes.Buffer
				mw := multipart.NewWriter(&body)
				_ = mw.WriteField("exercise", "pol")
				fw, _ := mw.CreateFormFile("notebook", "a.ipynb")
				_, _ = fw.Write([]byte(policyAnswer))
				_ = mw.Close()
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/v1/submissions", &body)
				req.Header.Set("Content-Type", mw.FormDataContentType())
				req.Header.Set("Authorization", "Bearer "+learner)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				return resp
			}
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
				return tx.SaveGrade(store.Grade{SubmissionID: first.ID, MaxScore: 3, Profile: "cpu", Cells: cells})
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
					out[c.CellID] = c
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
