package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/intake"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// refuseCellResults makes the database itself refuse to store any cell
// result, as a full disk or a broken constraint would.
func refuseCellResults(t *testing.T, db *store.DB) {
	t.Helper()
	stmts := []string{`CREATE TRIGGER refuse_cells BEFORE INSERT ON cell_results BEGIN SELECT RAISE(ABORT, 'cell results refused by the test'); END`}
	if db.Dialect == "postgres" {
		stmts = []string{
			`CREATE FUNCTION refuse_cells() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'cell results refused by the test'; END $$ LANGUAGE plpgsql`,
			`CREATE TRIGGER refuse_cells BEFORE INSERT ON cell_results FOR EACH ROW EXECUTE FUNCTION refuse_cells()`,
		}
	}
	for _, s := range stmts {
		if err := db.RawExec(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompleteThatCannotBeStoredFailsWithTheReason: when the database
// refuses a result, the completion is tried again and then the job is
// failed with what went wrong — not left to lose its lease, which used
// to end as "lost its lease (no heartbeat)" after every attempt.
func TestCompleteThatCannotBeStoredFailsWithTheReason(t *testing.T) {
	t.Parallel()
	storeBackoffForTest(t)
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			su := setupClaimed(t, d, nil)
			db, q, disp, l, sub := su.db, su.q, su.disp, su.lease, su.sub
			refuseCellResults(t, db)
			// The unexecuted notebook scores as a (wrong) result: enough to
			// have cell results to store.
			err := disp.Complete(ctx, l.JobID, l.Token, "r1", domain.ExecutionResult{Notebook: l.Notebook, Profile: "cpu"})
			if err != nil {
				t.Fatalf("complete: %v (the job should have been failed instead)", err)
			}
			job, err := q.Job(ctx, l.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if job.State != domain.JobQueued || !strings.Contains(job.LastError, "could not be stored") ||
				!strings.Contains(job.LastError, "cell results refused by the test") {
				t.Errorf("job after a refused result: state %s, last error %q", job.State, job.LastError)
			}
			if got, _ := db.Submission(ctx, sub.ID); got.Status != domain.StatusQueued {
				t.Errorf("submission %s, want queued for its next attempt", got.Status)
			}
		})
	}
}

func storeBackoffForTest(t *testing.T) {
	t.Cleanup(jobs.SetStoreBackoff(time.Millisecond))
}

// TestCompleteWithoutReferencesFailsOnce: an exercise whose references no
// longer match its answer fails a job the same way on every attempt, so
// the job is failed at its first one, with the reason, instead of being
// run three times.
func TestCompleteWithoutReferencesFailsOnce(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			su := setupClaimed(t, d, func(ex *exercise.Exercise) {
				stale := *ex.References["cpu"]
				stale.AnswerSHA256 = "recorded-from-an-older-answer"
				ex.References["cpu"] = &stale
			})
			db, q, disp, l, sub := su.db, su.q, su.disp, su.lease, su.sub
			if err := disp.Complete(ctx, l.JobID, l.Token, "r1", domain.ExecutionResult{Notebook: l.Notebook, Profile: "cpu"}); err != nil {
				t.Fatalf("complete: %v", err)
			}
			job, err := q.Job(ctx, l.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if job.State != domain.JobFailed || job.Attempt != 1 || job.MaxAttempts < 2 || !strings.Contains(job.LastError, "another version of the answer") {
				t.Errorf("job: state %s, attempt %d of %d, last error %q; want failed at its first attempt", job.State, job.Attempt, job.MaxAttempts, job.LastError)
			}
			if got, _ := db.Submission(ctx, sub.ID); got.Status != domain.StatusFailed {
				t.Errorf("submission %s, want failed", got.Status)
			}
		})
	}
}

// claimed is a ch1 submission of its untouched starter, claimed by
// runner r1, on a fresh database of one dialect.
type claimed struct {
	db    *store.DB
	q     *jobs.Queue
	disp  *jobs.Dispatcher
	lease *domain.Lease
	sub   domain.Submission
}

// setupClaimed loads the catalog (edit changes ch1 first when not nil),
// submits ch1's starter as a learner and claims its job.
func setupClaimed(t *testing.T, dialect string, edit func(*exercise.Exercise)) claimed {
	t.Helper()
	ctx := context.Background()
	db := storetest.Open(t, dialect)
	cat, err := exercise.Load("../../exercises", "../../answers")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := cat.Get("ch1")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ex)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	q := jobs.New(db, log)
	disp := &jobs.Dispatcher{DB: db, Queue: q, Catalog: cat, LeaseTTL: time.Minute, Log: log}
	u, _, err := db.CreateUser(ctx, "ada", domain.RoleLearner)
	if err != nil {
		t.Fatal(err)
	}
	svc := &intake.Service{DB: db, Queue: q, Catalog: cat}
	sub, _, err := svc.Submit(ctx, intake.Request{User: u, ExerciseID: "ch1", Notebook: ex.StarterBytes})
	if err != nil {
		t.Fatal(err)
	}
	l, err := disp.Claim(ctx, "r1", func(domain.Requirement) (bool, string) { return true, "" }, time.Second)
	if err != nil || l == nil {
		t.Fatalf("claim: %v %v", l, err)
	}
	return claimed{db: db, q: q, disp: disp, lease: l, sub: sub}
}
