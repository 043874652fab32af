package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// BenchmarkLatency (make bench latency): per chapter answer, in the cpu
// grading environment with the server's defaults (one local runner slot,
// a warm spare forked from the zygotes), on an idle runner: the time from
// submitting to the score, p50 over latencySamples, against the sum of
// the cells' own execution times measured inside the kernel (each cell's
// execute_input to its execute_reply, by the kernel's own message
// timestamps, which the executed notebook keeps). What is left is the
// service's share: upload, claim, hand-over to the spare, the driver's
// messages, the result's upload and the grading. Target: p50 at most the
// cells' sum + 0.2 s.
func BenchmarkLatency(b *testing.B) {
	dir := envtest.RequireCPU(b)
	env, err := envs.Store{Dir: filepath.Dir(dir)}.Get(filepath.Base(dir))
	if err != nil {
		b.Fatal(err)
	}
	chapters := []string{"ch1", "ch2", "ch3", "ch4", "ch5"}
	if v := os.Getenv("NPUGRADE_BENCH_CHAPTERS"); v != "" {
		chapters = strings.Split(v, ",")
	}
	dbURL := storetest.URL(b, "sqlite")
	staff := addUserTB(b, dbURL, "bench-staff", "instructor")
	s := startServerTB(b, dbURL, "--local-runner", "1", "--env", env.Name, "--envs-dir", filepath.Dir(dir))
	defer s.stop()
	var lines []string
	var before, between, after []time.Duration
	worst := 0.0
	for _, ch := range chapters {
		paths, _ := filepath.Glob(filepath.Join(repoRoot, "answers", ch, "*_answer.ipynb"))
		if len(paths) == 0 {
			b.Fatalf("no answer for %s", ch)
		}
		answer := readFileTB(b, paths[0])
		// A learner per chapter: the default upload limit counts each one's uploads.
		token := addUserTB(b, dbURL, "bench-"+ch, "learner")
		// One untimed submission: caches and the first spare are ready after it.
		waitGradedPoll(b, s, token, submitTB(b, s, token, ch, answer), 10*time.Millisecond)
		var total, cells, over []time.Duration
		for i := 0; i < b.N*latencySamples; i++ {
			time.Sleep(4 * time.Second) // the slot's next spare is forked and ready: an idle runner
			t0 := time.Now()
			id := submitTB(b, s, token, ch, answer)
			waitGradedPoll(b, s, token, id, 10*time.Millisecond)
			d := time.Since(t0)
			resp, body := request(b, "GET", s.url+"/api/v1/submissions/"+id+"/executed", staff, nil, "", nil)
			if resp.StatusCode != 200 {
				b.Fatalf("executed notebook: %d %s", resp.StatusCode, body)
			}
			t := cellTimes(b, body)
			if t.cells == 0 {
				b.Fatalf("%s: the executed notebook has no cell timings", ch)
			}
			total, cells, over = append(total, d), append(cells, t.own), append(over, d-t.own)
			// Where the rest went: before the first cell (upload, queue,
			// claim, hand-over), between cells (the driver's round trips),
			// after the last (result, grading, the poll).
			_, sb := request(b, "GET", s.url+"/api/v1/submissions/"+id, token, nil, "", nil)
			var sub struct {
				GradedAt time.Time `json:"graded_at"`
			}
			_ = json.Unmarshal(sb, &sub)
			before, between = append(before, t.first.Sub(t0)), append(between, t.last.Sub(t.first)-t.own)
			after = append(after, sub.GradedAt.Sub(t.last))
		}
		p, c, o := percentile(total, 0.5), percentile(cells, 0.5), percentile(over, 0.5)
		worst = max(worst, o.Seconds())
		b.ReportMetric(p.Seconds(), ch+"-p50-s")
		b.ReportMetric(o.Seconds(), ch+"-over-s")
		ms := func(d []time.Duration) time.Duration { return percentile(d, 0.5).Round(time.Millisecond) }
		lines = append(lines, fmt.Sprintf("%s: submit→graded p50 %v, the cells' own time p50 %v, the rest p50 %v (%.2f× the 0.2 s target): before the first cell %v, between cells %v, from the last cell to graded %v",
			ch, p.Round(time.Millisecond), c.Round(time.Millisecond), o.Round(time.Millisecond), o.Seconds()/0.2, ms(before), ms(between), ms(after)))
		before, between, after = nil, nil, nil
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println("latency: " + l)
	}
	fmt.Printf("latency: worst chapter's share beyond its cells %.3f s (target ≤ 0.2 s)\n", worst)
	b.ReportMetric(0, "ns/op")
}

// timings is what an executed notebook says of its cells' times.
type timings struct {
	own         time.Duration // the cells' execute_input to execute_reply, summed
	first, last time.Time     // the first cell's execute_input, the last one's reply
	cells       int           // code cells with both stamps
}

// cellTimes reads the stamps nbclient's record_timing keeps in each code
// cell's metadata.execution (the kernel's own message times).
func cellTimes(b *testing.B, nb []byte) timings {
	b.Helper()
	var doc struct {
		Cells []struct {
			CellType string `json:"cell_type"`
			Metadata struct {
				Execution map[string]string `json:"execution"`
			} `json:"metadata"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(nb, &doc); err != nil {
		b.Fatalf("executed notebook: %v", err)
	}
	var t timings
	for _, c := range doc.Cells {
		in, err1 := time.Parse(time.RFC3339Nano, c.Metadata.Execution["iopub.execute_input"])
		out, err2 := time.Parse(time.RFC3339Nano, c.Metadata.Execution["shell.execute_reply"])
		if c.CellType != "code" || err1 != nil || err2 != nil {
			continue
		}
		if t.cells == 0 {
			t.first = in
		}
		t.own += out.Sub(in)
		t.last = out
		t.cells++
	}
	return t
}
