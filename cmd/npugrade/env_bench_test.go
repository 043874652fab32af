package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/sandbox"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// BenchmarkGradingLatencyInEnvironment compares, in the cpu grading
// environment, the time from submitting a notebook whose learner cell runs
// torch.compile(f, fullgraph=True) to its score (server, warm kernels with
// torch preloaded from the environment) with a raw `jupyter nbconvert
// --execute` of the same notebook run inside the same environment. The
// target is a ratio of at most 0.3.
func BenchmarkGradingLatencyInEnvironment(b *testing.B) {
	dir := envtest.RequireCPU(b)
	env, err := envs.Store{Dir: filepath.Dir(dir)}.Get(filepath.Base(dir))
	if err != nil {
		b.Fatal(err)
	}
	fixtures := filepath.Join("testdata", "envcompile")
	answer := readFileTB(b, filepath.Join(fixtures, "answers", "envcompile", "envcompile_answer.ipynb"))
	dbURL := storetest.URL(b, "sqlite")
	token := addUserTB(b, dbURL, "bench", "learner")
	s := startServerTB(b, dbURL, "--local-runner", "1", "--exercises", filepath.Join(fixtures, "exercises"),
		"--answers", filepath.Join(fixtures, "answers"), "--env", env.Name, "--envs-dir", filepath.Dir(dir))
	defer s.stop()
	waitGradedPoll(b, s, token, submitTB(b, s, token, "envcompile", answer), 20*time.Millisecond)
	var grade, plain []time.Duration
	for i := 0; i < b.N*latencySamples; i++ {
		time.Sleep(5 * time.Second) // the next warm kernel starts and imports torch
		t0 := time.Now()
		waitGradedPoll(b, s, token, submitTB(b, s, token, "envcompile", answer), 20*time.Millisecond)
		grade = append(grade, time.Since(t0))
		plain = append(plain, rawNbconvertIn(b, env, answer))
	}
	g, p := percentile(grade, 0.5), percentile(plain, 0.5)
	ratio := g.Seconds() / p.Seconds()
	b.ReportMetric(g.Seconds(), "grade-s")
	b.ReportMetric(p.Seconds(), "nbconvert-s")
	b.ReportMetric(ratio, "ratio")
	fmt.Printf("grading latency in environment %s (torch.compile notebook): submit→graded median %v, raw nbconvert --execute in the environment median %v, ratio %.2f (target ≤ 0.30)\n",
		env.Name, g.Round(time.Millisecond), p.Round(time.Millisecond), ratio)
}

// rawNbconvertIn times `python3 -m nbconvert --execute` of nb run inside
// env (its root filesystem as the system, in a sandbox with no limits
// that matter here), as a learner would run it there.
func rawNbconvertIn(b *testing.B, env envs.Env, nb []byte) time.Duration {
	b.Helper()
	base, err := os.MkdirTemp("", "npbe")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(base)
	if err := os.Chmod(base, 0o711); err != nil {
		b.Fatal(err)
	}
	cfg := env.Sandbox(sandbox.DefaultConfig())
	cfg.BaseDir = filepath.Join(base, "b")
	job := filepath.Join(base, "job")
	if err := os.Mkdir(job, 0o700); err != nil {
		b.Fatal(err)
	}
	k, err := cfg.PrepareKernel(context.Background(), job)
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	if err := os.WriteFile(filepath.Join(k.WorkDir, "in.ipynb"), nb, 0o644); err != nil {
		b.Fatal(err)
	}
	if os.Geteuid() == 0 {
		_ = os.Chown(filepath.Join(k.WorkDir, "in.ipynb"), k.Limits.UID, k.Limits.GID)
	}
	cmd := k.Command(context.Background(), env.Meta.Python, "-m", "nbconvert", "--to", "notebook", "--execute",
		"--output-dir", sandbox.SandboxHome, "--output", "out", sandbox.SandboxHome+"/in.ipynb")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("raw nbconvert in %s: %v\n%s", env.Name, err, out.String())
	}
	return time.Since(t0)
}
