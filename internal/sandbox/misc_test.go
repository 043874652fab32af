package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	good := map[string]int64{
		"1024": 1024, "512MiB": 512 << 20, "2GiB": 2 << 30, "2gib": 2 << 30, "100MB": 100_000_000,
		"1.5GiB": 3 << 29, "64k": 64 << 10, "1 GiB": 1 << 30, "10B": 10, " 3M ": 3 << 20, "1TB": 1e12,
	}
	for in, want := range good {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "0", "abc", "12XB", "1e400", "99999999999TiB", "NaN"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		} else if !strings.Contains(err.Error(), "parse size") {
			t.Errorf("ParseSize(%q) error lacks context: %v", in, err)
		}
	}
	for n, want := range map[int64]string{2 << 30: "2 GiB", 256 << 20: "256 MiB", 3 << 29: "1.5 GiB", 100: "100 B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	bad := []Config{
		{Mode: "docker"},
		{MemoryLimit: 1000},
		{Devices: []string{"dev/davinci0"}},
		{DriverDirs: []string{"/"}},
		{Env: map[string]string{"A=B": "x"}},
		{Python: "python3"},
		{CgroupParent: "../escape"},
	}
	for _, c := range bad {
		if _, err := c.PrepareKernel(context.Background(), t.TempDir()); err == nil {
			t.Errorf("PrepareKernel(%+v) accepted an invalid config", c)
		}
	}
	if _, err := (Config{Devices: []string{"/dev/davinci_missing"}}).PrepareKernel(context.Background(), t.TempDir()); err == nil {
		t.Error("missing device accepted")
	}
}

func TestCheck(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	if err := Check(testConfig(t, nil)); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := Check(Config{Mode: ModeNone}); err != nil {
		t.Fatalf("Check(none): %v", err)
	}
	if err := Check(Config{Mode: "nope"}); err == nil {
		t.Fatal("Check accepted a bad mode")
	}
}

// TestStartOverhead measures what the sandbox adds to starting python.
func TestStartOverhead(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	k, _, _ := prepare(t, testConfig(t, nil))
	const n = 5
	timeIt := func(run func() error) time.Duration {
		var best time.Duration
		for i := 0; i < n; i++ {
			start := time.Now()
			if err := run(); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); best == 0 || d < best {
				best = d
			}
		}
		return best
	}
	plain := timeIt(func() error { return exec.Command(hostPython, "-c", "pass").Run() })
	boxed := timeIt(func() error { return k.Command(context.Background(), hostPython, "-c", "pass").Run() })
	t.Logf("python -c pass: plain %s, sandboxed %s, overhead %s (best of %d)", plain, boxed, boxed-plain, n)
	if boxed-plain > 2*time.Second {
		t.Errorf("sandbox start overhead %s is too large", boxed-plain)
	}
}

// TestImportTorch: torch must import inside the sandbox under the default
// memory limit.
func TestImportTorch(t *testing.T) {
	requireSandbox(t)
	if err := exec.Command(hostPython, "-c", "import torch").Run(); err != nil {
		t.Skip("torch not installed for " + hostPython)
	}
	t.Parallel()
	k, _, _ := prepare(t, testConfig(t, nil))
	start := time.Now()
	out := mustPy(t, k, `
import time; t0 = time.time()
import torch
x = torch.randn(256, 256); y = (x @ x).sum().item()
print("TORCH", torch.__version__, "threads", torch.get_num_threads(), "import_s %.2f" % (time.time() - t0))
`)
	st := k.Stats()
	t.Logf("%s; whole run %s; peak memory %s (limit %s)", out, time.Since(start), FormatSize(st.MemoryPeak), FormatSize(st.MemoryLimit))
	if !strings.HasPrefix(out, "TORCH") {
		t.Fatalf("unexpected output %q", out)
	}
	if st.MemoryLimitHit {
		t.Errorf("import torch hit the memory limit: %+v", st)
	}
}

// TestNotebookMemoryLimit shows the executor flow when a cell blows the
// memory limit: nbconvert reports a dead kernel, Stats says why.
func TestNotebookMemoryLimit(t *testing.T) {
	requireSandbox(t)
	if _, err := os.Stat(hostJupyter); err != nil {
		t.Skipf("%s not installed", hostJupyter)
	}
	t.Parallel()
	k, jobDir, _ := prepare(t, testConfig(t, func(c *Config) { c.MemoryLimit = 512 << 20 }))
	if !strings.HasPrefix(k.Limits.Memory, "cgroup") {
		t.Skip("no memory cgroup here")
	}
	nbPath := filepath.Join(jobDir, "submission.ipynb")
	nb := notebookJSON(t, "print('first')", "b = []\nwhile True:\n    b.append(bytearray(32 << 20))", "print('never')")
	if err := os.WriteFile(nbPath, nb, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"nbconvert", "--to", "notebook", "--execute", "--allow-errors",
		"--output", filepath.Join(jobDir, "out.ipynb")}, k.Args...)
	cmd := exec.Command(hostJupyter, append(args, nbPath)...)
	cmd.Dir = jobDir
	cmd.Env = append(os.Environ(), k.Env...)
	out, err := cmd.CombinedOutput()
	st := k.Stats()
	t.Logf("nbconvert err=%v stats=%+v violations=%q", err, st, st.Violations())
	if err == nil {
		t.Fatalf("nbconvert succeeded despite the memory bomb:\n%s", out)
	}
	if !strings.Contains(string(out), "DeadKernelError") {
		t.Errorf("expected a DeadKernelError from nbconvert:\n%s", tail(string(out), 2000))
	}
	if !st.MemoryLimitHit {
		t.Errorf("memory limit hit not reported: %+v", st)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if n := processesWithArg(k.ipcDir); n != 0 {
		t.Errorf("%d job processes remain after Close", n)
	}
}

// TestModeNone: the development mode still runs a notebook.
func TestModeNone(t *testing.T) {
	if _, err := os.Stat(hostJupyter); err != nil {
		t.Skipf("%s not installed", hostJupyter)
	}
	t.Parallel()
	k, jobDir, _ := prepare(t, testConfig(t, func(c *Config) { c.Mode = ModeNone }))
	nbPath := filepath.Join(jobDir, "submission.ipynb")
	if err := os.WriteFile(nbPath, notebookJSON(t, "import os\nprint('CWD', os.getcwd())"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(jobDir, "out.ipynb")
	args := append([]string{"nbconvert", "--to", "notebook", "--execute", "--output", out}, k.Args...)
	cmd := exec.Command(hostJupyter, append(args, nbPath)...)
	cmd.Env = append(os.Environ(), k.Env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nbconvert: %v\n%s", err, b)
	}
	if got := cellTexts(t, out); len(got) != 1 || !strings.Contains(got[0], "CWD "+k.WorkDir) {
		t.Errorf("cells %q", got)
	}
}
