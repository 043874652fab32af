package policy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

const answer = `{"nbformat": 4, "nbformat_minor": 5, "metadata": {},
 "cells": [
  {"cell_type": "code", "id": "q1", "metadata": {"grader": {"id": "q1", "points": 10}}, "source": "print(1)", "outputs": [], "execution_count": null}
 ]}`

// catalog holds exercise "best" (the default policy) and "latest".
func catalog(t *testing.T) *exercise.Catalog {
	t.Helper()
	root := t.TempDir()
	for id, config := range map[string]string{"best": `{}`, "latest": `{"policy": "latest"}`} {
		exDir, ansDir := filepath.Join(root, "ex", id), filepath.Join(root, "ans", id)
		for _, d := range []string{exDir, filepath.Join(ansDir, "references")} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var cfg map[string]any
		_ = json.Unmarshal([]byte(config), &cfg)
		cfg["id"], cfg["title"], cfg["starter"], cfg["answer"] = id, id, "s.ipynb", "a.ipynb"
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(filepath.Join(exDir, "exercise.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ansDir, "a.ipynb"), []byte(answer), 0o644); err != nil {
			t.Fatal(err)
		}
		ex, err := exercise.LoadOne(exDir, ansDir)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := json.Marshal(exercise.Reference{Exercise: id, Profile: "cpu", AnswerSHA256: ex.AnswerSHA256(),
			Cells: map[string][]*notebook.Output{"q1": {{OutputType: notebook.OutputStream, Name: "stdout", Text: notebook.MultilineString("1\n")}}}})
		if err := os.WriteFile(filepath.Join(ansDir, "references", "cpu.json"), ref, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := exercise.Load(filepath.Join(root, "ex"), filepath.Join(root, "ans"))
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// graded stores a graded submission of ex by user with score.
func graded(t *testing.T, db *store.DB, user int64, ex string, score float64) domain.Submission {
	t.Helper()
	ctx := context.Background()
	sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: user, ExerciseID: ex, ExerciseVersion: "v",
		Upload: []byte("{}"), Rebuilt: []byte("{}"), Job: jobs.New(db, nil).GradeJob(ex, domain.Requirement{}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	err = db.InTx(ctx, func(tx *store.Tx) error {
		return tx.SaveGrade(store.Grade{Status: domain.StatusGraded, SubmissionID: sub.ID, Score: score, MaxScore: 10, Cells: []domain.CellResult{
			{CellID: "q1", Verdict: domain.VerdictMismatch, MaxPoints: 10, Points: score, Counted: true, Message: "m", Observed: "secret"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// testBundle is what a policy test needs: a database, the policy over it
// and the catalogue, two learners (ada, bob) and an instructor.
type testBundle struct {
	ctx     context.Context
	db      *store.DB
	p       *policy.Service
	ada     domain.User
	bob     domain.User
	teacher domain.User
}

// setup opens a database of dialect d and creates the users.
func setup(t *testing.T, d string) *testBundle {
	t.Helper()
	db := storetest.Open(t, d)
	b := &testBundle{ctx: context.Background(), db: db, p: &policy.Service{DB: db, Now: db.Now, Catalog: catalog(t)}}
	for _, u := range []struct {
		to   *domain.User
		name string
		role domain.Role
	}{{&b.ada, "ada", domain.RoleLearner}, {&b.bob, "bob", domain.RoleLearner}, {&b.teacher, "teacher", domain.RoleInstructor}} {
		var err error
		if *u.to, _, err = db.CreateUser(b.ctx, u.name, u.role); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestCountsAndOwnership: the exercises page and the API agree on the
// submission that counts (the best under "best", the latest under
// "latest": the page once showed the best under both), and another
// learner's submission is not found.
func TestCountsAndOwnership(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d)
			ctx, db, p, ada, bob, teacher := b.ctx, b.db, b.p, b.ada, b.bob, b.teacher
			var last domain.Submission
			for _, ex := range []string{"best", "latest"} {
				graded(t, db, ada.ID, ex, 9)
				last = graded(t, db, ada.ID, ex, 3)
			}
			st, err := p.Standings(ctx, ada.ID)
			if err != nil {
				t.Fatal(err)
			}
			if s := st["best"]; s.Submission == nil || s.Submission.Score != 9 || s.Attempts != 2 || s.Policy != exercise.CountsBest {
				t.Errorf("best: %+v", s)
			}
			if s := st["latest"]; s.Submission == nil || s.Submission.Score != 3 || s.Submission.ID != last.ID || s.Policy != exercise.CountsLatest {
				t.Errorf("latest: %+v, want the latest submission (3)", s)
			}
			ex, _ := p.Catalog.Get("latest")
			if c, err := p.Counted(ctx, ex, ada.ID); err != nil || c.Submission == nil || c.Submission.ID != last.ID {
				t.Errorf("Counted disagrees with Standings: %+v %v", c, err)
			}

			if _, err := p.Submission(ctx, bob, last.ID); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Errorf("bob read ada's submission: %v", err)
			}
			if s, err := p.Submission(ctx, teacher, last.ID); err != nil || s.Cells[0].Observed != "secret" {
				t.Errorf("staff: %+v %v", s, err)
			}
			if s, err := p.Submission(ctx, ada, last.ID); err != nil || s.Cells[0].Observed != "secret" {
				t.Errorf("owner (visible details): %+v %v", s, err)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int{domain.EINVALID: 422, domain.ENOTFOUND: 404, domain.EUNAUTHORIZED: 401,
		domain.EFORBIDDEN: 403, domain.ECONFLICT: 409, domain.ETOOLARGE: 413, domain.ERATELIMIT: 429} {
		if got, ok := policy.Status(domain.Errorf(code, "x")); got != want || !ok {
			t.Errorf("%s: %d %v, want %d", code, got, ok, want)
		}
	}
	if got, ok := policy.Status(os.ErrClosed); got != http.StatusInternalServerError || ok {
		t.Errorf("internal: %d %v", got, ok)
	}
}

// TestListingScope: a learner's listing is their own whatever they ask
// (naming another learner or continuing after another's submission is
// answered like naming no one), staff list anyone, and the learner-facing
// reads (history, attempts, executed notebook) keep to the same rules.
func TestListingScope(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d)
			ctx, db, p, ada, bob, teacher := b.ctx, b.db, b.p, b.ada, b.bob, b.teacher
			adas := graded(t, db, ada.ID, "best", 9)
			bobs := graded(t, db, bob.ID, "best", 3)

			f, problems, err := p.Filter(ctx, ada, policy.Listing{Learner: "bob", After: bobs.ID})
			if err != nil || len(problems) != 2 || f.UserID != ada.ID || f.After != nil {
				t.Errorf("ada naming bob: %+v %q %v", f, problems, err)
			}
			f, problems, err = p.Filter(ctx, ada, policy.Listing{Learner: "nobody"})
			if err != nil || len(problems) != 1 {
				t.Errorf("unknown learner: %q %v (must read as bob did)", problems, err)
			}
			if subs, err := p.List(ctx, ada, domain.SubmissionFilter{UserID: bob.ID}); err != nil || len(subs) != 1 || subs[0].ID != adas.ID {
				t.Errorf("ada listing with bob's id: %+v %v", subs, err)
			}
			f, problems, err = p.Filter(ctx, teacher, policy.Listing{Learner: "bob", After: adas.ID})
			if err != nil || len(problems) != 0 || f.UserID != bob.ID || f.After == nil || f.After.ID != adas.ID {
				t.Errorf("staff naming bob: %+v %q %v", f, problems, err)
			}
			if subs, err := p.List(ctx, teacher, domain.SubmissionFilter{}); err != nil || len(subs) != 2 {
				t.Errorf("staff listing: %d %v", len(subs), err)
			}

			if h, err := p.History(ctx, ada, "best", 10); err != nil || len(h) != 1 || h[0].ID != adas.ID {
				t.Errorf("history: %+v %v", h, err)
			}
			if n, err := p.Attempts(ctx, bob, "best"); err != nil || n != 1 {
				t.Errorf("attempts: %d %v", n, err)
			}
			if _, err := p.Executed(ctx, ada, adas); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Errorf("a submission without an executed notebook: %v, want ENOTFOUND", err)
			}
		})
	}
}
