package jobs_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// BenchmarkClaimLatency measures claim latency on Postgres with 10,000
// queued jobs and 64 runners long-polling at once (ClaimWait, the call
// behind POST /api/runner/v1/jobs/claim). One job in ten needs an NPU that
// these runners lack, so claims skip rows as they do in production. Each
// claimed job is completed at once, so the runners keep polling. b.N is
// the number of claims; the queue is refilled to 10,000 before each run.
// Reported: p50 and p99 claim latency in ms, and claims/s.
func BenchmarkClaimLatency(b *testing.B) {
	if os.Getenv("NPUGRADE_TEST_POSTGRES_DSN") == "" {
		b.Skip("needs Postgres (NPUGRADE_TEST_POSTGRES_DSN)")
	}
	const queued, runners = 10000, 64
	db := storetest.Open(b, "postgres")
	q := jobs.New(db, nil)
	sha := ""
	err := db.InTx(context.Background(), func(tx *store.Tx) error {
		var err error
		sha, err = tx.PutBlob([]byte(`{"cells":[]}`))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	fill := func(n int) {
		rows := make([]map[string]any, n)
		now := db.Now()
		for i := range rows {
			req := "{}"
			if i%10 == 0 {
				req = `{"accelerator":"npu"}`
			}
			rows[i] = map[string]any{"kind": domain.JobReference, "exercise_id": "ch1", "state": domain.JobQueued, "requires": req,
				"max_attempts": 3, "payload_sha256": sha, "not_before": now, "created_at": now, "updated_at": now}
		}
		if err := db.InTx(context.Background(), func(tx *store.Tx) error { return tx.RawInsert("jobs", rows) }); err != nil {
			b.Fatal(err)
		}
	}
	var have int64
	_ = db.RawScan(context.Background(), &have, "SELECT COUNT(*) FROM jobs WHERE state = ? AND requires = ?", domain.JobQueued, "{}")
	fill(queued - int(have))
	cpu := func(req domain.Requirement) (bool, string) { return !req.NeedsNPU(), "needs an NPU" }

	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	var mu sync.Mutex
	var next int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for r := 0; r < runners; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			id := fmt.Sprintf("bench-%d", r)
			for {
				mu.Lock()
				if next >= int64(b.N) {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				t0 := time.Now()
				c, err := q.ClaimWait(ctx, id, cpu, time.Minute, 25*time.Second)
				d := time.Since(t0)
				if err != nil || c == nil {
					b.Errorf("claim: %v %v", c, err)
					return
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				if err := q.Complete(ctx, c.Job.ID, c.Job.LeaseToken, nil); err != nil {
					b.Errorf("complete: %v", err)
					return
				}
			}
		}(r)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "claims/s")
	b.ReportMetric(0, "ns/op")
}
