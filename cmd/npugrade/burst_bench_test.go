package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/httpapi"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// BenchmarkBurst grades a burst of 10 chapter answers (the five chapters
// in turn) in the cpu grading environment with one and with two
// in-process runner slots, for --warm-spares 1, 2 and 5 (or the values of
// NPUGRADE_BENCH_SPARES, e.g. "1,5"), and prints graded submissions per
// minute, the ratio of two slots to one (target: at least 1.8), the
// memory the spares hold and the load average. Each burst starts once
// every spare is ready. One burst per slot count was too few: on this
// shared VM the same burst on one slot ran at 44.0 and 51.5/min minutes
// apart (ratios 1.59, 1.75, 1.85 in three runs of one build), so servers
// of 1, 2, 2 and 1 slots run in turn, NPUGRADE_BENCH_BURST_ROUNDS bursts
// each (default 2), and the ratio is of the median rates; every burst's
// rate is printed too. On 2 cores the ratio is set by the CPU of a
// spare's start s and of a job e: one slot grades a job per max(s, e)
// (its next spare starts on the other core), two slots share both cores
// for 10 jobs and 8 starts, (10e+8s)/2. Started from scratch (s about
// 3.5 s: Python, the driver, the kernel importing torch and Dynamo; e
// about 1.2 s) that is 2(9s+e)/(8s+10e), about 1.7; forked from the
// zygotes (--fork-server, the default; s about 0.11 s, 0.17 s before
// 2026-12-04) it is 20e/(10e+8s), 1.8 once s is at most 0.14e. BenchmarkSpareCPU
// (internal/execution) measures s and e. That arithmetic assumes a job
// keeps one core busy; one slot keeps about 1.1 of the 2 cores busy
// (driver and kernel overlap, the next spare starts), which caps two slots
// at about 2/1.1 here. The burst ends when the server graded the last
// submission (graded_at); polling every 20 ms for it took about 0.1 of a
// core from the slots. Measured on a lightly loaded host (load 0.9-1.7):
// 1 slot 42.5/min at 1.12 cores busy, 2 slots 74.0/min at 1.82, ratio 1.74,
// host CPU 1.5-1.6 s per job; on a host shared with other work the ratio
// ranged 1.69-1.98 over four runs. It also prints the host's CPU per job and
// cores busy (/proc/stat: everything on the host, so only a quiet host's
// figures mean anything).
func BenchmarkBurst(b *testing.B) {
	dir := envtest.RequireCPU(b)
	var answers [][]byte
	for _, ch := range burstChapters {
		paths, _ := filepath.Glob(filepath.Join(repoRoot, "answers", ch, "*_answer.ipynb"))
		answers = append(answers, readFileTB(b, paths[0]))
	}
	sparesList := []int{1, 2, 5}
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
	rounds := 2
	if n, err := strconv.Atoi(os.Getenv("NPUGRADE_BENCH_BURST_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	for i := 0; i < b.N; i++ {
		for _, spares := range sparesList {
			// Servers of 1, 2, 2 and 1 slots in turn, rounds bursts each:
			// the host's speed drifts (a shared VM: the same burst's rate
			// varied by 15 % between minutes), and in this order a drift
			// weighs on both sides alike.
			var runs [3][]burstRun
			var mem [3]int64
			for _, slots := range []int{1, 2, 2, 1} {
				r, m := burstServer(b, dir, answers, slots, spares, rounds)
				runs[slots], mem[slots] = append(runs[slots], r...), m
			}
			reportBurst(b, spares, runs[1], runs[2], mem[1], mem[2])
		}
	}
}

// burstChapters are the chapters a burst's answers come from, in turn.
var burstChapters = []string{"ch1", "ch2", "ch3", "ch4", "ch5"}

// burstSize is the jobs of one burst.
const burstSize = 10

// burstRun is one burst: graded submissions per minute, the host's CPU
// seconds per job and its cores busy from the burst's start until its
// end was seen (at most one poll, 250 ms, after graded_at).
type burstRun struct{ perMin, cpuPerJob, busy float64 }

// burstServer starts a server with slots runner slots and spares warm
// spares each, and grades rounds bursts, each once every spare is ready.
func burstServer(b *testing.B, dir string, answers [][]byte, slots, spares, rounds int) ([]burstRun, int64) {
	dbURL := storetest.URL(b, "sqlite")
	token := addUserTB(b, dbURL, "bench", "learner")
	admin := addUserTB(b, dbURL, "bench-admin", "admin")
	s := startServerTB(b, dbURL, "--local-runner", fmt.Sprint(slots), "--upload-limit", "0", "--max-active", "0",
		"--warm-spares", fmt.Sprint(spares), "--env", filepath.Base(dir), "--envs-dir", filepath.Dir(dir))
	defer s.stop()
	waitGradedPoll(b, s, token, submitTB(b, s, token, "ch1", answers[0]), 20*time.Millisecond)
	var runs []burstRun
	var memory int64
	for r := 0; r < rounds; r++ {
		// The burst starts once every spare is ready, as the fleet API
		// shows them (the in-process runner reports them as they change).
		memory = waitSparesReady(b, s, admin, slots*spares)
		t0, busy0 := time.Now(), hostBusy()
		var ids []string
		for k := 0; k < burstSize; k++ {
			ids = append(ids, submitTB(b, s, token, burstChapters[k%len(burstChapters)], answers[k%len(answers)]))
		}
		// The burst ends when the last submission was graded, as the
		// server recorded it (graded_at): polling every 20 ms to see it
		// took about 0.1 of a core (two HTTP exchanges through the
		// checking proxy per poll), CPU that two slots need.
		var end time.Time
		for _, id := range ids {
			if t := gradedAt(b, s, token, id); t.After(end) {
				end = t
			}
		}
		if !end.After(t0) {
			b.Fatalf("last graded at %v, before the burst began (%v)", end, t0)
		}
		cpu := hostBusy() - busy0
		runs = append(runs, burstRun{float64(burstSize) / end.Sub(t0).Minutes(), cpu / burstSize, cpu / time.Since(t0).Seconds()})
	}
	return runs, memory
}

// reportBurst prints and reports one --warm-spares value's bursts: the
// median rate of each slot count, their ratio, and every burst's rate.
func reportBurst(b *testing.B, spares int, one, two []burstRun, mem1, mem2 int64) {
	med := func(runs []burstRun, f func(burstRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return median(v)
	}
	rate := func(r burstRun) float64 { return r.perMin }
	cpu := func(r burstRun) float64 { return r.cpuPerJob }
	busy := func(r burstRun) float64 { return r.busy }
	r1, r2 := med(one, rate), med(two, rate)
	list := func(runs []burstRun) string {
		var out []string
		for _, r := range runs {
			out = append(out, fmt.Sprintf("%.1f", r.perMin))
		}
		return strings.Join(out, " ")
	}
	b.ReportMetric(r1, fmt.Sprintf("graded/min-1slot-spares%d", spares))
	b.ReportMetric(r2, fmt.Sprintf("graded/min-2slots-spares%d", spares))
	b.ReportMetric(r2/r1, fmt.Sprintf("ratio-spares%d", spares))
	b.ReportMetric(float64(mem2)/float64(2*spares)/(1<<20), fmt.Sprintf("MiB/spare-spares%d", spares))
	b.ReportMetric(med(one, cpu), fmt.Sprintf("host-cpu-s/job-1slot-spares%d", spares))
	b.ReportMetric(med(two, cpu), fmt.Sprintf("host-cpu-s/job-2slots-spares%d", spares))
	fmt.Printf("burst of %d in the cpu environment, --warm-spares %d, %d bursts per slot count (medians): 1 slot %.1f graded/min, 2 slots %.1f graded/min, ratio %.2f (target ≥ 1.80); each burst: 1 slot %s, 2 slots %s; spares' memory %s (1 slot), %s (2 slots), %s per spare; host CPU per job %.2f s (1 slot, %.2f cores busy), %.2f s (2 slots, %.2f cores busy); load average %s\n",
		burstSize, spares, len(one), r1, r2, r2/r1, list(one), list(two), domain.FormatSize(mem1), domain.FormatSize(mem2), domain.FormatSize(mem2/int64(2*spares)),
		med(one, cpu), med(one, busy), med(two, cpu), med(two, busy), loadAverage())
}

// gradedAt waits until submission id is graded (polling every 250 ms) and
// returns when the server graded it.
func gradedAt(b *testing.B, s *server, token, id string) time.Time {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		resp, body := request(b, "GET", s.url+"/api/v1/submissions/"+id, token, nil, "", nil)
		var sub httpapi.SubmissionJSON
		if err := json.Unmarshal(body, &sub); resp.StatusCode != 200 || err != nil {
			b.Fatalf("GET submission: %d %s", resp.StatusCode, body)
		}
		switch {
		case sub.Status == "failed":
			b.Fatalf("submission %s failed: %s", id, body)
		case sub.Status == "graded":
			if sub.GradedAt == nil {
				b.Fatalf("submission %s graded without graded_at: %s", id, body)
			}
			return *sub.GradedAt
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.Fatalf("submission %s not graded in time", id)
	return time.Time{}
}

// waitSparesReady waits until the local runner's warm spares are all ready
// (GET /api/v1/runners) and returns the memory they hold.
func waitSparesReady(b *testing.B, s *server, admin string, want int) int64 {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		resp, body := request(b, "GET", s.url+"/api/v1/runners", admin, nil, "", nil)
		var runners []httpapi.RunnerJSON
		if err := json.Unmarshal(body, &runners); resp.StatusCode != 200 || err != nil {
			b.Fatalf("GET /api/v1/runners: %d %s", resp.StatusCode, body)
		}
		for _, r := range runners {
			if ws := r.WarmSpares; ws != nil && ws.Kept == want && ws.Ready == want {
				return ws.MemoryBytes
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("%d warm spares not ready in 5 minutes", want)
	return 0
}

// hostBusy is the CPU time, in seconds, that the host's CPUs have spent
// busy since boot (/proc/stat: all but idle and iowait). Over a burst on a
// quiet host it is the CPU the burst took: driver, kernel, sandbox and this
// process alike; 0 where /proc/stat cannot be read.
func hostBusy() float64 {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:min(len(f), 9)] { // user nice system idle iowait irq softirq steal
		if i == 3 || i == 4 {
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	return busy / 100 // USER_HZ
}

// loadAverage is the host's 1-minute load average (what else ran: a burst
// ratio measured on a busy host says little).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// median is the middle of v (the mean of the two middle values of an even
// count); v is sorted in place.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}
