package web_test

import (
	"io"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// BenchmarkGradebookCSV streams the gradebook of 10,000 learners × 5
// exercises (50,000 graded submissions) through GET /api/v1/gradebook.csv
// and reports the time per export, the rows and the peak Go heap in use
// while it streams (sampled), which stays far below the size of the CSV.
func BenchmarkGradebookCSV(b *testing.B) {
	for _, d := range storetest.Dialects(b) {
		b.Run(d, func(b *testing.B) {
			e := newEnv(b, d)
			teacher := e.user(b, "teacher", domain.RoleInstructor)
			var exercises []string
			for _, ex := range e.cat.List() {
				exercises = append(exercises, ex.ID)
			}
			if len(exercises) != 5 {
				b.Fatalf("the catalog has %d exercises, the benchmark assumes 5", len(exercises))
			}
			start := time.Now()
			seed(b, e.db, 10000, exercises, 1)
			b.Logf("%s: seeded 50,000 submissions in %s", d, time.Since(start).Round(time.Millisecond))
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			var peak atomic.Uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				var m runtime.MemStats
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}()
			var size int64
			b.ResetTimer()
			for b.Loop() {
				req, _ := http.NewRequest("GET", e.srv.URL+"/api/v1/gradebook.csv", nil)
				req.Header.Set("Authorization", "Bearer "+teacher)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || n < 50000*20 {
					b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
				}
				size = n
			}
			b.StopTimer()
			close(stop)
			<-done
			b.ReportMetric(50000, "rows/op")
			b.ReportMetric(float64(size)/(1<<20), "csv-MiB")
			grown := float64(0)
			if p := peak.Load(); p > base.HeapInuse {
				grown = float64(p-base.HeapInuse) / (1 << 20)
			}
			b.ReportMetric(grown, "peak-heap-growth-MiB")
		})
	}
}
