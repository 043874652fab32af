package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store/storetest"
)

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// padded returns the ch1 answer grown to about size bytes with a markdown cell.
func padded(t testing.TB, size int) []byte {
	var nb map[string]any
	json.Unmarshal(readFileTB(t, filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")), &nb)
	cells := nb["cells"].([]any)
	pad := bytes.Repeat([]byte("填充 padding text for the benchmark. "), size/40)
	cells = append(cells, map[string]any{"id": "padding", "cell_type": "markdown", "metadata": map[string]any{}, "source": string(pad)})
	nb["cells"] = cells
	b, _ := json.Marshal(nb)
	return b
}

func readFileTB(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkIntake measures submission intake (validate, rebuild, store,
// enqueue) of a 100 KB notebook over real HTTP, with no runner attached.
// It runs on Postgres when NPUGRADE_TEST_POSTGRES_DSN is set.
func BenchmarkIntake(b *testing.B) {
	dialect := "sqlite"
	if os.Getenv(storetest.EnvDSN) != "" {
		dialect = "postgres"
	}
	dbURL := storetest.URL(b, dialect)
	token := addUserTB(b, dbURL, "bench", "learner")
	s := startServerTB(b, dbURL, "--local-runner", "0")
	defer s.stop()
	nb := padded(b, 100<<10)
	var mu sync.Mutex
	var lat []time.Duration
	b.SetBytes(int64(len(nb)))
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t0 := time.Now()
			resp := uploadTB(b, s, token, "ch1", nb)
			if resp != http.StatusAccepted {
				b.Errorf("upload: %d", resp)
				return
			}
			mu.Lock()
			lat = append(lat, time.Since(t0))
			mu.Unlock()
		}
	})
	el := time.Since(start)
	b.ReportMetric(float64(b.N)/el.Seconds(), "req/s")
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.Logf("%s: %d submissions of %d bytes, %.0f req/s, p50 %v, p99 %v", dialect, b.N, len(nb), float64(b.N)/el.Seconds(), percentile(lat, 0.5), percentile(lat, 0.99))
}

// BenchmarkGradingLatency compares submit→graded through the server and
// its in-process runner with a plain `jupyter nbconvert --execute` of the
// same notebook, side by side.
func BenchmarkGradingLatency(b *testing.B) {
	for _, ch := range []string{"ch1", "ch2", "ch3", "ch4", "ch5"} {
		b.Run(ch, func(b *testing.B) {
			paths, _ := filepath.Glob(filepath.Join(repoRoot, "answers", ch, "*_answer.ipynb"))
			answer := readFileTB(b, paths[0])
			dbURL := storetest.URL(b, "sqlite")
			token := addUserTB(b, dbURL, "bench", "learner")
			s := startServerTB(b, dbURL, "--local-runner", "1")
			defer s.stop()
			var grade, plain []time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				id := submitTB(b, s, token, ch, answer)
				waitGradedTB(b, s, token, id)
				grade = append(grade, time.Since(t0))

				dir := b.TempDir()
				in := filepath.Join(dir, "in.ipynb")
				os.WriteFile(in, answer, 0o644)
				t1 := time.Now()
				cmd := exec.Command("/usr/bin/jupyter", "nbconvert", "--to", "notebook", "--execute", "--allow-errors", "--output-dir", dir, "--output", "out", in)
				cmd.Env = append(os.Environ(), "NPUGRADE_PROFILE=cpu", "PATH=/usr/bin:/bin")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("plain nbconvert: %v %s", err, out)
				}
				plain = append(plain, time.Since(t1))
			}
			g, p := percentile(grade, 0.5), percentile(plain, 0.5)
			b.ReportMetric(g.Seconds(), "grade-s")
			b.ReportMetric(p.Seconds(), "nbconvert-s")
			b.ReportMetric(g.Seconds()/p.Seconds(), "ratio")
			b.Logf("%s: submit→graded median %v, plain nbconvert median %v, ratio %.2f", ch, g, p, g.Seconds()/p.Seconds())
		})
	}
}

func addUserTB(b testing.TB, dbURL, name, role string) string {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"user", "add", name, "--role", role, "--db", dbURL}, &out, &errb); code != 0 {
		b.Fatalf("user add: %s", errb.String())
	}
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	return string(lines[len(lines)-1])
}

func startServerTB(b testing.TB, dbURL string, extra ...string) *server {
	return startServerT(b, dbURL, extra...)
}

func uploadTB(b testing.TB, s *server, token, ex string, nb []byte) int {
	resp, _ := uploadT(b, s, token, ex, nb, "")
	return resp.StatusCode
}

func submitTB(b testing.TB, s *server, token, ex string, nb []byte) string {
	resp, sub := uploadT(b, s, token, ex, nb, "")
	if resp.StatusCode != 202 {
		b.Fatalf("upload: %d %v", resp.StatusCode, sub)
	}
	return fmt.Sprint(sub["id"])
}

func waitGradedTB(b testing.TB, s *server, token, id string) {
	waitGradedT(b, s, token, id)
}
