package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestReaperLosesToTheRunner interleaves a runner between the reaper's
// read of an expired lease and its write, deterministically (a hook at
// that point): a completion, a heartbeat, or a completion on the last
// attempt made meanwhile must stand. The reaper used to update guarded
// only by id and lease token, so a succeeded job went back to queued (and
// was graded twice), or on its last attempt became failed.
func TestReaperLosesToTheRunner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		attempt int // the attempt the runner is on (MaxAttempts is 2)
		act     func(b *testBundle, j domain.Job) error
		want    string
	}{
		{"completion", 1, func(b *testBundle, j domain.Job) error {
			return b.q.Complete(context.Background(), j.ID, j.LeaseToken, nil)
		}, domain.JobSucceeded},
		{"heartbeat", 1, func(b *testBundle, j domain.Job) error {
			_, err := b.q.Heartbeat(context.Background(), j.ID, j.LeaseToken, time.Minute)
			return err
		}, domain.JobLeased},
		{"completion on the last attempt", 2, func(b *testBundle, j domain.Job) error {
			return b.q.Complete(context.Background(), j.ID, j.LeaseToken, nil)
		}, domain.JobSucceeded},
	}
	for _, d := range storetest.Dialects(t) {
		for _, tc := range cases {
			t.Run(d+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				b := setup(t, d)
				b.enqueue(t, 1, "{}")
				var c *jobs.Claimed
				for a := 1; a <= tc.attempt; a++ {
					var err error
					if c, err = b.q.Claim(ctx, "r1", nil, time.Minute); err != nil || c == nil {
						t.Fatalf("claim %d: %v %v", a, c, err)
					}
					// The lease runs out (a database stall longer than the TTL).
					*b.clock = b.clock.Add(2 * time.Minute)
					if a < tc.attempt {
						if n, err := b.q.Reap(ctx); err != nil || n != 1 {
							t.Fatalf("reap of attempt %d: %d %v", a, n, err)
						}
						*b.clock = b.clock.Add(time.Minute) // past the retry backoff
					}
				}
				var hookErr error
				hooked := 0
				jobs.SetAfterReapRead(b.q, func(j domain.Job) {
					hooked++
					hookErr = tc.act(b, j)
				})
				n, err := b.q.Reap(ctx)
				if err != nil || hooked != 1 || hookErr != nil {
					t.Fatalf("reap: %d %v; the runner's %s in between: ran %d, %v", n, err, tc.name, hooked, hookErr)
				}
				job, err := b.q.Job(ctx, c.Job.ID)
				if err != nil {
					t.Fatal(err)
				}
				if n != 0 || job.State != tc.want || job.Attempt != tc.attempt {
					t.Errorf("after the runner's %s the reaper reaped %d: job %s, attempt %d; want %s, attempt %d",
						tc.name, n, job.State, job.Attempt, tc.want, tc.attempt)
				}
			})
		}
	}
}
