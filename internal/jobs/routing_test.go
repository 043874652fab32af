package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestLongNPUHeadDoesNotStarveCPURunner: far more NPU-only jobs than one
// claim looks at sit at the head of the queue; a CPU runner still gets the
// CPU job behind them, and never an NPU one.
func TestLongNPUHeadDoesNotStarveCPURunner(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			b := setup(t, d)
			b.enqueue(t, 100, `{"accelerator":"npu"}`)
			b.enqueue(t, 1, `{}`)
			c, err := b.q.Claim(context.Background(), "cpu-1", cpuOnly, time.Minute)
			if err != nil || c == nil {
				t.Fatalf("CPU claim behind 100 NPU jobs: %v %v", c, err)
			}
			if !c.Job.Requires.IsZero() || c.Job.ID != 101 {
				t.Fatalf("claimed job %d requiring %+v", c.Job.ID, c.Job.Requires)
			}
			if c, err := b.q.Claim(context.Background(), "cpu-1", cpuOnly, time.Minute); err != nil || c != nil {
				t.Fatalf("a CPU runner got an NPU job: %+v %v", c, err)
			}
			npu := func(domain.Requirement) (bool, string) { return true, "" }
			if c, err := b.q.Claim(context.Background(), "npu-1", npu, time.Minute); err != nil || c == nil || c.Job.ID != 1 {
				t.Fatalf("the NPU runner's claim: %+v %v", c, err)
			}
		})
	}
}
