package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// twoServers opens one database twice, as two server processes would:
// separate connection pools, separate queues.
// server is one server process's queue and its own connection pool.
type server struct {
	*jobs.Queue
	db *store.DB
}

func twoServers(t *testing.T, dialect string) (a, b server) {
	t.Helper()
	url := storetest.URL(t, dialect)
	var qs [2]server
	for i := range qs {
		db, err := store.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		qs[i] = server{jobs.New(db, nil), db}
	}
	return qs[0], qs[1]
}

// listen runs q's listener for the test and waits until it is in place.
func listen(t *testing.T, q *jobs.Queue) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); q.Listen(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for start := time.Now(); !jobs.Listening(q); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the listener did not start")
		}
	}
}

func enqueueOn(t *testing.T, q server, n int, req domain.Requirement) {
	t.Helper()
	err := q.db.InTx(context.Background(), func(tx *store.Tx) error {
		for i := 0; i < n; i++ {
			sha, err := tx.PutBlob([]byte(fmt.Sprintf("payload %d %d", i, time.Now().UnixNano())))
			if err != nil {
				return err
			}
			if err := q.Enqueue(tx, &domain.Job{Kind: domain.JobReference, ExerciseID: "ch1", Requires: req, PayloadSHA256: sha}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	q.Notify()
}

// TestTwoServersNeverShareAJob: claimers on two server processes long-poll
// one database while jobs arrive through both; every job is leased exactly
// once and completed.
func TestTwoServersNeverShareAJob(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			a, b := twoServers(t, d)
			if d == "postgres" {
				listen(t, a.Queue)
				listen(t, b.Queue)
			}
			const total, perServer = 200, 8
			var mu sync.Mutex
			seen := map[int64]string{}
			var wg sync.WaitGroup
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errs := make(chan error, 2*perServer)
			for i, q := range []server{a, b} {
				for w := 0; w < perServer; w++ {
					wg.Add(1)
					go func(name string) {
						defer wg.Done()
						for ctx.Err() == nil {
							c, err := q.ClaimWait(ctx, name, cpuOnly, time.Minute, 5*time.Second)
							if err != nil && ctx.Err() != nil {
								return // the test is over
							}
							if err != nil {
								errs <- err
								return
							}
							if c == nil {
								continue
							}
							mu.Lock()
							prev, dup := seen[c.Job.ID]
							seen[c.Job.ID] = name
							n := len(seen)
							mu.Unlock()
							if dup {
								errs <- fmt.Errorf("job %d leased to %s and %s", c.Job.ID, prev, name)
								return
							}
							if err := q.Complete(context.Background(), c.Job.ID, c.Job.LeaseToken, nil); err != nil {
								errs <- err
								return
							}
							if n == total {
								cancel()
							}
						}
					}(fmt.Sprintf("s%d-r%d", i, w))
				}
			}
			// Jobs arrive in batches through both servers while the claimers poll.
			for i := 0; i < total/20; i++ {
				enqueueOn(t, []server{a, b}[i%2], 20, domain.Requirement{})
			}
			select {
			case <-ctx.Done():
			case <-time.After(60 * time.Second):
				t.Error("not every job was claimed within a minute")
				cancel()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if len(seen) != total {
				t.Fatalf("claimed %d distinct jobs, want %d", len(seen), total)
			}
			depth, _ := a.Depth(context.Background())
			if depth[domain.JobSucceeded] != total {
				t.Fatalf("depth = %v, want %d succeeded", depth, total)
			}
		})
	}
}

// TestNotificationWakesAnotherServer: a long poll on server B wakes when
// a job is enqueued through server A, by Postgres notification: far sooner
// than the safety-net re-query (30 s), which would be the only other way.
// A CPU claimer is not handed an NPU job, and an NPU job's notification
// does not spend the CPU claimer's wake-up.
func TestNotificationWakesAnotherServer(t *testing.T) {
	t.Parallel()
	a, b := twoServers(t, "postgres")
	listen(t, b.Queue)
	ctx := context.Background()
	// Warm the requirement cache of B so that its first claim is a plain one.
	if c, err := b.Claim(ctx, "warm", cpuOnly, time.Minute); err != nil || c != nil {
		t.Fatalf("claim on an empty queue: %v %v", c, err)
	}
	for round := 0; round < 3; round++ {
		got := make(chan *jobs.Claimed, 1)
		go func() {
			c, err := b.ClaimWait(ctx, "b-runner", cpuOnly, time.Minute, 25*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- c
		}()
		time.Sleep(200 * time.Millisecond) // the poll is waiting
		enqueueOn(t, a, 1, domain.Requirement{Accelerator: "npu"})
		start := time.Now()
		enqueueOn(t, a, 1, domain.Requirement{})
		select {
		case c := <-got:
			woke := time.Since(start)
			if c == nil || c.Job.Requires.NeedsNPU() {
				t.Fatalf("round %d: the long poll on B got %+v", round, c)
			}
			t.Logf("round %d: the long poll on B woke %v after the enqueue on A", round, woke)
			if woke > 5*time.Second {
				t.Fatalf("round %d: woke after %v: not by notification", round, woke)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the long poll on B did not wake", round)
		}
	}
}

// TestOneReaperAtATime: while one server holds the reaper's lock, another
// server's reaper pass does not run.
func TestOneReaperAtATime(t *testing.T) {
	t.Parallel()
	a, b := twoServers(t, "postgres")
	ctx := context.Background()
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan bool)
	go func() {
		ran, err := a.db.Exclusively(ctx, store.LockReaper, func(context.Context) error {
			close(inside)
			<-release
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		done <- ran
	}()
	<-inside
	ran, err := b.db.Exclusively(ctx, store.LockReaper, func(context.Context) error { return nil })
	if err != nil || ran {
		t.Fatalf("second reaper ran while the first held the lock: ran=%v err=%v", ran, err)
	}
	close(release)
	if !<-done {
		t.Fatal("the first reaper did not run")
	}
	ran, err = b.db.Exclusively(ctx, store.LockReaper, func(context.Context) error { return nil })
	if err != nil || !ran {
		t.Fatalf("after the first released the lock the second did not run: ran=%v err=%v", ran, err)
	}
}

// TestRetriedJobWakesClaimerAfterBackoff: a job that failed once is
// requeued with a backoff (2 s); a claimer already waiting is woken when
// the backoff ends (a timer here, the notification's time on another
// Postgres server), not by the 30 s safety net.
func TestRetriedJobWakesClaimerAfterBackoff(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			a, b := twoServers(t, d)
			if d == "postgres" {
				listen(t, a.Queue)
				listen(t, b.Queue)
			}
			ctx := context.Background()
			enqueueOn(t, a, 1, domain.Requirement{})
			c, err := a.Claim(ctx, "first", cpuOnly, time.Minute)
			if err != nil || c == nil {
				t.Fatalf("claim: %v %v", c, err)
			}
			waiter := b // on Postgres the other server; SQLite has one process
			if d == "sqlite" {
				waiter = a
			}
			got := make(chan *jobs.Claimed, 1)
			go func() {
				c, err := waiter.ClaimWait(ctx, "second", cpuOnly, time.Minute, 25*time.Second)
				if err != nil {
					t.Error(err)
				}
				got <- c
			}()
			time.Sleep(200 * time.Millisecond)
			start := time.Now()
			if err := a.Fail(ctx, c.Job.ID, c.Job.LeaseToken, "runner crashed"); err != nil {
				t.Fatal(err)
			}
			select {
			case c2 := <-got:
				took := time.Since(start)
				if c2 == nil || c2.Job.ID != c.Job.ID || c2.Job.Attempt != 2 {
					t.Fatalf("the waiting claimer got %+v", c2)
				}
				t.Logf("the retried job was claimed %v after the failure (backoff 2 s)", took)
				if took < 2*time.Second || took > 10*time.Second {
					t.Fatalf("claimed %v after the failure: want just after the 2 s backoff", took)
				}
			case <-time.After(24 * time.Second):
				t.Fatal("the waiting claimer was not woken after the backoff")
			}
		})
	}
}
