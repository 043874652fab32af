package grade_test

import (
	"context"
	"strings"
	"testing"

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

const answer = exercisetest.Answer

// testBundle is what a grading test needs: a database, the catalogue
// holding one exercise "gr", that exercise, a learner (alice) and an
// instructor (tom).
type testBundle struct {
	ctx     context.Context
	db      *store.DB
	cat     *exercise.Catalog
	ex      *exercise.Exercise
	learner domain.User
	teacher domain.User
}

// setup loads answer as exercise "gr" (with its cpu reference) and creates
// the users on db.
func setup(t *testing.T, db *store.DB, answer string) *testBundle {
	t.Helper()
	b := &testBundle{ctx: context.Background(), db: db, cat: load(t, answer)}
	b.ex, _ = b.cat.Get("gr")
	var err error
	if b.learner, _, err = db.CreateUser(b.ctx, "alice", domain.RoleLearner); err != nil {
		t.Fatal(err)
	}
	if b.teacher, _, err = db.CreateUser(b.ctx, "tom", domain.RoleInstructor); err != nil {
		t.Fatal(err)
	}
	return b
}

// submit takes nb in as the learner's submission of "gr".
func (b *testBundle) submit(t *testing.T, nb string) domain.Submission {
	t.Helper()
	svc := &intake.Service{DB: b.db, Queue: jobs.New(b.db, nil), Catalog: b.cat}
	sub, _, err := svc.Submit(b.ctx, intake.Request{User: b.learner, ExerciseID: "gr", Notebook: []byte(nb)})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// run grades a run of sub in which every check printed the right output
// and saves the grade, as a runner's completion does.
func (b *testBundle) run(t *testing.T, sub domain.Submission) {
	t.Helper()
	g, err := (&grade.Submissions{DB: b.db}).Grade(b.ctx, b.ex, sub, executed(t, b.ex), domain.ExecutionResult{Profile: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	g.Status = scoring.Status(g.Cells)
	if err := b.db.InTx(b.ctx, func(tx *store.Tx) error { return tx.SaveGrade(g) }); err != nil {
		t.Fatal(err)
	}
}

// load writes the exercise "gr" (answer, cpu reference) and loads its catalog.
func load(t *testing.T, answer string) *exercise.Catalog {
	t.Helper()
	return exercisetest.Catalog(t, exercisetest.Spec{ID: "gr", Answer: answer})
}

// executed is a run of ex's answer that printed the right outputs.
func executed(t *testing.T, ex *exercise.Exercise) []byte {
	t.Helper()
	return exercisetest.Executed(t, ex, "2\n")
}

// TestIntegrityKeptFromIntake: intake stores what rebuilding the upload
// found, and grading scores those findings (a tampered locked cell) from
// the submission, as long as the exercise version is the one it was made for.
func TestIntegrityKeptFromIntake(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			b := setup(t, db, answer)
			ctx, ex := b.ctx, b.ex
			sub := b.submit(t, strings.Replace(answer, `"source": "print(x)"`, `"source": "print(1)"`, 1))
			raw, err := db.SubmissionIntegrity(ctx, sub.ID)
			if err != nil || !strings.Contains(string(raw), `"q1":"tampered"`) {
				t.Fatalf("stored integrity %s, %v; want q1 tampered", raw, err)
			}
			g, err := (&grade.Submissions{DB: db}).Grade(ctx, ex, sub, executed(t, ex), domain.ExecutionResult{Profile: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			if g.Score != 1 || g.MaxScore != 2 || g.Cells[0].Verdict != domain.VerdictTampered || g.Cells[1].Verdict != domain.VerdictPass {
				t.Fatalf("grade %g/%g %+v, want q1 tampered and q2 passed", g.Score, g.MaxScore, g.Cells)
			}
			// Findings stored for another version are not trusted: the
			// upload is rebuilt against the exercise graded with.
			if err := db.RawExec(ctx, "UPDATE submissions SET integrity = ? WHERE id = ?", `{"Verdicts":{"q2":"missing"}}`, sub.ID); err != nil {
				t.Fatal(err)
			}
			integ, err := (&grade.Submissions{DB: db}).Integrity(ctx, ex, sub)
			if err != nil || integ.Verdicts["q2"] != domain.VerdictMissing {
				t.Fatalf("same version: %+v, %v; want the stored findings", integ, err)
			}
			other := *ex
			other.Version = "another"
			integ, err = (&grade.Submissions{DB: db}).Integrity(ctx, &other, sub)
			if err != nil || integ.Verdicts["q1"] != domain.VerdictTampered || integ.Verdicts["q2"] != "" {
				t.Fatalf("other version: %+v, %v; want the upload rebuilt", integ, err)
			}
		})
	}
}

var _ grade.References = grade.Files{}
var _ grade.References = (*grade.Submissions)(nil)
