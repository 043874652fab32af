package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const hostPython = "/usr/bin/python3"

// requireSandbox skips when bubblewrap is not installed (CI installs it);
// every other failure is a test failure.
func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap (bubblewrap) not installed: sandbox tests need it")
	}
	if _, err := os.Stat(hostPython); err != nil {
		t.Skipf("%s not installed: %v", hostPython, err)
	}
}

// testConfig is the default config with a per-test base dir (so tests can
// assert on leftovers) and an optional tweak.
func testConfig(t *testing.T, tweak func(*Config)) Config {
	t.Helper()
	cfg := DefaultConfig()
	// Short path: it prefixes the unix socket paths.
	base, err := os.MkdirTemp("", "npgt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	cfg.BaseDir = filepath.Join(base, "b")
	if tweak != nil {
		tweak(&cfg)
	}
	return cfg
}

// newJob makes a job dir holding a "notebook" and a fake answers dir, as
// the executor would, plus a fake other job dir next to it; returns the
// job dir and the paths of the secrets.
func newJob(t *testing.T) (jobDir string, secrets []string) {
	t.Helper()
	root := t.TempDir()
	jobDir = filepath.Join(root, "job1")
	other := filepath.Join(root, "job2")
	for _, d := range []string{jobDir, filepath.Join(jobDir, "answers"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(jobDir, "submission.ipynb"):        `{"secret": "NOTEBOOK-SECRET"}`,
		filepath.Join(jobDir, "answers", "answers.json"): `{"secret": "ANSWER-SECRET"}`,
		filepath.Join(other, "submission.ipynb"):         `{"secret": "OTHER-JOB-SECRET"}`,
	}
	for p, c := range files {
		// World-readable on purpose: the sandbox, not file modes, must hide them.
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, p)
	}
	return jobDir, secrets
}

func prepare(t *testing.T, cfg Config) (*Kernel, string, []string) {
	t.Helper()
	jobDir, secrets := newJob(t)
	k, err := cfg.PrepareKernel(context.Background(), jobDir)
	if err != nil {
		t.Fatalf("PrepareKernel: %v", err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return k, jobDir, secrets
}

// runPy runs a python snippet inside the sandbox and returns stdout,
// stderr and the exit error.
func runPy(t *testing.T, k *Kernel, timeout time.Duration, code string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := k.Command(ctx, hostPython, "-c", code)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func mustPy(t *testing.T, k *Kernel, code string) string {
	t.Helper()
	out, errb, err := runPy(t, k, 60*time.Second, code)
	if err != nil {
		t.Fatalf("sandboxed python failed: %v\nstdout: %s\nstderr: %s", err, out, errb)
	}
	return strings.TrimSpace(out)
}

func itoa(i int) string { return strconv.Itoa(i) }

// pyQuote renders s as a Python string literal (JSON strings are valid).
func pyQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func pyList(ss []string) string {
	b, _ := json.Marshal(ss)
	return string(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func hostCanFork() error {
	return exec.Command("/bin/true").Run()
}

// startVictim starts a host process (outside any sandbox) running as
// uid/gid and returns its pid; it is killed at test end.
func startVictim(t *testing.T, uid, gid int) int {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "300")
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// processesWithArg counts live (non-zombie) processes whose command line
// contains arg as a whole argument.
func processesWithArg(arg string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains("\x00"+string(cl), "\x00"+arg+"\x00") {
			continue
		}
		if st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); strings.Contains(string(st), ") Z ") {
			continue
		}
		n++
	}
	return n
}
