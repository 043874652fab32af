package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// BenchmarkBurst grades a burst of 10 chapter answers (the five chapters
// in turn) in the cpu grading environment with one and with two
// in-process runner slots, warm kernels with --warm-spares 1 (and 2), and
// prints graded submissions per minute and the ratio of two slots to one
// (target: at least 1.8). Each burst starts once every spare is ready.
func BenchmarkBurst(b *testing.B) {
	dir := envtest.RequireCPU(b)
	const burst = 10
	var answers [][]byte
	chapters := []string{"ch1", "ch2", "ch3", "ch4", "ch5"}
	for _, ch := range chapters {
		paths, _ := filepath.Glob(filepath.Join(repoRoot, "answers", ch, "*_answer.ipynb"))
		answers = append(answers, readFileTB(b, paths[0]))
	}
	rate := func(slots, spares int) float64 {
		dbURL := storetest.URL(b, "sqlite")
		token := addUserTB(b, dbURL, "bench", "learner")
		s := startServerTB(b, dbURL, "--local-runner", fmt.Sprint(slots), "--upload-limit", "0",
			"--warm-spares", fmt.Sprint(spares), "--env", filepath.Base(dir), "--envs-dir", filepath.Dir(dir))
		defer s.stop()
		waitGradedPoll(b, s, token, submitTB(b, s, token, "ch1", answers[0]), 20*time.Millisecond)
		// Every spare starts and imports torch (about 2 s each on 2 cores).
		time.Sleep(time.Duration(3*slots*spares+3) * time.Second)
		t0 := time.Now()
		var ids []string
		for k := 0; k < burst; k++ {
			ids = append(ids, submitTB(b, s, token, chapters[k%len(chapters)], answers[k%len(answers)]))
		}
		for _, id := range ids {
			waitGradedPoll(b, s, token, id, 20*time.Millisecond)
		}
		return float64(burst) / time.Since(t0).Minutes()
	}
	sparesList := []int{1, 2}
	if v := os.Getenv("NPUGRADE_BENCH_SPARES"); v != "" {
		sparesList = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("NPUGRADE_BENCH_SPARES=%q: want a comma-separated list of counts >= 1", v)
			}
			sparesList = append(sparesList, n)
		}
	}
	for i := 0; i < b.N; i++ {
		for _, spares := range sparesList {
			one, two := rate(1, spares), rate(2, spares)
			b.ReportMetric(one, fmt.Sprintf("graded/min-1slot-spares%d", spares))
			b.ReportMetric(two, fmt.Sprintf("graded/min-2slots-spares%d", spares))
			b.ReportMetric(two/one, fmt.Sprintf("ratio-spares%d", spares))
			fmt.Printf("burst of %d in the cpu environment, --warm-spares %d: 1 slot %.1f graded/min, 2 slots %.1f graded/min, ratio %.2f (target ≥ 1.80)\n",
				burst, spares, one, two, two/one)
		}
	}
}
