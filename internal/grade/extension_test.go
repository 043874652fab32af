package grade_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// The exercise is due 2026-03-01 12:00 UTC; any lateness halves the score.
var due = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// catalog loads the exercise "late", due at due with its score halved
// after it.
func catalog(t *testing.T) *exercise.Catalog {
	t.Helper()
	return exercisetest.Catalog(t, exercisetest.Spec{ID: "late", Fields: map[string]any{
		"deadline": "2026-03-01T12:00:00Z", "late_penalty": []map[string]any{{"after": "0s", "multiplier": 0.5}}}})
}

// submitAndGrade submits the answer as u at the database's clock and
// grades it through the one grading use case (grade.Submissions), as a
// runner's completion does.
func submitAndGrade(t *testing.T, db *store.DB, subs *intake.Service, cat *exercise.Catalog, u domain.User) domain.Submission {
	t.Helper()
	ctx := context.Background()
	ex, _ := cat.Get("late")
	sub, _, err := subs.Submit(ctx, intake.Request{User: u, ExerciseID: "late", Notebook: []byte(exercisetest.Answer)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := (&grade.Submissions{DB: db}).Grade(ctx, ex, sub, exercisetest.Executed(t, ex, "2\n"), domain.ExecutionResult{Profile: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RawExec(ctx, "UPDATE jobs SET state = ? WHERE submission_id = ?", domain.JobSucceeded, sub.ID); err != nil {
		t.Fatal(err)
	}
	g.Status = scoring.Status(g.Cells)
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.SaveGrade(g) }); err != nil {
		t.Fatal(err)
	}
	got, err := db.Submission(ctx, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestExtensionLateWithoutPenalty is issue 18's done-when: an extension
// lets one learner submit late without penalty while another is
// penalised; granting one after the fact rescores (old score on record),
// revoking rescores back, and all of it is in the audit log.
func TestExtensionLateWithoutPenalty(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.Open(t, d)
			db.Clock = func() time.Time { return due.Add(-24 * time.Hour) }
			cat := catalog(t)
			q := jobs.New(db, nil)
			subs := &intake.Service{DB: db, Queue: q, Catalog: cat}
			svc := &grade.Extensions{DB: db, Catalog: cat}
			lena, _, _ := db.CreateUser(ctx, "lena", domain.RoleLearner)
			bob, _, _ := db.CreateUser(ctx, "bob", domain.RoleLearner)
			tom, _, _ := db.CreateUser(ctx, "tom", domain.RoleInstructor)

			// Every problem of a bad grant at once.
			_, err := svc.Grant(ctx, tom, "late", grade.ExtensionRequest{Learner: "tom", Deadline: "2026-02-01T00:00:00Z",
				LatePenalty: &[]exercise.LateStep{{After: exercise.Duration(time.Hour), Multiplier: 2}}})
			if domain.ErrorCode(err) != domain.EINVALID || len(domain.ErrorProblems(err)) != 3 {
				t.Errorf("bad grant: %v (want 3 problems: not a learner, not after the deadline, multiplier)", err)
			}
			if _, err := svc.Grant(ctx, tom, "nope", grade.ExtensionRequest{Learner: "lena", Deadline: "2026-04-01T00:00:00Z"}); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Errorf("unknown exercise: %v", err)
			}

			granted, err := svc.Grant(ctx, tom, "late", grade.ExtensionRequest{Learner: "lena", Deadline: "2026-03-08T12:00:00+08:00"})
			if err != nil {
				t.Fatal(err)
			}
			if granted.Learner != "lena" || !granted.Deadline.Equal(time.Date(2026, 3, 8, 4, 0, 0, 0, time.UTC)) || granted.Rescored != 0 {
				t.Errorf("granted %+v", granted)
			}

			// Both submit two days late.
			db.Clock = func() time.Time { return due.Add(48 * time.Hour) }
			sl := submitAndGrade(t, db, subs, cat, lena)
			sb := submitAndGrade(t, db, subs, cat, bob)
			if sl.Score != 2 || sl.MaxScore != 2 || strings.Contains(sl.Message, "after the deadline") {
				t.Errorf("lena (extended) scored %g/%g %q, want 2/2 without penalty", sl.Score, sl.MaxScore, sl.Message)
			}
			if sb.Score != 1 || !strings.Contains(sb.Message, "multiplied by 0.5") {
				t.Errorf("bob (no extension) scored %g %q, want 1 (halved)", sb.Score, sb.Message)
			}

			// Bob is granted one afterwards, with his own schedule: rescored.
			res, err := svc.Grant(ctx, tom, "late", grade.ExtensionRequest{Learner: "bob", Deadline: "2026-03-04T00:00:00Z",
				LatePenalty: &[]exercise.LateStep{{After: 0, Multiplier: 0.8}}})
			if err != nil || res.Rescored != 1 {
				t.Fatalf("grant to bob: %+v %v", res, err)
			}
			if s, _ := db.Submission(ctx, sb.ID); s.Score != 2 || strings.Contains(s.Message, "after the deadline") {
				t.Errorf("bob after the grant: %g %q", s.Score, s.Message)
			}
			hist, err := db.ScoreHistory(ctx, sb.ID)
			if err != nil || len(hist) != 1 || hist[0].Score != 1 {
				t.Errorf("bob's old score is not on record: %+v %v", hist, err)
			}

			// Revoking lena's falls back to the exercise's deadline.
			rev, err := svc.Revoke(ctx, tom, "late", "lena")
			if err != nil || rev.Rescored != 1 || rev.RevokedAt == nil {
				t.Fatalf("revoke: %+v %v", rev, err)
			}
			if s, _ := db.Submission(ctx, sl.ID); s.Score != 1 {
				t.Errorf("lena after the revocation: %g, want 1", s.Score)
			}
			if _, err := svc.Revoke(ctx, tom, "late", "lena"); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Errorf("second revoke: %v", err)
			}
			// Bob's later submission, three days late, is past his own
			// deadline: his schedule (0.8) applies, not the exercise's.
			db.Clock = func() time.Time { return due.Add(72 * time.Hour) }
			if s := submitAndGrade(t, db, subs, cat, bob); s.Score != 1.6 {
				t.Errorf("bob past his extension: %g, want 1.6", s.Score)
			}

			active, err := svc.List(ctx, "late", false)
			if err != nil || len(active) != 1 || active[0].Learner != "bob" || string(active[0].LatePenalty) == "" {
				t.Errorf("active: %+v %v", active, err)
			}
			all, _ := svc.List(ctx, "late", true)
			if len(all) != 2 || all[1].Learner != "lena" || all[1].RevokedBy != "tom" {
				t.Errorf("all: %+v", all)
			}
			events, _ := db.AuditEvents(ctx, 50)
			var actions []string
			for _, ev := range events {
				actions = append(actions, ev.Action+" "+ev.Subject+" by "+ev.Actor)
			}
			want := []string{"extension-revoked lena on late by tom", "extension-granted bob on late by tom", "extension-granted lena on late by tom"}
			if strings.Join(actions, "|") != strings.Join(want, "|") {
				t.Errorf("audit log %q, want %q", actions, want)
			}
		})
	}
}
