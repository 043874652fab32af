package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestIntakeWritesAllOrNothing: an upload without a cap is written by
// intake's own statements (one statement on Postgres): the submission,
// both blobs, the queued job as package jobs shaped it and the
// upload attempt when asked; a write that fails leaves none of them; a
// key used by several concurrent uploads creates one submission, one job
// and one attempt, and every upload gets that submission back.
func TestIntakeWritesAllOrNothing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := learner(t, db)
		job := jobs.New(db, nil).GradeJob("ch1", domain.Requirement{Accelerator: "npu"}, 2)
		job.Priority, job.Profile = 3, "npu"
		ns := store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v1", Upload: []byte(`{"u":1}`),
			Rebuilt: []byte(`{"r":1}`), Integrity: []byte(`{"Verdicts":{}}`), Job: job, RecordAttempt: true}
		sub, created, err := db.CreateSubmission(ctx, ns)
		if err != nil || !created {
			t.Fatalf("create: %v, created %v", err, created)
		}
		checkIntakeRows(t, db, sub.ID, store.SHA256(ns.Upload), store.SHA256(ns.Rebuilt))
		if n := count(t, db, "SELECT count(*) FROM upload_attempts WHERE user_id = ? AND exercise_id = 'ch1'", u.ID); n != 1 {
			t.Errorf("%d upload attempts recorded, want 1", n)
		}

		// A user that does not exist: the foreign key fails the write.
		bad := ns
		bad.UserID, bad.Upload, bad.Rebuilt = u.ID+1000, []byte(`{"u":2}`), []byte(`{"r":2}`)
		if _, _, err := db.CreateSubmission(ctx, bad); err == nil {
			t.Fatal("a submission of a user that does not exist was stored")
		}
		for table, want := range map[string]int64{"submissions": 1, "jobs": 1, "blobs": 2, "upload_attempts": 1} {
			if n := count(t, db, "SELECT count(*) FROM "+table); n != want {
				t.Errorf("after a failed write %s has %d rows, want %d", table, n, want)
			}
		}

		keyed := ns
		keyed.IdempotencyKey = "k1"
		ids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := keyed
				k.Upload = []byte(fmt.Sprintf(`{"u":%d}`, 10+i))
				s, _, err := db.CreateSubmission(ctx, k)
				if err != nil {
					t.Errorf("keyed upload %d: %v", i, err)
				}
				ids[i] = s.ID
			}()
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Errorf("one key gave submissions %s and %s", ids[0], id)
			}
		}
		if n := count(t, db, "SELECT count(*) FROM submissions WHERE idempotency_key = 'k1'"); n != 1 {
			t.Errorf("%d submissions for one key", n)
		}
		if n := count(t, db, "SELECT count(*) FROM jobs"); n != 2 {
			t.Errorf("%d jobs after two accepted uploads", n)
		}
	})
}

func checkIntakeRows(t *testing.T, db *store.DB, subID, upload, payload string) {
	t.Helper()
	ctx := context.Background()
	sub, err := db.Submission(ctx, subID)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Status != domain.StatusQueued || sub.ExerciseVersion != "v1" || sub.NotebookSHA256 != upload {
		t.Errorf("submission stored as %+v", sub)
	}
	if b, err := db.Blob(ctx, payload); err != nil || string(b) != `{"r":1}` {
		t.Errorf("rebuilt notebook: %q, %v", b, err)
	}
	if integ, err := db.SubmissionIntegrity(ctx, subID); err != nil || len(integ) == 0 {
		t.Errorf("integrity findings: %q, %v", integ, err)
	}
	var jobs []struct {
		State, Requires, Profile, PayloadSHA256 string
		Priority, MaxAttempts                   int
	}
	if err := db.RawScan(ctx, &jobs, "SELECT state, requires, profile, payload_sha256, priority, max_attempts FROM jobs WHERE submission_id = ?", subID); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d jobs for the submission", len(jobs))
	}
	j := jobs[0]
	if j.State != domain.JobQueued || j.Profile != "npu" || j.Priority != 3 || j.MaxAttempts != 2 || j.PayloadSHA256 != payload || j.Requires != `{"accelerator":"npu"}` {
		t.Errorf("job stored as %+v", j)
	}
}

func count(t *testing.T, db *store.DB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.RawScan(context.Background(), &n, sql, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIntakeWritesConcurrentUploadsTogether: on Postgres, uploads that
// wait while intake's statement runs are written by one statement (group
// commit), each getting its own submission and job; a batch in which one
// upload fails (a user that does not exist) is written again one by one,
// so that only that upload fails and a reused idempotency key in it still
// answers with the earlier submission. SQLite writes the same uploads one
// transaction each, with the same answers.
func TestIntakeWritesConcurrentUploadsTogether(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u := learner(t, db)
		upload := func(i int) store.NewSubmission {
			return store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v1",
				Upload: []byte(fmt.Sprintf(`{"u":%d}`, i)), Rebuilt: []byte(fmt.Sprintf(`{"r":%d}`, i%2)),
				Integrity: []byte(`{}`), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 2), RecordAttempt: i%3 == 0}
		}
		first := upload(0)
		first.IdempotencyKey = "k0"
		earlier, _, err := db.CreateSubmission(ctx, first)
		if err != nil {
			t.Fatal(err)
		}

		type answer struct {
			sub     domain.Submission
			created bool
			err     error
		}
		// Round 1: four new uploads, one reusing key k0, one of a
		// user that does not exist.
		ups := []store.NewSubmission{upload(1), upload(2), upload(3), upload(4), upload(5), upload(6)}
		ups[4].IdempotencyKey = "k0"
		ups[5].UserID = u.ID + 1000
		together := func(ups []store.NewSubmission, queued int) []answer {
			var release func(int)
			if db.Dialect == "postgres" {
				release = db.HoldIntake()
			}
			out := make([]answer, len(ups))
			var wg sync.WaitGroup
			for i, ns := range ups {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out[i].sub, out[i].created, out[i].err = db.CreateSubmission(ctx, ns)
				}()
			}
			if release != nil {
				release(queued)
			}
			wg.Wait()
			return out
		}
		checkOwn := func(a answer, ns store.NewSubmission) {
			t.Helper()
			if a.err != nil || !a.created {
				t.Fatalf("upload %s: %v, created %v", ns.Upload, a.err, a.created)
			}
			var jobs []struct{ PayloadSHA256, NotebookSHA256 string }
			if err := db.RawScan(ctx, &jobs, "SELECT j.payload_sha256, s.notebook_sha256 FROM jobs j JOIN submissions s ON s.id = j.submission_id WHERE s.id = ?", a.sub.ID); err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 1 || jobs[0].PayloadSHA256 != store.SHA256(ns.Rebuilt) || jobs[0].NotebookSHA256 != store.SHA256(ns.Upload) {
				t.Errorf("upload %s: stored as %+v", ns.Upload, jobs)
			}
			if b, err := db.Blob(ctx, store.SHA256(ns.Upload)); err != nil || string(b) != string(ns.Upload) {
				t.Errorf("upload %s: blob %q, %v", ns.Upload, b, err)
			}
		}
		// The reused key is answered before intake: five queue up.
		got := together(ups, 5)
		for i := 0; i < 4; i++ {
			checkOwn(got[i], ups[i])
		}
		if a := got[4]; a.err != nil || a.created || a.sub.ID != earlier.ID {
			t.Errorf("reused key: %s created %v, %v; want the earlier %s", a.sub.ID, a.created, a.err, earlier.ID)
		}
		if got[5].err == nil {
			t.Error("the upload of a user that does not exist was stored")
		}
		if db.Dialect == "postgres" {
			if batched, retried := db.IntakeBatches(); batched != 0 || retried != 1 {
				t.Errorf("round 1: %d uploads written together, %d batches retried; want 0 and 1", batched, retried)
			}
		}

		// Round 2: five new uploads, written by one statement.
		ups = []store.NewSubmission{upload(7), upload(8), upload(9), upload(10), upload(11)}
		got = together(ups, len(ups))
		for i := range ups {
			checkOwn(got[i], ups[i])
		}
		if db.Dialect == "postgres" {
			if batched, retried := db.IntakeBatches(); batched != 5 || retried != 1 {
				t.Errorf("round 2: %d uploads written together, %d batches retried; want 5 and 1", batched, retried)
			}
		}
		// Round 3: two new uploads with one new key, both past the
		// key's lookup: the statement fails on the key, the retry stores
		// one and answers the other with it.
		ups = []store.NewSubmission{upload(12), upload(15)}
		ups[0].IdempotencyKey, ups[1].IdempotencyKey = "k3", "k3"
		got = together(ups, len(ups))
		if got[0].err != nil || got[1].err != nil || got[0].sub.ID != got[1].sub.ID || got[0].created == got[1].created {
			t.Errorf("one key twice at once: %+v", got)
		}
		if db.Dialect == "postgres" {
			if batched, retried := db.IntakeBatches(); batched != 5 || retried != 2 {
				t.Errorf("round 3: %d uploads written together, %d batches retried; want 5 and 2", batched, retried)
			}
		}
		for table, want := range map[string]int64{"submissions": 11, "jobs": 11, "blobs": 13, "upload_attempts": 4} {
			if n := count(t, db, "SELECT count(*) FROM "+table); n != want {
				t.Errorf("%s has %d rows, want %d", table, n, want)
			}
		}
	})
}

// learner is a learner of db's, for the uploads of a test.
func learner(t *testing.T, db *store.DB) domain.User {
	t.Helper()
	u, _, err := db.CreateUser(context.Background(), "ada", domain.RoleLearner)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
