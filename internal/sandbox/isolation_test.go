package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNoNetwork(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	testNoNetwork(t, nil)
}

func testNoNetwork(t *testing.T, mode func(*Config)) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b := make([]byte, 64)
		n, _ := c.Read(b)
		got <- string(b[:n])
		c.Close()
	}()
	k, _, _ := prepare(t, testConfig(t, mode))
	port := itoa(ln.Addr().(*net.TCPAddr).Port)
	out := mustPy(t, k, `
import socket
for host in ("127.0.0.1", "::1", "8.8.8.8"):
    try:
        s = socket.create_connection((host, `+port+`), timeout=2); s.sendall(b"LEAK"); print(host, "OPEN")
    except OSError as e:
        print(host, "BLOCKED", e.errno)
print("IFACES", sorted(n for _, n in socket.if_nameindex()))
`)
	t.Logf("sandbox says:\n%s", out)
	if strings.Contains(out, "OPEN") {
		t.Errorf("a connection succeeded:\n%s", out)
	}
	if !strings.Contains(out, "IFACES ['lo']") {
		t.Errorf("expected only a private loopback interface:\n%s", out)
	}
	select {
	case s := <-got:
		t.Errorf("host listener received %q", s)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestCannotReadOutsideWorkDir(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	testCannotReadOutsideWorkDir(t, nil)
}

func testCannotReadOutsideWorkDir(t *testing.T, mode func(*Config)) {
	k, jobDir, secrets := prepare(t, testConfig(t, mode))
	cwd, _ := os.Getwd()
	probe := append([]string{}, secrets...)
	probe = append(probe, jobDir, filepath.Dir(jobDir), "/root", "/work", cwd,
		filepath.Join(jobDir, privDirName), "/etc/shadow", "/proc/1/root/etc/shadow", "/sys/fs/cgroup", "/var", "/home")
	code := "import os\nfor p in " + pyList(probe) + ":\n" +
		"    try:\n        data = open(p).read() if os.path.isfile(p) else os.listdir(p)\n        print('READ', p, repr(data)[:80])\n" +
		"    except OSError as e:\n        print('DENIED', p, type(e).__name__)\n"
	out := mustPy(t, k, code)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "READ") {
			// Only /home (holding just the learner's home) may be listed.
			if strings.HasPrefix(line, "READ /home ['learner']") {
				continue
			}
			t.Errorf("readable from the sandbox: %s", line)
		}
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("a secret leaked:\n%s", out)
	}
}

func TestEnvironmentIsAllowListed(t *testing.T) {
	requireSandbox(t)
	t.Setenv("NPUGRADE_TOKEN", "host-secret-token") // not parallel: Setenv
	t.Setenv("AWS_SECRET_ACCESS_KEY", "host-aws")
	k, _, _ := prepare(t, testConfig(t, func(c *Config) { c.Env = map[string]string{"EXERCISE": "4.7"} }))
	out := mustPy(t, k, "import os\nfor k in sorted(os.environ): print(k + '=' + os.environ[k])")
	got := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	want := BaseEnv()
	want["EXERCISE"] = "4.7"
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env %s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && k != "PWD" && k != "SHLVL" && k != "_" && k != "LC_CTYPE" {
			t.Errorf("unexpected env var in sandbox: %s=%s", k, got[k])
		}
	}
	if strings.Contains(out, "host-secret") || strings.Contains(out, "NPUGRADE_") {
		t.Errorf("host secret visible:\n%s", out)
	}
}

func TestWritesOnlyInWorkDir(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	testWritesOnlyInWorkDir(t, nil)
}

func testWritesOnlyInWorkDir(t *testing.T, mode func(*Config)) {
	k, _, _ := prepare(t, testConfig(t, mode))
	out := mustPy(t, k, `
import os
for p in ["/home/learner/ok.txt", "/tmp/ok.txt", "/dev/shm/ok.txt", "/usr/evil", "/etc/evil", "/evil", "/run/evil", "/home/evil", "/proc/sys/kernel/hostname"]:
    try:
        with open(p, "w") as f: f.write("x")
        print("WROTE", p)
    except OSError as e:
        print("DENIED", p, type(e).__name__)
print("UID", os.getuid(), "EUID", os.geteuid())
print("CAPS", [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0])
`)
	t.Logf("\n%s", out)
	for _, want := range []string{"WROTE /home/learner/ok.txt", "WROTE /tmp/ok.txt", "WROTE /dev/shm/ok.txt", "CAPS 0000000000000000"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "WROTE") && !strings.Contains(l, "ok.txt") {
			t.Errorf("write outside the writable dirs: %s", l)
		}
		if os.Geteuid() == 0 && strings.HasPrefix(l, "UID 0") {
			t.Errorf("kernel runs as root: %s", l)
		}
	}
	// The learner's file is visible to the executor in WorkDir.
	if b, err := os.ReadFile(filepath.Join(k.WorkDir, "ok.txt")); err != nil || string(b) != "x" {
		t.Errorf("work dir file: %q, %v", b, err)
	}
}

func TestFileSizeAndDiskLimits(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	k, _, _ := prepare(t, testConfig(t, func(c *Config) {
		c.FileSizeLimit = 8 << 20
		c.DiskLimit = 20 << 20
	}))
	out := mustPy(t, k, `
import os, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
def fill(path, mb):
    try:
        with open(path, "wb") as f:
            for _ in range(mb): f.write(b"\0" * (1 << 20)); f.flush()
        return "OK"
    except OSError as e:
        return "ERR " + str(e.errno)
print("BIG", fill("big.bin", 16))
print("DISK", [fill("f%d.bin" % i, 7) for i in range(4)])
`)
	t.Logf("\n%s", out)
	if !strings.Contains(out, "BIG ERR 27") { // EFBIG
		t.Errorf("file size limit not enforced:\n%s", out)
	}
	if k.Limits.Disk == "tmpfs" && !strings.Contains(out, "ERR 28") { // ENOSPC
		t.Errorf("disk limit not enforced:\n%s", out)
	}
}

func TestMemoryBombIsKilledAndReported(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	testMemoryBomb(t, nil)
}

func testMemoryBomb(t *testing.T, mode func(*Config)) {
	k, _, _ := prepare(t, testConfig(t, func(c *Config) { apply(c, mode); c.MemoryLimit = 256 << 20 }))
	if !strings.HasPrefix(k.Limits.Memory, "cgroup") {
		t.Skipf("cgroups unusable here (%s): the OOM report needs them", k.Limits.Memory)
	}
	out, errb, err := runPy(t, k, 60*time.Second, `
b = []
while True:
    b.append(bytearray(16 << 20))
`)
	st := k.Stats()
	t.Logf("err=%v stats=%+v stderr=%q out=%q", err, st, errb, out)
	if err == nil {
		t.Fatal("memory bomb exited cleanly")
	}
	if !st.MemoryLimitHit || st.OOMKills == 0 {
		t.Errorf("memory limit hit not reported: %+v", st)
	}
	if st.MemoryPeak < 200<<20 || st.MemoryPeak > 300<<20 {
		t.Errorf("peak %d not near the 256MiB limit", st.MemoryPeak)
	}
	if v := st.Violations(); len(v) != 1 || v[0] != "exceeded the 256 MiB memory limit" {
		t.Errorf("Violations() = %q", v)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if st := k.Stats(); !st.MemoryLimitHit {
		t.Errorf("final stats lost the OOM: %+v", st)
	}
}

func TestForkBombIsContained(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	testForkBomb(t, nil)
}

func testForkBomb(t *testing.T, mode func(*Config)) {
	k, _, _ := prepare(t, testConfig(t, func(c *Config) { apply(c, mode); c.PidsLimit = 64 }))
	if k.Limits.Pids != "cgroup" {
		t.Skip("no pids cgroup here: fork bombs are not contained")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := k.Command(ctx, "/bin/sh", "-c", `bomb() { bomb | bomb & }; bomb; sleep 3; echo SURVIVED`)
	start := time.Now()
	out, _ := cmd.CombinedOutput()
	st := k.Stats()
	t.Logf("fork bomb ran %s; stats %+v; output tail %q", time.Since(start), st, tail(string(out), 200))
	if !st.PidsLimitHit {
		t.Errorf("pids limit hit not reported: %+v", st)
	}
	if st.PidsPeak > 64 {
		t.Errorf("pids peak %d above the limit", st.PidsPeak)
	}
	// The host can still fork.
	if err := hostCanFork(); err != nil {
		t.Errorf("host cannot fork: %v", err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if v := k.Stats().Violations(); len(v) == 0 || !strings.Contains(v[len(v)-1], "64 processes") {
		t.Errorf("Violations() = %q", v)
	}
}

func TestKillAllInsideDoesNotHurtHost(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	testKillAllInside(t, nil)
}

func testKillAllInside(t *testing.T, mode func(*Config)) {
	// A host process owned by the kernel uid, outside the sandbox: the
	// learner must not be able to signal it even though the uid matches.
	k, _, _ := prepare(t, testConfig(t, mode))
	victim := startVictim(t, k.Limits.UID, k.Limits.GID)
	out, _, _ := runPy(t, k, 30*time.Second, `
import os, signal
print("PPID", os.getppid(), flush=True)
for target in (os.getppid(), 1, -1):
    try:
        os.kill(target, signal.SIGKILL); print("KILLED", target, flush=True)
    except OSError as e:
        print("DENIED", target, e.errno, flush=True)
`)
	t.Logf("\n%s", out)
	if err := syscall.Kill(victim, 0); err != nil {
		t.Errorf("host process %d (same uid as the kernel) was killed: %v", victim, err)
	}
	if err := hostCanFork(); err != nil {
		t.Errorf("host hurt: %v", err)
	}
	// The test process itself is obviously alive; the runner is too.
	if err := syscall.Kill(os.Getpid(), 0); err != nil {
		t.Error(err)
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	testCloseLeavesNothing(t, nil)
}

func testCloseLeavesNothing(t *testing.T, mode func(*Config)) {
	cfg := testConfig(t, mode)
	k, jobDir, _ := prepare(t, cfg)
	// Daemonised processes that try to outlive the job: double fork,
	// setsid, ignore SIGTERM/SIGHUP.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := k.Command(ctx, hostPython, "-c", `
import os, signal, time
for i in range(3):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGHUP, signal.SIG_IGN)
            time.sleep(3600)
        os._exit(0)
print("spawned", flush=True)
time.sleep(3600)
`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, _ := stdout.Read(buf); !strings.Contains(string(buf[:n]), "spawned") {
		t.Fatalf("child did not start: %q", buf[:n])
	}
	var pids []int
	if k.cg != nil {
		pids = k.cg.pids()
		t.Logf("processes in the job cgroup before Close: %v", pids)
		if len(pids) < 4 {
			t.Errorf("expected the wrapper, bwrap and sleepers in the cgroup, got %v", pids)
		}
	}
	start := time.Now()
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %s", time.Since(start))
	_ = cmd.Wait()
	// A killed PID namespace's init has left the cgroup but sleeps in its
	// exit until every process of the namespace is reaped; on the fork path
	// the kernel's parent (the zygote's helper, outside the namespace) reaps
	// it, which under load can take longer than Close. So a process counts
	// as surviving only if it is still there a few seconds later.
	for _, p := range pids {
		var b []byte
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			b = nil
			if syscall.Kill(p, 0) == nil {
				b, _ = os.ReadFile("/proc/" + itoa(p) + "/stat")
			}
			if b == nil || strings.Contains(string(b), ") Z ") || time.Now().After(deadline) {
				break
			}
		}
		if b != nil && !strings.Contains(string(b), ") Z ") {
			t.Errorf("process %d survived Close: %s", p, b)
		}
	}
	if n := processesWithArg(k.ipcDir); n != 0 {
		t.Errorf("%d processes of the job remain", n)
	}
	if k.cg != nil {
		for _, f := range k.cg.procsFiles() {
			if _, err := os.Stat(filepath.Dir(f)); !os.IsNotExist(err) {
				t.Errorf("cgroup %s not removed (%v)", filepath.Dir(f), err)
			}
		}
	}
	for _, d := range []string{k.WorkDir, k.ipcDir, filepath.Join(jobDir, privDirName)} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s not removed (%v)", d, err)
		}
	}
	if err := k.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
