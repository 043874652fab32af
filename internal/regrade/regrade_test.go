package regrade_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/exercise/exercisetest"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/regrade"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// catalog writes the exercise "rg" with the given reference output of q2
// and loads it.
func catalog(t *testing.T, q2 string) *exercise.Catalog {
	t.Helper()
	return exercisetest.Catalog(t, exercisetest.Spec{ID: "rg", RefQ2: q2})
}

// testBundle is what a regrade test needs: a database, its queue, intake
// on it, a learner (alice) and an instructor (teacher).
type testBundle struct {
	ctx     context.Context
	db      *store.DB
	q       *jobs.Queue
	sub     *intake.Service
	alice   domain.User
	teacher domain.User
}

// setup opens a database of dialect d and creates the users.
func setup(t *testing.T, d string) *testBundle {
	t.Helper()
	db := storetest.Open(t, d)
	q := jobs.New(db, nil)
	e := &testBundle{ctx: context.Background(), db: db, q: q, sub: &intake.Service{DB: db, Queue: q}}
	var err error
	if e.alice, _, err = db.CreateUser(e.ctx, "alice", domain.RoleLearner); err != nil {
		t.Fatal(err)
	}
	if e.teacher, _, err = db.CreateUser(e.ctx, "teacher", domain.RoleInstructor); err != nil {
		t.Fatal(err)
	}
	return e
}

// graded submits the answer as user and stores a grade computed with cat
// from a run whose q2 printed q2.
func (e *testBundle) graded(t *testing.T, cat *exercise.Catalog, user domain.User, q2 string) domain.Submission {
	t.Helper()
	ctx := context.Background()
	ex, _ := cat.Get("rg")
	e.sub.Catalog = cat
	sub, _, err := e.sub.Submit(ctx, intake.Request{User: user, ExerciseID: "rg", Notebook: []byte(exercisetest.Answer)})
	if err != nil {
		t.Fatal(err)
	}
	raw := exercisetest.Executed(t, ex, q2)
	nb, _ := notebook.Parse(raw, notebook.Limits{})
	ref, _ := ex.Reference("cpu")
	out := scoring.Score(scoring.Input{Exercise: ex, Reference: ref, Executed: nb,
		Integrity: notebook.Integrity{Verdicts: map[string]string{}, Messages: map[string]string{}}})
	// The job is done; write the grade as dispatch would.
	if err := e.db.RawExec(ctx, "UPDATE jobs SET state = ? WHERE submission_id = ?", domain.JobSucceeded, sub.ID); err != nil {
		t.Fatal(err)
	}
	err = e.db.InTx(ctx, func(tx *store.Tx) error {
		return tx.SaveGrade(store.Grade{Status: scoring.Status(out.Cells), SubmissionID: sub.ID, Score: out.Score, MaxScore: out.MaxScore, Message: out.Message,
			Profile: "cpu", EnvFingerprint: "fp-1", GraderVersion: scoring.GraderVersion(ex), Executed: raw, Cells: out.Cells})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.db.Submission(ctx, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRegradePreviewApplyDiscard(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := setup(t, d)
			ctx, db, q, alice, teacher := e.ctx, e.db, e.q, e.alice, e.teacher
			v1 := catalog(t, "3\n") // a wrong reference for q2: the answer prints 2
			bob, _, err := db.CreateUser(ctx, "bob", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			sa := e.graded(t, v1, alice, "2\n")
			sb := e.graded(t, v1, bob, "3\n")
			if sa.Score != 1 || sb.Score != 2 {
				t.Fatalf("v1 scores: alice %g, bob %g", sa.Score, sb.Score)
			}

			// The instructor fixes the reference: a new exercise version.
			v2 := catalog(t, "2\n")
			svc := &regrade.Service{DB: db, Queue: q, Catalog: v2}
			if _, err := svc.Stage(ctx, regrade.Request{Exercise: "nope", Mode: "sideways"}, teacher); domain.ErrorCode(err) != domain.EINVALID || len(domain.ErrorProblems(err)) != 2 {
				t.Errorf("bad request: %v", err)
			}
			r, err := svc.Stage(ctx, regrade.Request{Exercise: "rg", Mode: domain.RegradeRecompare}, teacher)
			if err != nil {
				t.Fatal(err)
			}
			if r.State != domain.RegradeReady || len(r.Items) != 2 {
				t.Fatalf("staged: %+v", r)
			}
			change := map[string]float64{}
			for _, it := range r.Items {
				change[it.Learner] = it.Change
			}
			if change["alice"] != 1 || change["bob"] != -1 {
				t.Errorf("preview changes %v, want alice +1, bob -1", change)
			}
			// Preview changes nothing.
			if s, _ := db.Submission(ctx, sa.ID); s.Score != 1 {
				t.Errorf("preview changed alice's score to %g", s.Score)
			}
			applied, err := svc.Apply(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if applied.State != domain.RegradeApplied {
				t.Errorf("state %s", applied.State)
			}
			a2, _ := db.Submission(ctx, sa.ID)
			b2, _ := db.Submission(ctx, sb.ID)
			ex2, _ := v2.Get("rg")
			if a2.Score != 2 || b2.Score != 1 || a2.GraderVersion != scoring.GraderVersion(ex2) || a2.ExerciseVersion != ex2.Version {
				t.Errorf("after apply: alice %g (%s), bob %g", a2.Score, a2.GraderVersion, b2.Score)
			}
			// Without a deadline the score before the penalty is the score,
			// the regrade's new one.
			if a2.RawScore != 2 || b2.RawScore != 1 {
				t.Errorf("after apply, before the penalty: alice %g, bob %g", a2.RawScore, b2.RawScore)
			}
			if a2.EnvFingerprint != "fp-1" || a2.Profile != "cpu" {
				t.Errorf("a recompare keeps the run's profile and fingerprint: %q %q", a2.Profile, a2.EnvFingerprint)
			}
			if _, err := db.ExecutedNotebook(ctx, sa.ID); err != nil {
				t.Errorf("a recompare keeps the executed notebook: %v", err)
			}
			hist, err := db.ScoreHistory(ctx, sa.ID)
			if err != nil || len(hist) != 1 || hist[0].Score != 1 || hist[0].ExerciseVersion != sa.ExerciseVersion || len(hist[0].Cells) != 2 {
				t.Errorf("history %+v, %v", hist, err)
			}
			if _, err := svc.Apply(ctx, r.ID); domain.ErrorCode(err) != domain.ECONFLICT {
				t.Errorf("second apply: %v", err)
			}
			// Nothing is affected any more...
			r2, err := svc.Stage(ctx, regrade.Request{Exercise: "rg", Mode: domain.RegradeRecompare}, teacher)
			if err != nil || len(r2.Items) != 0 {
				t.Errorf("second regrade: %+v %v", r2, err)
			}
			// ...unless all are asked for; a discarded regrade changes nothing.
			r3, err := svc.Stage(ctx, regrade.Request{Exercise: "rg", Mode: domain.RegradeRecompare, All: true}, teacher)
			if err != nil || len(r3.Items) != 2 {
				t.Fatalf("regrade all: %+v %v", r3, err)
			}
			if d, err := svc.Discard(ctx, r3.ID); err != nil || d.State != domain.RegradeDiscarded {
				t.Errorf("discard: %+v %v", d, err)
			}
			if _, err := svc.Apply(ctx, r3.ID); domain.ErrorCode(err) != domain.ECONFLICT {
				t.Errorf("apply after discard: %v", err)
			}
			if h, _ := db.ScoreHistory(ctx, sa.ID); len(h) != 1 {
				t.Errorf("discard wrote history: %d entries", len(h))
			}
		})
	}
}

// TestRegradeReexecute stages a re-execution: a regrade job per submission,
// completed through the dispatcher like a runner would, then applied.
func TestRegradeReexecute(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := setup(t, d)
			ctx, db, q, alice, teacher := e.ctx, e.db, e.q, e.alice, e.teacher
			v1 := catalog(t, "3\n")
			sa := e.graded(t, v1, alice, "2\n")
			v2 := catalog(t, "2\n")
			svc := &regrade.Service{DB: db, Queue: q, Catalog: v2}
			r, err := svc.Stage(ctx, regrade.Request{Exercise: "rg", Mode: domain.RegradeReexecute}, teacher)
			if err != nil {
				t.Fatal(err)
			}
			if r.State != domain.RegradeStaged || len(r.Items) != 1 || r.Items[0].JobID == nil {
				t.Fatalf("staged: %+v", r)
			}
			if _, err := svc.Apply(ctx, r.ID); domain.ErrorCode(err) != domain.ECONFLICT {
				t.Errorf("applying a staged regrade: %v", err)
			}
			disp := &jobs.Dispatcher{DB: db, Queue: q, Catalog: v2, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			lease, err := disp.Claim(ctx, "runner-1", func(domain.Requirement) (bool, string) { return true, "" }, time.Second)
			if err != nil || lease == nil {
				t.Fatalf("claim: %v %v", lease, err)
			}
			if lease.Kind != domain.JobRegrade || lease.SubmissionID != "" {
				t.Errorf("lease kind %s submission %q", lease.Kind, lease.SubmissionID)
			}
			// The submission is not put back to running by its regrade.
			if s, _ := db.Submission(ctx, sa.ID); s.Status != domain.StatusGraded {
				t.Errorf("status %s during the regrade", s.Status)
			}
			ex2, _ := v2.Get("rg")
			err = disp.Complete(ctx, lease.JobID, lease.Token, "runner-1", domain.ExecutionResult{Notebook: exercisetest.Executed(t, ex2, "2\n"), Profile: "cpu", EnvFingerprint: "fp-2"})
			if err != nil {
				t.Fatal(err)
			}
			r, err = svc.Get(ctx, r.ID)
			if err != nil || r.State != domain.RegradeReady || r.Items[0].NewScore != 2 || r.Items[0].Change != 1 {
				t.Fatalf("after the run: %+v %v", r, err)
			}
			if _, err := svc.Apply(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			s, _ := db.Submission(ctx, sa.ID)
			if s.Score != 2 || s.EnvFingerprint != "fp-2" {
				t.Errorf("applied: score %g fingerprint %s", s.Score, s.EnvFingerprint)
			}
			if _, err := svc.Get(ctx, 999); domain.ErrorCode(err) != domain.ENOTFOUND {
				t.Errorf("unknown regrade: %v", err)
			}
		})
	}
}

// TestRecompareUsesRecordedReferences: a recompare regrade scores against
// the same references as a fresh grade, committed files first and then the
// ones reference jobs recorded in the database. (It once looked only at
// the files, so an exercise whose cpu reference was recorded on the server
// could not be regraded at all.)
func TestRecompareUsesRecordedReferences(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := setup(t, d)
			ctx, db, q, alice, teacher := e.ctx, e.db, e.q, e.alice, e.teacher
			sa := e.graded(t, catalog(t, "3\n"), alice, "2\n") // graded against a wrong committed q2
			if sa.Score != 1 {
				t.Fatalf("v1 score %g", sa.Score)
			}
			// v2 has no committed reference: the right one was recorded on the server.
			v2 := exercisetest.Catalog(t, exercisetest.Spec{ID: "rg", NoReference: true})
			ex2, _ := v2.Get("rg")
			if _, err := ex2.Reference("cpu"); err == nil {
				t.Fatal("v2 has a committed cpu reference; the test needs none")
			}
			cells, _ := json.Marshal(map[string][]*notebook.Output{"q1": exercisetest.Stdout("1\n"), "q2": exercisetest.Stdout("2\n")})
			err := db.InTx(ctx, func(tx *store.Tx) error {
				return tx.SaveReference(store.StoredReference{ExerciseID: "rg", Profile: "cpu", AnswerSHA256: ex2.AnswerSHA256(), Cells: cells})
			})
			if err != nil {
				t.Fatal(err)
			}
			svc := &regrade.Service{DB: db, Queue: q, Catalog: v2}
			r, err := svc.Stage(ctx, regrade.Request{Exercise: "rg", Mode: domain.RegradeRecompare, All: true}, teacher)
			if err != nil {
				t.Fatalf("stage a recompare against the recorded reference: %v", err)
			}
			if len(r.Items) != 1 || r.Items[0].State != domain.RegradeItemDone || r.Items[0].NewScore != 2 || r.Items[0].Change != 1 {
				t.Fatalf("items %+v, want alice rescored 2 of 2 (+1)", r.Items)
			}
		})
	}
}

// TestRegradeRequeuesFailedSubmissions: a submission whose grading failed
// at once because the exercise's reference outputs were stale (its answer
// was edited while the job waited) is covered by the next regrade. A
// recompare cannot score it and says so (skipped_failed); a reexecute
// queues it again, and once applied it is graded with its score, its
// history records that it had none, and it is still not one of the
// learner's attempts.
func TestRegradeRequeuesFailedSubmissions(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := setup(t, d)
			ctx, db, q, alice, teacher := e.ctx, e.db, e.q, e.alice, e.teacher
			// v1: the reference outputs were recorded on the server from
			// v1's answer; alice uploads, and bob is graded.
			v1 := exercisetest.Catalog(t, exercisetest.Spec{ID: "rg", NoReference: true})
			ex1, _ := v1.Get("rg")
			cells, _ := json.Marshal(map[string][]*notebook.Output{"q1": exercisetest.Stdout("1\n"), "q2": exercisetest.Stdout("2\n")})
			saveRef := func(answerSHA string) {
				t.Helper()
				err := db.InTx(ctx, func(tx *store.Tx) error {
					return tx.SaveReference(store.StoredReference{ExerciseID: "rg", Profile: "cpu", AnswerSHA256: answerSHA, Cells: cells})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			saveRef(ex1.AnswerSHA256())
			e.sub.Catalog = v1
			sa, _, err := e.sub.Submit(ctx, intake.Request{User: alice, ExerciseID: "rg", Notebook: []byte(exercisetest.Answer)})
			if err != nil {
				t.Fatal(err)
			}
			bob, _, err := db.CreateUser(ctx, "bob", domain.RoleLearner)
			if err != nil {
				t.Fatal(err)
			}
			sb := e.graded(t, catalog(t, "2\n"), bob, "2\n")

			// v2: the answer's solution is edited and the server restarted
			// before alice's job ran: her grading meets the stale reference
			// and fails at once.
			v2 := exercisetest.Catalog(t, exercisetest.Spec{ID: "rg", NoReference: true,
				Answer: strings.Replace(exercisetest.Answer, `x = 1\n`, `x = 0 + 1\n`, 1)})
			ex2, _ := v2.Get("rg")
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			disp := &jobs.Dispatcher{DB: db, Queue: q, Catalog: v2, Log: log}
			any := func(domain.Requirement) (bool, string) { return true, "" }
			lease, err := disp.Claim(ctx, "runner-1", any, time.Second)
			if err != nil || lease == nil || lease.SubmissionID != sa.ID {
				t.Fatalf("claim alice's job: %+v %v", lease, err)
			}
			err = disp.Complete(ctx, lease.JobID, lease.Token, "runner-1", domain.ExecutionResult{Notebook: exercisetest.Executed(t, ex2, "2\n"), Profile: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			failed, _ := db.Submission(ctx, sa.ID)
			if failed.Status != domain.StatusFailed || !strings.Contains(failed.Message, "recorded from another version") {
				t.Fatalf("alice's submission is %s (%q), want failed on the stale reference", failed.Status, failed.Message)
			}
			attempts := func(when string) {
				t.Helper()
				if n, err := db.CountSubmissions(ctx, alice.ID, "rg", time.Time{}); err != nil || n != 0 {
					t.Errorf("%s: alice has used %d attempts (%v), want 0: her only submission failed", when, n, err)
				}
			}
			attempts("failed")

			// The instructor records the references again.
			saveRef(ex2.AnswerSHA256())
			svc := &regrade.Service{DB: db, Queue: q, Catalog: v2}

			// A recompare has no run of alice's to score: it says so.
			rc, err := svc.Stage(ctx, regrade.Request{Exercise: "rg", Mode: domain.RegradeRecompare}, teacher)
			if err != nil {
				t.Fatal(err)
			}
			if rc.SkippedFailed != 1 {
				t.Errorf("recompare: skipped_failed %d, want 1 (alice's failed submission needs reexecute)", rc.SkippedFailed)
			}
			for _, it := range rc.Items {
				if it.SubmissionID == sa.ID {
					t.Errorf("recompare scored alice's failed submission: %+v", it)
				}
			}
			if again, _ := svc.Get(ctx, rc.ID); again.SkippedFailed != 1 {
				t.Errorf("GET of the recompare: skipped_failed %d, want 1", again.SkippedFailed)
			}
			if _, err := svc.Discard(ctx, rc.ID); err != nil {
				t.Fatal(err)
			}

			// A reexecute queues alice's submission again, a job like a graded one's.
			r, err := svc.Stage(ctx, regrade.Request{Exercise: "rg", Mode: domain.RegradeReexecute}, teacher)
			if err != nil {
				t.Fatal(err)
			}
			var item *domain.RegradeItem
			for i := range r.Items {
				if r.Items[i].SubmissionID == sa.ID {
					item = &r.Items[i]
				}
			}
			if r.State != domain.RegradeStaged || r.SkippedFailed != 0 || item == nil || item.JobID == nil ||
				item.OldStatus != domain.StatusFailed || item.OldScore != 0 || item.OldMaxScore != 0 {
				t.Fatalf("reexecute staged %+v, alice's item %+v", r, item)
			}
			for range r.Items { // alice's and bob's jobs, in either order
				lease, err := disp.Claim(ctx, "runner-1", any, time.Second)
				if err != nil || lease == nil || lease.Kind != domain.JobRegrade {
					t.Fatalf("claim a regrade job: %+v %v", lease, err)
				}
				err = disp.Complete(ctx, lease.JobID, lease.Token, "runner-1", domain.ExecutionResult{Notebook: exercisetest.Executed(t, ex2, "2\n"), Profile: "cpu", EnvFingerprint: "fp-2"})
				if err != nil {
					t.Fatal(err)
				}
			}
			if s, _ := db.Submission(ctx, sa.ID); s.Status != domain.StatusFailed {
				t.Errorf("alice's submission is %s before the regrade is applied, want failed", s.Status)
			}
			r, err = svc.Get(ctx, r.ID)
			if err != nil || r.State != domain.RegradeReady {
				t.Fatalf("after the runs: %+v %v", r, err)
			}
			for _, it := range r.Items {
				if it.SubmissionID == sa.ID && (it.State != domain.RegradeItemDone || it.NewScore != 2 || it.Change != 2) {
					t.Errorf("alice's item %+v, want done 2/2 (+2)", it)
				}
			}
			if _, err := svc.Apply(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			s, _ := db.Submission(ctx, sa.ID)
			if s.Status != domain.StatusGraded || s.Score != 2 || s.MaxScore != 2 || s.GraderVersion != scoring.GraderVersion(ex2) || s.EnvFingerprint != "fp-2" {
				t.Errorf("applied: %s %g/%g grader %s fingerprint %s", s.Status, s.Score, s.MaxScore, s.GraderVersion, s.EnvFingerprint)
			}
			if _, err := db.ExecutedNotebook(ctx, sa.ID); err != nil {
				t.Errorf("applied: no executed notebook: %v", err)
			}
			hist, err := db.ScoreHistory(ctx, sa.ID)
			if err != nil || len(hist) != 1 || hist[0].Status != domain.StatusFailed || hist[0].Score != 0 || hist[0].MaxScore != 0 ||
				!strings.Contains(hist[0].Message, "grading failed") || hist[0].RegradeID == nil || *hist[0].RegradeID != r.ID {
				t.Errorf("alice's history %+v %v, want one entry: failed, no score", hist, err)
			}
			if hb, _ := db.ScoreHistory(ctx, sb.ID); len(hb) != 1 || hb[0].Status != domain.StatusGraded || hb[0].Score != 2 {
				t.Errorf("bob's history %+v, want his old graded score", hb)
			}
			attempts("applied")
			if n, _ := db.CountSubmissions(ctx, bob.ID, "rg", time.Time{}); n != 1 {
				t.Errorf("bob has used %d attempts, want 1", n)
			}
		})
	}
}
