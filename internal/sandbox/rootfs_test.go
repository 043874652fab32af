package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/envs/envtest"
)

func apply(c *Config, mode func(*Config)) {
	if mode != nil {
		mode(c)
	}
}

func TestResolveIn(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"usr/bin", "usr/lib", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin/python3.13"), []byte("#!"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"usr/bin/python3": "python3.13",       // relative
		"bin":             "usr/bin",          // usrmerge
		"usr/bin/abs":     "/usr/bin/python3", // absolute: inside root, not the host
		"etc/escape":      "../../../../etc/passwd",
		"usr/bin/loop":    "loop",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	want := filepath.Join(root, "usr/bin/python3.13")
	for _, p := range []string{"/usr/bin/python3", "/bin/python3", "/bin/abs", "/usr/lib/../bin/python3"} {
		got, err := ResolveIn(root, p)
		if err != nil || got != want {
			t.Errorf("ResolveIn(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	// A link climbing out of the root stays in it ("/.." is "/").
	if got, err := ResolveIn(root, "/etc/escape"); err == nil && got != filepath.Join(root, "etc/passwd") {
		t.Errorf("escape resolved to %q", got)
	}
	if _, err := ResolveIn(root, "/usr/bin/loop"); err == nil {
		t.Error("a symlink loop resolved")
	}
	if err := checkRootFS(root, "/usr/bin/python3"); err != nil {
		t.Errorf("checkRootFS: %v", err)
	}
	if err := checkRootFS(root, "/usr/bin/python4"); err == nil {
		t.Error("checkRootFS accepted a missing interpreter")
	}
	if err := checkRootFS(filepath.Join(root, "etc"), "/usr/bin/python3"); err == nil || !strings.Contains(err.Error(), "no /usr") {
		t.Errorf("checkRootFS of a dir without /usr: %v", err)
	}
	// bwrap follows a bind source's symlinks on the host: an absolute one
	// in the environment's /etc must be resolved inside the environment.
	if err := os.MkdirAll(filepath.Join(root, "usr/share/zoneinfo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/share/zoneinfo/UTC"), []byte("TZif"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/share/zoneinfo/UTC", filepath.Join(root, "etc/localtime")); err != nil {
		t.Fatal(err)
	}
	args := systemBinds(Config{RootFS: root})
	found := false
	for i := 0; i+2 < len(args); i++ {
		if args[i+2] == "/etc/localtime" {
			found = true
			if args[i+1] != filepath.Join(root, "usr/share/zoneinfo/UTC") {
				t.Errorf("/etc/localtime bound from %s, not the environment's zone file", args[i+1])
			}
		}
		if args[i] == "--ro-bind" && !strings.HasPrefix(args[i+1], root) {
			t.Errorf("host path %s bound in environment mode", args[i+1])
		}
	}
	if !found {
		t.Errorf("/etc/localtime not bound: %q", args)
	}
	cfg := DefaultConfig()
	cfg.Mode, cfg.RootFS = ModeNone, root
	if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), "needs the bwrap sandbox") {
		t.Errorf("mode none with a root filesystem: %v", err)
	}
}

// envMode runs kernels in the cpu grading environment.
func envMode(t *testing.T) func(*Config) {
	t.Helper()
	requireSandbox(t)
	root := filepath.Join(envtest.RequireCPU(t), "rootfs")
	return func(c *Config) { c.RootFS = root }
}

// TestEnvMode runs the isolation tests with the kernel in the cpu
// environment, and checks that it sees the environment's system, not the
// host's.
func TestEnvMode(t *testing.T) {
	mode := envMode(t)
	t.Parallel()
	t.Run("no-network", func(t *testing.T) { t.Parallel(); testNoNetwork(t, mode) })
	t.Run("no-reading-outside", func(t *testing.T) { t.Parallel(); testCannotReadOutsideWorkDir(t, mode) })
	t.Run("writes-only-in-work-dir", func(t *testing.T) { t.Parallel(); testWritesOnlyInWorkDir(t, mode) })
	t.Run("memory-limit", func(t *testing.T) { t.Parallel(); testMemoryBomb(t, mode) })
	t.Run("pids-limit", func(t *testing.T) { t.Parallel(); testForkBomb(t, mode) })
	t.Run("system-is-the-environment", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t, mode)
		root := cfg.RootFS
		// Host files under the bound system paths that the environment
		// lacks must not show through.
		var hostOnly []string
		for _, p := range []string{"/usr/bin/bwrap", "/usr/bin/go", "/usr/local/go", "/usr/lib/python3.11", "/usr/bin/prlimit", "/etc/apt/sources.list.d"} {
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
				continue
			}
			hostOnly = append(hostOnly, p)
		}
		if len(hostOnly) == 0 {
			t.Fatal("found no host-only file to look for")
		}
		k, _, _ := prepare(t, cfg)
		if k.Limits.RootFS != root {
			t.Errorf("Limits.RootFS = %q, want %q", k.Limits.RootFS, root)
		}
		out := mustPy(t, k, "import os, sys\nprint('PY', sys.version.split()[0])\nprint('OS', open('/etc/os-release').read().splitlines()[0])\n"+
			"for p in "+pyList(hostOnly)+":\n    print('SEEN' if os.path.exists(p) else 'GONE', p)\n")
		t.Logf("\n%s", out)
		osRelease, _ := os.ReadFile(filepath.Join(root, "etc/os-release"))
		if first := strings.SplitN(string(osRelease), "\n", 2)[0]; !strings.Contains(out, "OS "+first) {
			t.Errorf("the kernel's /etc/os-release is not the environment's (%q)", first)
		}
		hostPy, _ := exec.Command(hostPython, "-c", "import sys; print(sys.version.split()[0])").Output()
		if strings.Contains(out, "PY "+strings.TrimSpace(string(hostPy))+"\n") {
			t.Errorf("the kernel runs the host's Python %s", hostPy)
		}
		if strings.Contains(out, "SEEN") {
			t.Errorf("host files visible in the environment:\n%s", out)
		}
	})
	t.Run("check", func(t *testing.T) {
		t.Parallel()
		if err := Check(testConfig(t, mode)); err != nil {
			t.Errorf("Check in env mode: %v", err)
		}
	})
}
