package sandbox

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npugrade/npugrade/internal/forkserver"
)

// The fork path. Starting a kernel in a grading environment costs seconds
// of CPU (Python importing torch, Dynamo, AOTAutograd, Inductor); a burst
// of jobs on a small machine pays that once per job. A Zygote is one
// long-lived Python process per environment that has imported all of it
// once (zygote.py); each kernel is forked from it into the job's sandbox,
// already built by the same wrapper and bwrap as on the exec path, for a
// few tens of milliseconds. See zygote.py for the per-kernel steps,
// doc.go for what it changes in the threat model and internal/forkserver
// for the zygote's lifecycle (start, readiness, restart, stop), which the
// driver zygote shares.

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

	srv      forkserver.Server
	fellBack sync.Once
	forks    atomic.Int64
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

// socket returns a ready zygote for cfg, starting it (and waiting for its
// imports) when none runs, the last one died or cfg changed.
func (z *Zygote) socket(ctx context.Context, cfg Config) (*forkserver.Proc, error) {
	return z.srv.Get(ctx, zygoteKey(cfg, z.Preload), func() forkserver.Spec { return z.spec(cfg) })
}

// spec starts the zygote: bwrap as root without a user namespace (so
// that the zygote stays in the host's user and PID namespaces, where it
// may enter the jobs' sandboxes), the environment's system as its root,
// only CAP_SETUID and CAP_SETGID, which zygote.py uses at once to become
// the kernel uid with no capability left. Its directory is not under
// cfg.BaseDir, which kernels of every configuration share. The zygote
// changes its uid, which clears the parent-death signal: it exits when
// its lifeline (fd 4) closes.
func (z *Zygote) spec(cfg Config) forkserver.Spec {
	var infoR *os.File
	return forkserver.Spec{
		Name:      "kernel zygote",
		DirPrefix: "npugrade-zygote-",
		Files: []forkserver.File{
			{Name: "zygote.py", Data: zygotePy, Mode: 0o644}, // read by the zygote's uid
			{Name: "zlaunch.py", Data: zlaunchPy},
		},
		Lifeline: true,
		Command: func(dir string) (*exec.Cmd, error) {
			bwrap, err := exec.LookPath("bwrap")
			if err != nil {
				return nil, err
			}
			r, w, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			infoR = r
			conf, _ := json.Marshal(map[string]any{"uid": cfg.UID, "gid": cfg.GID, "preload": z.Preload, "kernel_argv": kernelArgv})
			args := append(zygoteBwrapArgs(cfg), "--ro-bind", filepath.Join(dir, "zygote.py"), "/run/npugrade-zygote/zygote.py",
				"--remount-ro", "/", "--chdir", "/", "--info-fd", "5", "--", cfg.Python, "/run/npugrade-zygote/zygote.py", string(conf))
			cmd := exec.Command(bwrap, args...)
			cmd.Env = []string{}
			cmd.Dir = "/"
			cmd.ExtraFiles = []*os.File{w} // fd 5 (after the socket and the lifeline)
			return cmd, nil
		},
		// The zygote's pid is bwrap's child's, which bwrap writes to fd 5.
		Started: func(startErr error) (int, error) {
			defer infoR.Close()
			if startErr != nil {
				return 0, startErr
			}
			var info struct {
				Pid int `json:"child-pid"`
			}
			if err := json.NewDecoder(infoR).Decode(&info); err != nil {
				return 0, fmt.Errorf("bwrap info: %w", err)
			}
			return info.Pid, nil
		},
		Ready: func(line string) (any, error) {
			var preloaded []string
			rest, ok := strings.CutPrefix(line, "ready ")
			if !ok {
				return nil, errors.New("not ready")
			}
			err := json.Unmarshal([]byte(rest), &preloaded)
			return preloaded, err
		},
		ReadyTimeout: zygoteReadyTimeout,
		LogStderr:    true,
		Log:          z.log(),
	}
}

// Kernels is how many kernels were set up on the fork path.
func (z *Zygote) Kernels() int64 { return z.forks.Load() }

// Close stops the zygote; kernels forked from it are unaffected.
func (z *Zygote) Close() { z.srv.Close() }

// Memory is the zygote's resident memory in bytes (0 when none runs). Its
// pages are shared with every kernel forked from it: a kernel's own memory
// is what it changed since (its job cgroup's count).
func (z *Zygote) Memory() int64 {
	if z == nil {
		return 0
	}
	return z.srv.Memory()
}

// zygoteBwrapArgs: the environment's system as /, as the job sandboxes
// see it (same binds, devices and driver dirs, so that the same modules
// import), but in the host's user and PID namespaces.
func zygoteBwrapArgs(cfg Config) []string {
	a := []string{"--unshare-ipc", "--unshare-uts", "--unshare-net", "--die-with-parent", "--new-session",
		"--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--clearenv"}
	a = append(a, setenvArgs(cfg.kernelEnv())...)
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

// kernelArgv is every forked kernel's command line (ipykernel's); the
// zygote parses it once.
var kernelArgv = append([]string{"-f", sandboxConnFile}, kernelOptions...)

// kernelOptions go on every sandboxed kernel's command line. No history
// database: a job's kernel lives for one notebook, and IPython's SQLite
// history (a thread writing each cell) cost a few per cent of a job's
// CPU; In, Out and %history still work from memory.
var kernelOptions = []string{"--HistoryManager.enabled=False"}

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
// When ctx ends while the zygote starts, the kernel is not wanted: that
// is its error, not a reason to start it on the exec path.
func (k *Kernel) useFork(ctx context.Context) error {
	cfg := k.cfg
	err := cfg.forkSupported()
	if err == nil && k.cg == nil {
		err = errors.New("no job cgroup (the fork path needs one)")
	}
	if err != nil {
		cfg.Zygote.fallBack(err, true)
		return nil
	}
	p, err := cfg.Zygote.socket(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("wait for the kernel zygote: %w", ctx.Err())
		}
		cfg.Zygote.fallBack(err, false)
		return nil
	}
	req := forkRequest{Procs: k.cg.procsFiles(), Env: cfg.kernelEnv(), Cwd: SandboxHome, UID: k.Limits.UID, GID: k.Limits.GID,
		Argv:    kernelArgv,
		Rlimits: map[string]int64{"CORE": 0, "FSIZE": cfg.FileSizeLimit}}
	if cfg.CPUTimeLimit > 0 {
		req.Rlimits["CPU"] = int64((cfg.CPUTimeLimit + time.Second - 1) / time.Second)
	}
	b, _ := json.Marshal(req)
	path := filepath.Join(k.priv, "fork.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		cfg.Zygote.fallBack(err, false)
		return nil
	}
	cfg.Zygote.forks.Add(1)
	k.preloaded, _ = p.Value().([]string)
	k.fork = []string{cfg.Zygote.hostPython(), "-I", "-S", filepath.Join(p.Dir(), "zlaunch.py"), p.Socket(), path, strings.Join(req.Procs, ","), k.launch}
	return nil
}

// Forked tells whether the kernel starts on the fork path.
func (k *Kernel) Forked() bool { return k.fork != nil }

// Preloaded names the modules a kernel on the fork path has imported
// before it starts (nil on the exec path): the zygote's.
func (k *Kernel) Preloaded() []string { return k.preloaded }
