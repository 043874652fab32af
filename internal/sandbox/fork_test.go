package sandbox

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	testZygoteOnce sync.Once
	testZygote     *Zygote
)

// TestMain closes the shared zygote, which removes its directory (the
// process would die with the test binary, the directory would stay).
func TestMain(m *testing.M) {
	code := m.Run()
	if testZygote != nil {
		testZygote.Close()
	}
	os.Exit(code)
}

// forkMode runs kernels in the cpu grading environment on the fork path:
// forked from one zygote shared by the package's tests (it dies with the
// test binary).
func forkMode(t *testing.T) func(*Config) {
	t.Helper()
	env := envMode(t)
	if os.Geteuid() != 0 {
		t.Skip("the fork path needs root")
	}
	testZygoteOnce.Do(func() { testZygote = &Zygote{} })
	return func(c *Config) { env(c); c.Zygote = testZygote }
}

// TestForkMode runs the isolation tests in processes forked from the
// zygote into the sandbox (runPy's python -c takes the kernel's path), and
// checks what the fork path adds: no capability and no inherited fd left,
// and nothing of one job (processes, /tmp, work dir) reaching the next
// kernel forked from the same zygote.
func TestForkMode(t *testing.T) {
	mode := forkMode(t)
	t.Parallel()
	t.Run("no-network", func(t *testing.T) { t.Parallel(); testNoNetwork(t, mode) })
	t.Run("no-reading-outside", func(t *testing.T) { t.Parallel(); testCannotReadOutsideWorkDir(t, mode) })
	t.Run("writes-only-in-work-dir", func(t *testing.T) { t.Parallel(); testWritesOnlyInWorkDir(t, mode) })
	t.Run("memory-limit", func(t *testing.T) { t.Parallel(); testMemoryBomb(t, mode) })
	t.Run("pids-limit", func(t *testing.T) { t.Parallel(); testForkBomb(t, mode) })
	t.Run("kill-all-inside", func(t *testing.T) { t.Parallel(); testKillAllInside(t, mode) })
	t.Run("close-leaves-nothing", func(t *testing.T) { t.Parallel(); testCloseLeavesNothing(t, mode) })
	t.Run("no-privileges", func(t *testing.T) {
		t.Parallel()
		k, _, _ := prepare(t, testConfig(t, mode))
		if k.fork == nil {
			t.Fatal("the kernel is not on the fork path")
		}
		out := mustPy(t, k, `import os
st = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
for key in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "NSpid"):
    print(key, st.get(key, "").split())
print("fds", sorted(os.listdir("/proc/self/fd")))
print("sid", os.getsid(0) == os.getpid())
print("cwd", os.getcwd())
try:
    os.unshare(os.CLONE_NEWUSER); print("userns created")
except OSError as e:
    print("userns refused", e.errno)`)
		t.Logf("\n%s", out)
		uid := itoa(k.Limits.UID)
		for _, want := range []string{"Uid ['" + uid + "', '" + uid + "', '" + uid + "', '" + uid + "']", "Groups []",
			"CapInh ['0000000000000000']", "CapPrm ['0000000000000000']", "CapEff ['0000000000000000']",
			"CapBnd ['0000000000000000']", "CapAmb ['0000000000000000']", "NoNewPrivs ['1']",
			"fds ['0', '1', '2', '3']", "NSpid ['3']", "sid True", "cwd " + SandboxHome, "userns refused"} {
			if !strings.Contains(out, want) {
				t.Errorf("forked process: want %q", want)
			}
		}
	})
	t.Run("dies-with-its-driver", func(t *testing.T) {
		// The launcher's parent (the job's driver) dies: the launcher,
		// the sandbox and the forked kernel go with it, as an exec'd
		// kernel goes with its bwrap (--die-with-parent).
		t.Parallel()
		k, _, _ := prepare(t, testConfig(t, mode))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		inner := k.Command(ctx, hostPython, "-c", "import time; print('up', flush=True); time.sleep(600)")
		driver := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `"$@" & wait`, "sh"}, inner.Args...)...)
		out, err := driver.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := driver.Start(); err != nil {
			t.Fatal(err)
		}
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "up\n" {
			t.Fatalf("forked process did not start: %q", line)
		}
		if n := len(k.cg.pids()); n < 3 {
			t.Fatalf("%d processes in the job cgroup, want the sandbox and the kernel", n)
		}
		_ = driver.Process.Signal(syscall.SIGKILL)
		_ = driver.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for len(k.cg.pids()) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("processes %v outlived the driver", k.cg.pids())
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("tracebacks-prepared", func(t *testing.T) {
		// The zygote parsed the source under every cell's traceback
		// (zygote.py, prepare_tracebacks): a forked kernel's first
		// traceback does not parse it again.
		t.Parallel()
		k, _, _ := prepare(t, testConfig(t, mode))
		out := mustPy(t, k, `import stack_data
from IPython.core import interactiveshell
cache = stack_data.Source._class_local("__source_cache_with_lines", {})
print("parsed", sorted({f for f, _ in cache}))
print("same", stack_data.Source.for_filename(interactiveshell.__file__) in cache.values())`)
		if !strings.Contains(out, "interactiveshell.py") || !strings.Contains(out, "same True") {
			t.Errorf("the forked process parses IPython's interactiveshell.py again for its first traceback:\n%s", out)
		}
	})
	t.Run("ends-with-its-context", func(t *testing.T) {
		// A kernel whose context ends while the zygote is still starting
		// (a runner stopping right after its start) is not wanted: an
		// error, not a kernel prepared on the exec path instead.
		t.Parallel()
		cfg := testConfig(t, mode)
		z := &Zygote{} // not the shared one: it is still importing torch
		defer z.Close()
		cfg.Zygote = z
		jobDir, _ := newJob(t)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		k, err := cfg.PrepareKernel(ctx, jobDir)
		if err == nil {
			k.Close()
			t.Fatalf("a kernel was prepared after its context ended (forked: %v)", k.Forked())
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("PrepareKernel: %v, want the context's end", err)
		}
	})
	t.Run("nothing-carries-over", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(t, mode)
		k1, _, _ := prepare(t, cfg)
		mustPy(t, k1, `import os, subprocess
open("/tmp/left", "w").write("x"); open("/dev/shm/left", "w").write("x"); open("left", "w").write("x")
import sys; sys.modules["json"].LEFT = 1
subprocess.Popen(["sleep", "3600"], start_new_session=True)`)
		if err := k1.Close(); err != nil {
			t.Fatal(err)
		}
		k2, _, _ := prepare(t, cfg)
		out := mustPy(t, k2, `import os, json
for p in ("/tmp/left", "/dev/shm/left", "left"):
    print(p, os.path.exists(p))
print("module", hasattr(json, "LEFT"))
print("procs", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))`)
		t.Logf("\n%s", out)
		for _, want := range []string{"/tmp/left False", "/dev/shm/left False", "left False", "module False", "procs [1, 2, 3]"} {
			if !strings.Contains(out, want) {
				t.Errorf("second kernel: want %q", want)
			}
		}
	})
}
