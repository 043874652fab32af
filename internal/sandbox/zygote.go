package sandbox

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The fork path. Starting a kernel in a grading environment costs seconds
// of CPU (Python importing torch, Dynamo, AOTAutograd, Inductor); a burst
// of jobs on a small machine pays that once per job. A Zygote is one
// long-lived Python process per environment that has imported all of it
// once (zygote.py); each kernel is forked from it into the job's sandbox,
// already built by the same wrapper and bwrap as on the exec path, for a
// few tens of milliseconds. See zygote.py for the per-kernel steps and
// doc.go for what it changes in the threat model.

//go:embed zygote.py
var zygotePy []byte

//go:embed zlaunch.py
var zlaunchPy []byte

// zygoteReadyTimeout bounds the zygote's start (its imports).
const zygoteReadyTimeout = 3 * time.Minute

// Zygote is the fork server of one environment's kernels. Put one in
// Config.Zygote to use the fork path; it starts on the first kernel that
// can use it and is restarted when it dies or the configuration changes.
// Close it when the runner stops (it also dies with the runner).
type Zygote struct {
	// Preload names modules the zygote imports before forking (modules
	// not installed are skipped), like the warm pool's preload.
	Preload []string
	// HostPython runs the launcher (default /usr/bin/python3).
	HostPython string
	Log        *slog.Logger

	mu       sync.Mutex
	key      string
	proc     *zygoteProc
	fellBack sync.Once
	closed   bool
	forks    atomic.Int64
}

type zygoteProc struct {
	dir    string // root-only: the socket, the scripts
	sock   string
	ln     *net.UnixListener
	cmd    *exec.Cmd
	pid    int // the zygote's Python (bwrap's child)
	ready  chan struct{}
	err    error // why it is not ready, once ready is closed
	exited chan struct{}
	// preloaded: the preload modules the zygote imported (once ready).
	preloaded []string
	// lifeline: the zygote exits when it closes (see zygote.py serve).
	lifeline *os.File
}

// forkSupported tells whether c can use the fork path: the runner is root
// (the zygote starts as root to drop to the kernel uid, the launcher joins
// the job's cgroup), bubblewrap isolation of a grading environment.
func (c Config) forkSupported() error {
	switch {
	case c.Zygote == nil:
		return errors.New("no zygote configured")
	case c.Mode != ModeBwrap:
		return errors.New("not the bwrap sandbox")
	case c.RootFS == "":
		return errors.New("no grading environment (the fork path serves environment kernels)")
	case os.Geteuid() != 0:
		return errors.New("the runner is not root")
	}
	return nil
}

// fallBack logs once why a kernel takes the exec path: a warning when
// the fork path should have worked, information when it is unsupported.
func (z *Zygote) fallBack(err error, unsupported bool) {
	z.fellBack.Do(func() {
		level := slog.LevelWarn
		if unsupported {
			level = slog.LevelInfo
		}
		z.log().Log(context.Background(), level, "sandbox: kernels start on the exec path, not forked from a zygote", "reason", err)
	})
}

func (z *Zygote) log() *slog.Logger {
	if z.Log != nil {
		return z.Log
	}
	return slog.Default()
}

func (z *Zygote) hostPython() string {
	if z.HostPython != "" {
		return z.HostPython
	}
	return DefaultPython
}

// zygoteKey is what a running zygote bakes in.
func zygoteKey(cfg Config, preload []string) string {
	b, _ := json.Marshal(struct {
		RootFS, Python       string
		UID, GID             int
		Env                  map[string]string
		Devices, Dirs, Extra []string
		Preload              []string
	}{cfg.RootFS, cfg.Python, cfg.UID, cfg.GID, cfg.kernelEnv(), cfg.Devices, cfg.DriverDirs, cfg.ExtraReadOnly, preload})
	return string(b)
}

// socket returns a ready zygote for cfg, starting it
// (and waiting for its imports) when needed.
func (z *Zygote) socket(ctx context.Context, cfg Config) (*zygoteProc, error) {
	z.mu.Lock()
	if z.closed {
		z.mu.Unlock()
		return nil, errors.New("zygote closed")
	}
	key := zygoteKey(cfg, z.Preload)
	p := z.proc
	if p != nil {
		select {
		case <-p.exited:
			p = nil
		default:
			if z.key != key {
				p.stop()
				p = nil
			}
		}
	}
	if p == nil {
		var err error
		if p, err = z.start(cfg); err != nil {
			z.mu.Unlock()
			return nil, err
		}
		z.proc, z.key = p, key
	}
	z.mu.Unlock()
	select {
	case <-p.ready:
		if p.err != nil {
			return nil, p.err
		}
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// start launches the zygote: bwrap as root without a user namespace (so
// that the zygote stays in the host's user and PID namespaces, where it
// may enter the jobs' sandboxes), the environment's system as its root,
// only CAP_SETUID and CAP_SETGID, which zygote.py uses at once to become
// the kernel uid with no capability left.
func (z *Zygote) start(cfg Config) (*zygoteProc, error) {
	// Root-only (0700): only root may connect to the socket. Not under
	// cfg.BaseDir, which kernels of every configuration share.
	dir, err := os.MkdirTemp("", "npugrade-zygote-")
	if err != nil {
		return nil, fmt.Errorf("zygote dir: %w", err)
	}
	p := &zygoteProc{dir: dir, sock: filepath.Join(dir, "s"), ready: make(chan struct{}), exited: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			p.stop()
		}
	}()
	for name, data := range map[string][]byte{"zygote.py": zygotePy, "zlaunch.py": zlaunchPy} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "zygote.py"), 0o644); err != nil { // read by the zygote's uid
		return nil, err
	}
	if p.ln, err = net.ListenUnix("unixpacket", &net.UnixAddr{Name: p.sock, Net: "unixpacket"}); err != nil {
		return nil, fmt.Errorf("zygote socket: %w", err)
	}
	lf, err := p.ln.File()
	if err != nil {
		return nil, fmt.Errorf("zygote socket: %w", err)
	}
	defer lf.Close()
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// The zygote exits when this pipe's write end (ours) closes: when
	// stop() closes it or this process dies.
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return nil, err
	}
	p.lifeline = lifeW
	defer lifeR.Close()
	defer infoR.Close()
	out, outW, err := os.Pipe()
	if err != nil {
		infoW.Close()
		return nil, err
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		infoW.Close()
		outW.Close()
		return nil, err
	}
	conf, _ := json.Marshal(map[string]any{"uid": cfg.UID, "gid": cfg.GID, "preload": z.Preload})
	args := append(zygoteBwrapArgs(cfg), "--ro-bind", filepath.Join(dir, "zygote.py"), "/run/npugrade-zygote/zygote.py",
		"--remount-ro", "/", "--chdir", "/", "--info-fd", "5", "--", cfg.Python, "/run/npugrade-zygote/zygote.py", string(conf))
	p.cmd = exec.Command(bwrap, args...)
	p.cmd.Env = []string{}
	p.cmd.Dir = "/"
	p.cmd.ExtraFiles = []*os.File{lf, lifeR, infoW} // fds 3, 4 and 5
	p.cmd.Stdout = outW
	p.cmd.Stderr = &logWriter{log: z.log()}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = p.cmd.Start()
	infoW.Close()
	outW.Close()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("start zygote: %w", err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	var info struct {
		Pid int `json:"child-pid"`
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil {
		out.Close()
		return nil, fmt.Errorf("zygote: bwrap info: %w", err)
	}
	p.pid = info.Pid
	go p.waitReady(out, z.log())
	ok = true
	return p, nil
}

// waitReady closes p.ready when the zygote has said "ready" (or failed).
func (p *zygoteProc) waitReady(out *os.File, log *slog.Logger) {
	defer out.Close()
	line := make(chan error, 1)
	go func() {
		s, err := bufio.NewReader(out).ReadString('\n')
		rest, ok := strings.CutPrefix(s, "ready ")
		if err == nil && (!ok || json.Unmarshal([]byte(rest), &p.preloaded) != nil) {
			err = fmt.Errorf("said %q", s)
		}
		line <- err
	}()
	t := time.NewTimer(zygoteReadyTimeout)
	defer t.Stop()
	select {
	case err := <-line:
		if err != nil {
			p.err = fmt.Errorf("zygote did not start: %w", err)
		}
	case <-t.C:
		p.err = errors.New("zygote did not start in time")
	case <-p.exited:
		p.err = fmt.Errorf("zygote exited at start: %v", p.cmd.ProcessState)
	}
	if p.err != nil {
		p.stop()
	} else {
		log.Info("sandbox: kernel zygote ready", "pid", p.pid, "memory_bytes", rss(p.pid))
	}
	close(p.ready)
}

func (p *zygoteProc) stop() {
	if p.lifeline != nil {
		p.lifeline.Close()
	}
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	if p.ln != nil {
		p.ln.Close()
	}
	_ = os.RemoveAll(p.dir)
}

// Kernels is how many kernels were set up on the fork path.
func (z *Zygote) Kernels() int64 { return z.forks.Load() }

// Close stops the zygote; kernels forked from it are unaffected.
func (z *Zygote) Close() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.closed = true
	if z.proc != nil {
		z.proc.stop()
		z.proc = nil
	}
}

// Memory is the zygote's resident memory in bytes (0 when none runs). Its
// pages are shared with every kernel forked from it: a kernel's own memory
// is what it changed since (its job cgroup's count).
func (z *Zygote) Memory() int64 {
	if z == nil {
		return 0
	}
	z.mu.Lock()
	p := z.proc
	z.mu.Unlock()
	if p == nil || p.pid == 0 {
		return 0
	}
	return rss(p.pid)
}

// zygoteBwrapArgs: the environment's system as /, as the job sandboxes
// see it (same binds, devices and driver dirs, so that the same modules
// import), but in the host's user and PID namespaces.
func zygoteBwrapArgs(cfg Config) []string {
	a := []string{"--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent", "--new-session",
		"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--clearenv"}
	env := cfg.kernelEnv()
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a = append(a, "--setenv", k, env[k])
	}
	// bwrap as root creates the parents of mount points 0700: the
	// zygote, once the kernel uid, must traverse /etc (/etc/alternatives).
	a = append(a, "--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/run")
	a = append(a, systemBinds(cfg)...)
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/dev/shm")
	for _, d := range cfg.Devices {
		a = append(a, "--dev-bind", d, d)
	}
	for _, d := range append(append([]string{}, cfg.DriverDirs...), cfg.ExtraReadOnly...) {
		a = append(a, "--ro-bind", d, d)
	}
	return a
}

// forkRequest is what the launcher sends the zygote for one kernel
// (zlaunch.py adds mode and argv; Procs also go on its command line).
type forkRequest struct {
	Procs   []string          `json:"procs"` // the job cgroup's cgroup.procs files
	Env     map[string]string `json:"env"`
	Rlimits map[string]int64  `json:"rlimits"`
	Cwd     string            `json:"cwd"`
	UID     int               `json:"uid"`
	GID     int               `json:"gid"`
	Argv    []string          `json:"argv"`
}

// useFork sets the kernel up for the fork path when cfg allows it: the
// kernelspec then runs the launcher, which asks the zygote. Otherwise (or
// when the zygote cannot start) it keeps the exec path and says why, once.
func (k *Kernel) useFork(ctx context.Context) {
	cfg := k.cfg
	err := cfg.forkSupported()
	if err == nil && k.cg == nil {
		err = errors.New("no job cgroup (the fork path needs one)")
	}
	if err != nil {
		cfg.Zygote.fallBack(err, true)
		return
	}
	p, err := cfg.Zygote.socket(ctx, cfg)
	if err != nil {
		cfg.Zygote.fallBack(err, false)
		return
	}
	req := forkRequest{Procs: k.cg.procsFiles(), Env: cfg.kernelEnv(), Cwd: SandboxHome, UID: k.Limits.UID, GID: k.Limits.GID,
		Argv:    []string{"-f", sandboxConnFile},
		Rlimits: map[string]int64{"CORE": 0, "FSIZE": cfg.FileSizeLimit}}
	if cfg.CPUTimeLimit > 0 {
		req.Rlimits["CPU"] = int64((cfg.CPUTimeLimit + time.Second - 1) / time.Second)
	}
	b, _ := json.Marshal(req)
	path := filepath.Join(k.priv, "fork.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		cfg.Zygote.fallBack(err, false)
		return
	}
	cfg.Zygote.forks.Add(1)
	k.preloaded = p.preloaded
	k.fork = []string{cfg.Zygote.hostPython(), "-I", "-S", filepath.Join(p.dir, "zlaunch.py"), p.sock, path, strings.Join(req.Procs, ","), k.launch}
}

// Forked tells whether the kernel starts on the fork path.
func (k *Kernel) Forked() bool { return k.fork != nil }

// Preloaded names the modules a kernel on the fork path has imported
// before it starts (nil on the exec path): the zygote's.
func (k *Kernel) Preloaded() []string { return k.preloaded }

// logWriter logs what the zygote writes to stderr, a line at a time.
type logWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := -1
		for j, c := range w.buf {
			if c == '\n' {
				i = j
				break
			}
		}
		if i < 0 {
			break
		}
		w.log.Warn("sandbox: zygote", "line", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 4096 {
		w.buf = w.buf[:0]
	}
	return len(b), nil
}

// rss is a process's resident memory in bytes (0 once it is gone).
func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		return 0
	}
	return res * int64(os.Getpagesize())
}
