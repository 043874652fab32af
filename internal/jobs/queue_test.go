package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

type testBundle struct {
	db    *store.DB
	q     *jobs.Queue
	clock *time.Time
}

func setup(t *testing.T, dialect string) *testBundle {
	t.Helper()
	db := storetest.Open(t, dialect)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b := &testBundle{db: db, q: jobs.New(db, nil), clock: &now}
	db.Clock = func() time.Time { return *b.clock }
	return b
}

// enqueue adds n jobs with the given requirement JSON.
func (b *testBundle) enqueue(t *testing.T, n int, requires string) {
	t.Helper()
	var req domain.Requirement
	if err := json.Unmarshal([]byte(requires), &req); err != nil {
		t.Fatal(err)
	}
	err := b.db.InTx(context.Background(), func(tx *store.Tx) error {
		for i := 0; i < n; i++ {
			sha, err := tx.PutBlob([]byte(fmt.Sprintf("payload %d %s", i, requires)))
			if err != nil {
				return err
			}
			if err := b.q.Enqueue(tx, &domain.Job{Kind: domain.JobReference, ExerciseID: "ch1", Requires: req, PayloadSHA256: sha, MaxAttempts: 2}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.q.Notify()
}

func cpuOnly(req domain.Requirement) (bool, string) {
	return req.Accelerator == "" || req.Accelerator == "cpu", "needs an NPU"
}

func TestQueue(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()

			t.Run("ConcurrentClaimersNeverShareAJob", func(t *testing.T) {
				t.Parallel()
				b := setup(t, d)
				b.db.Clock = func() time.Time { return time.Now().UTC() }
				const jobs, claimers = 120, 16
				b.enqueue(t, jobs, "{}")
				var mu sync.Mutex
				seen := map[int64]string{}
				var wg sync.WaitGroup
				errs := make(chan error, claimers)
				for w := 0; w < claimers; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						for {
							c, err := b.q.Claim(context.Background(), fmt.Sprintf("r%d", w), nil, time.Minute)
							if err != nil {
								errs <- err
								return
							}
							if c == nil {
								return
							}
							mu.Lock()
							if prev, dup := seen[c.Job.ID]; dup {
								mu.Unlock()
								errs <- fmt.Errorf("job %d leased to %s and r%d", c.Job.ID, prev, w)
								return
							}
							seen[c.Job.ID] = fmt.Sprintf("r%d", w)
							mu.Unlock()
							if err := b.q.Complete(context.Background(), c.Job.ID, c.Job.LeaseToken, nil); err != nil {
								errs <- err
								return
							}
						}
					}(w)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				if len(seen) != jobs {
					t.Fatalf("claimed %d distinct jobs, want %d", len(seen), jobs)
				}
				depth, _ := b.q.Depth(context.Background())
				if depth[domain.JobSucceeded] != jobs {
					t.Fatalf("depth = %v", depth)
				}
			})

			t.Run("LeaseTokenFencesEveryWrite", func(t *testing.T) {
				t.Parallel()
				b := setup(t, d)
				ctx := context.Background()
				b.enqueue(t, 1, "{}")
				c, err := b.q.Claim(ctx, "old", nil, time.Minute)
				if err != nil || c == nil {
					t.Fatalf("claim: %v %v", c, err)
				}
				// The lease expires; the reaper hands the job to another runner.
				*b.clock = b.clock.Add(2 * time.Minute)
				if n, err := b.q.Reap(ctx); err != nil || n != 1 {
					t.Fatalf("reap = %d, %v", n, err)
				}
				*b.clock = b.clock.Add(time.Minute) // past the retry backoff
				c2, err := b.q.Claim(ctx, "new", nil, time.Minute)
				if err != nil || c2 == nil || c2.Job.ID != c.Job.ID || c2.Job.Attempt != 2 {
					t.Fatalf("second claim: %+v %v", c2, err)
				}
				if _, err := b.q.Heartbeat(ctx, c.Job.ID, c.Job.LeaseToken, time.Minute); !errors.Is(err, domain.ErrLeaseLost) {
					t.Fatalf("stale heartbeat: %v", err)
				}
				wrote := false
				err = b.q.Complete(ctx, c.Job.ID, c.Job.LeaseToken, func(*store.Tx) error { wrote = true; return nil })
				if !errors.Is(err, domain.ErrLeaseLost) || wrote {
					t.Fatalf("stale complete: %v, wrote=%v", err, wrote)
				}
				if err := b.q.Fail(ctx, c.Job.ID, c.Job.LeaseToken, "late"); !errors.Is(err, domain.ErrLeaseLost) {
					t.Fatalf("stale fail: %v", err)
				}
				if _, err := b.q.Heartbeat(ctx, c2.Job.ID, c2.Job.LeaseToken, time.Minute); err != nil {
					t.Fatalf("owner heartbeat: %v", err)
				}
				if err := b.q.Complete(ctx, c2.Job.ID, c2.Job.LeaseToken, nil); err != nil {
					t.Fatalf("owner complete: %v", err)
				}
			})

			t.Run("LastAttemptFailsInsteadOfStalling", func(t *testing.T) {
				t.Parallel()
				b := setup(t, d)
				ctx := context.Background()
				b.enqueue(t, 1, "{}")
				for attempt := 1; attempt <= 2; attempt++ {
					*b.clock = b.clock.Add(time.Minute)
					c, err := b.q.Claim(ctx, "crashy", nil, time.Minute)
					if err != nil || c == nil {
						t.Fatalf("attempt %d: claim %v %v", attempt, c, err)
					}
					*b.clock = b.clock.Add(2 * time.Minute)
					if _, err := b.q.Reap(ctx); err != nil {
						t.Fatal(err)
					}
				}
				*b.clock = b.clock.Add(time.Hour)
				if c, _ := b.q.Claim(ctx, "next", nil, time.Minute); c != nil {
					t.Fatalf("a job past max attempts was leased again: %+v", c.Job)
				}
				depth, _ := b.q.Depth(ctx)
				if depth[domain.JobFailed] != 1 {
					t.Fatalf("depth = %v", depth)
				}
			})

			t.Run("ReleaseDoesNotCountAnAttempt", func(t *testing.T) {
				t.Parallel()
				b := setup(t, d)
				ctx := context.Background()
				b.enqueue(t, 1, "{}")
				c, _ := b.q.Claim(ctx, "a", nil, time.Minute)
				if err := b.q.Release(ctx, c.Job.ID, c.Job.LeaseToken); err != nil {
					t.Fatal(err)
				}
				c2, _ := b.q.Claim(ctx, "b", nil, time.Minute)
				if c2 == nil || c2.Job.Attempt != 1 {
					t.Fatalf("after release: %+v", c2)
				}
			})

			t.Run("NPUJobWaitsForAnNPURunner", func(t *testing.T) {
				t.Parallel()
				b := setup(t, d)
				ctx := context.Background()
				b.enqueue(t, 1, `{"accelerator":"npu","product":"A2"}`)
				b.enqueue(t, 1, `{}`)
				c, err := b.q.Claim(ctx, "cpu-runner", cpuOnly, time.Minute)
				if err != nil || c == nil || !c.Job.Requires.IsZero() {
					t.Fatalf("cpu runner got %+v, %v", c, err)
				}
				c2, err := b.q.Claim(ctx, "cpu-runner", cpuOnly, time.Minute)
				if err != nil || c2 != nil {
					t.Fatalf("cpu runner was leased the NPU job: %+v", c2)
				}
				depth, _ := b.q.Depth(ctx)
				if depth[domain.JobQueued] != 1 {
					t.Fatalf("the NPU job should wait visibly in the queue: %v", depth)
				}
				npu := func(domain.Requirement) (bool, string) { return true, "" }
				c3, err := b.q.Claim(ctx, "npu-runner", npu, time.Minute)
				if err != nil || c3 == nil {
					t.Fatalf("npu runner: %v %v", c3, err)
				}
			})

			t.Run("ClaimWaitWakesOnEnqueue", func(t *testing.T) {
				t.Parallel()
				b := setup(t, d)
				b.db.Clock = func() time.Time { return time.Now().UTC() }
				got := make(chan *jobs.Claimed, 1)
				go func() {
					c, _ := b.q.ClaimWait(context.Background(), "w", nil, time.Minute, 20*time.Second)
					got <- c
				}()
				time.Sleep(50 * time.Millisecond) // let the poller block
				b.enqueue(t, 1, "{}")
				select {
				case c := <-got:
					if c == nil {
						t.Fatal("long poll returned no job")
					}
				case <-time.After(15 * time.Second):
					t.Fatal("long poll did not wake")
				}
			})
		})
	}
}
