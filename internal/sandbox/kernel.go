package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// privDirName is the job's private area inside jobDir. It is 0700 root (the
// runner) and never bound into the sandbox as a whole.
const privDirName = ".sandbox"

// Kernel is a prepared per-job sandboxed kernelspec. The executor adds Env
// to the nbconvert environment, appends Args to the nbconvert command line,
// and calls Close when the job is done (always, also on error).
type Kernel struct {
	// Env holds KEY=VALUE entries to append to the nbconvert process
	// environment (after os.Environ(), so they win): JUPYTER_PATH (the
	// per-job kernelspec) and JUPYTER_RUNTIME_DIR (the connection files).
	Env []string
	// Args are extra nbconvert arguments: the kernel name, the IPC
	// transport and the IPC socket path prefix.
	Args []string
	// WorkDir is the host path of the only writable directory the kernel
	// sees; inside the sandbox it is SandboxHome (HOME and cwd). It is
	// empty at start. Copy the exercise's data files into it before running;
	// never put the notebook or answers there. It is deleted by Close.
	WorkDir string
	// KernelName is the kernelspec name (KernelName).
	KernelName string
	// Limits says which limits are actually enforced on this host.
	Limits Enforced

	cfg       Config
	id        string
	priv      string // jobDir/.sandbox
	pub       string // BaseDir/<id>: parent of WorkDir and ipcDir
	ipcDir    string // socket dir, bound at the same path inside
	launch    string // wrapper script path
	pidFile   string
	cg        *jobCgroup
	mounted   bool     // WorkDir is a tmpfs we mounted
	fork      []string // the launcher's argv on the fork path (zygote.go); nil: exec path
	preloaded []string // on the fork path: the modules the zygote imported
	closeOnce sync.Once
	closeErr  error
	mu        sync.Mutex
	final     *Stats
}

// Enforced describes the mechanisms in force for one kernel.
type Enforced struct {
	Isolated bool   // bubblewrap namespaces + read-only system (false in ModeNone)
	Memory   string // "cgroup-v1", "cgroup-v2", "rlimit-as" (per process) or "none"
	Pids     string // "cgroup" or "none"
	Disk     string // "tmpfs" (work dir size-limited) or "none" (only the per-file limit)
	FileSize bool   // RLIMIT_FSIZE
	CPUTime  bool   // RLIMIT_CPU
	Network  bool   // true if the kernel has network access
	UID, GID int    // identity of the kernel processes on the host
	// RootFS is the environment's root filesystem the kernel sees as /
	// ("" : the host's system, read-only).
	RootFS string
}

// Stats reports resource usage and which limits were hit.
type Stats struct {
	Source          string // "cgroup-v1", "cgroup-v2", or "" when no cgroup was used
	MemoryLimit     int64
	MemoryPeak      int64 // bytes, 0 if unknown
	MemoryFailCount int64 // times usage hit the limit (reclaim may have saved it)
	OOMKills        int64 // processes killed by the OOM killer for this job
	MemoryLimitHit  bool  // a process was OOM-killed at the job's memory limit
	PidsLimit       int
	PidsPeak        int64
	PidsLimitEvents int64 // fork/clone calls refused by the pids limit
	PidsLimitHit    bool
}

// Violations renders the limits that were hit, for the learner's report,
// e.g. "exceeded the 2 GiB memory limit".
func (s Stats) Violations() []string { return s.hits().Violations() }

// testDisableCgroups forces the RLIMIT fallback (tests only).
var testDisableCgroups bool

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// PrepareKernel sets up the sandbox for one job rooted at jobDir (an
// existing directory owned by the executor; the notebook may live there,
// it is never visible to the kernel): a private area jobDir/.sandbox with
// the kernelspec, the runtime dir, the wrapper script and the work dir; the
// job's cgroup; and the IPC socket dir. Nothing runs until nbconvert starts
// the kernel. Call Close to undo all of it.
func (c Config) PrepareKernel(ctx context.Context, jobDir string) (_ *Kernel, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cfg := c.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("sandbox config: %w", err)
	}
	if jobDir, err = filepath.Abs(jobDir); err != nil {
		return nil, fmt.Errorf("job dir: %w", err)
	}
	if fi, err := os.Stat(jobDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("job dir %s: not a directory (%v)", jobDir, err)
	}
	if err := cfg.checkBindSources(); err != nil {
		return nil, err
	}
	tools, err := findTools(cfg)
	if err != nil {
		return nil, err
	}
	k := &Kernel{cfg: cfg, KernelName: KernelName}
	base := strings.Trim(unsafeName.ReplaceAllString(filepath.Base(jobDir), "_"), "._")
	if len(base) > 24 {
		base = base[:24]
	}
	k.id = "job-" + base + "-" + randHex(4)
	k.priv = filepath.Join(jobDir, privDirName)
	if err := os.Mkdir(k.priv, 0o700); err != nil {
		return nil, fmt.Errorf("create private dir: %w", err)
	}
	defer func() {
		if err != nil {
			if cerr := k.Close(); cerr != nil {
				slog.Warn("sandbox: cleanup after failed prepare", "job", k.id, "err", cerr)
			}
		}
	}()
	root := os.Geteuid() == 0
	k.Limits = Enforced{Isolated: cfg.Mode == ModeBwrap, Memory: "none", Pids: "none", Disk: "none",
		Network: cfg.AllowNetwork || cfg.Mode == ModeNone, UID: os.Geteuid(), GID: os.Getegid(), RootFS: cfg.RootFS}
	if root && cfg.Mode == ModeBwrap {
		k.Limits.UID, k.Limits.GID = cfg.UID, cfg.GID
	}
	if err := k.makeDirs(); err != nil {
		return nil, err
	}
	if cfg.Mode == ModeBwrap {
		k.applyLimits(root)
	}
	if root {
		for _, d := range []string{k.WorkDir, k.ipcDir} {
			if err := os.Chown(d, k.Limits.UID, k.Limits.GID); err != nil {
				return nil, fmt.Errorf("chown %s: %w", d, err)
			}
		}
	}
	if err := k.writeLauncher(ctx, tools); err != nil {
		return nil, err
	}
	slog.Debug("sandbox: kernel prepared", "job", k.id, "limits", k.Limits)
	return k, nil
}

// checkBindSources checks that every host path bound into the sandbox
// exists and that the unprivileged bwrap, which resolves the sources
// itself, can reach it.
func (c Config) checkBindSources() error {
	extra := append(append([]string{}, c.DriverDirs...), c.ExtraReadOnly...)
	for _, d := range c.Devices {
		if _, err := os.Stat(d); err != nil {
			return fmt.Errorf("device %s: %w", d, err)
		}
	}
	for _, d := range extra {
		if _, err := os.Stat(d); err != nil {
			return fmt.Errorf("read-only path %s: %w", d, err)
		}
	}
	if c.RootFS != "" {
		if err := checkRootFS(c.RootFS, c.Python); err != nil {
			return err
		}
	}
	if c.Mode != ModeBwrap || os.Geteuid() != 0 {
		return nil
	}
	for _, d := range append(append([]string{}, c.Devices...), extra...) {
		if err := checkSearchable(filepath.Dir(d)); err != nil {
			return fmt.Errorf("bind path: %w", err)
		}
	}
	if c.RootFS != "" {
		if err := checkSearchable(c.RootFS); err != nil {
			return fmt.Errorf("root filesystem: %w", err)
		}
	}
	return nil
}

// makeDirs creates the private area (kernelspec, runtime dir, generated
// /etc files) and the per-job directories under BaseDir.
func (k *Kernel) makeDirs() error {
	for _, d := range []string{k.specDir(), k.runtimeDir(), k.etcDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	// Work and IPC dirs live under BaseDir/<id> (0711), which the
	// unprivileged bwrap can traverse. The kernel creates the IPC sockets
	// (it binds, the client connects), so the socket dir must be writable by
	// it; it holds nothing else. It is bound at the same path inside the
	// sandbox because the connection file carries the absolute socket path
	// prefix.
	if err := ensureBaseDir(k.cfg.BaseDir); err != nil {
		return err
	}
	k.pub = filepath.Join(k.cfg.BaseDir, k.id)
	if err := os.Mkdir(k.pub, 0o711); err != nil {
		return fmt.Errorf("create job dir under base dir: %w", err)
	}
	if err := os.Chmod(k.pub, 0o711); err != nil { // umask
		return fmt.Errorf("chmod %s: %w", k.pub, err)
	}
	if err := writeOwner(k.pub); err != nil {
		return fmt.Errorf("record sandbox owner: %w", err)
	}
	if err := os.WriteFile(filepath.Join(k.pub, jobDirFile), []byte(filepath.Dir(k.priv)), 0o600); err != nil {
		return fmt.Errorf("record the sandbox's job dir: %w", err)
	}
	k.WorkDir = filepath.Join(k.pub, "work")
	k.ipcDir = filepath.Join(k.pub, "ipc")
	for _, d := range []string{k.WorkDir, k.ipcDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	return nil
}

func (k *Kernel) specDir() string    { return filepath.Join(k.priv, "jupyter", "kernels", KernelName) }
func (k *Kernel) runtimeDir() string { return filepath.Join(k.priv, "runtime") }
func (k *Kernel) etcDir() string     { return filepath.Join(k.priv, "etc") }

// applyLimits mounts the size-limited work dir (root only) and creates the
// job's cgroup, recording in k.Limits what is in force; what cannot be
// set up degrades with a warning (Check reports it at start).
func (k *Kernel) applyLimits(root bool) {
	cfg := k.cfg
	if root {
		opts := fmt.Sprintf("size=%d,mode=0700,uid=%d,gid=%d", cfg.DiskLimit, k.Limits.UID, k.Limits.GID)
		if err := syscall.Mount("tmpfs", k.WorkDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			slog.Warn("sandbox: cannot mount tmpfs work dir, disk limit not enforced", "job", k.id, "err", err)
		} else {
			k.mounted = true
			k.Limits.Disk = "tmpfs"
		}
	}
	cg, err := newJobCgroup(cfg.CgroupParent, k.id, cfg.MemoryLimit, cfg.PidsLimit)
	if err == nil && testDisableCgroups {
		cg.remove()
		err = errors.New("cgroups disabled by test")
	}
	if err != nil {
		slog.Warn("sandbox: cgroups unusable, falling back to RLIMIT_AS (per process, no pids limit)", "job", k.id, "err", err)
		k.Limits.Memory = "rlimit-as"
	} else {
		k.cg = cg
		k.Limits.Memory = fmt.Sprintf("cgroup-v%d", cg.version)
		if cg.pidsDir != "" {
			k.Limits.Pids = "cgroup"
		}
	}
	k.Limits.FileSize = true
	k.Limits.CPUTime = cfg.CPUTimeLimit > 0
}

// writeLauncher writes the generated /etc files, the wrapper script and
// the kernelspec, and fills in Env and Args for nbconvert.
func (k *Kernel) writeLauncher(ctx context.Context, tools toolPaths) error {
	if err := writeEtc(k.etcDir(), k.Limits.UID, k.Limits.GID); err != nil {
		return err
	}
	k.pidFile = filepath.Join(k.priv, "launch.pids")
	k.launch = filepath.Join(k.priv, "launch.sh")
	if err := os.WriteFile(k.launch, []byte(k.script(tools, k.etcDir())), 0o700); err != nil {
		return fmt.Errorf("write wrapper script: %w", err)
	}
	argv := []string{"/bin/sh", k.launch, "{connection_file}"}
	if k.cfg.Zygote != nil && k.cfg.Mode == ModeBwrap {
		if err := k.useFork(ctx); err != nil {
			return err
		}
		if k.fork != nil {
			argv = append(append([]string{}, k.fork...), "{connection_file}")
		}
	}
	spec := map[string]any{
		"argv":         argv,
		"display_name": "Python 3 (npugrade sandbox)",
		"language":     "python",
		// "message": nbclient's interrupt is an interrupt_request on the
		// control channel and the kernel signals itself. The default
		// "signal" mode would killpg the wrapper's group, and the outer
		// bwrap dies of SIGINT, taking the kernel with it (--die-with-parent).
		"interrupt_mode": "message",
		"metadata":       map[string]any{"debugger": false},
	}
	b, _ := json.MarshalIndent(spec, "", "  ")
	if err := os.WriteFile(filepath.Join(k.specDir(), "kernel.json"), b, 0o600); err != nil {
		return fmt.Errorf("write kernelspec: %w", err)
	}
	k.Env = []string{
		"JUPYTER_PATH=" + filepath.Join(k.priv, "jupyter"),
		"JUPYTER_RUNTIME_DIR=" + k.runtimeDir(),
	}
	k.Args = []string{
		"--ExecutePreprocessor.kernel_name=" + KernelName,
		"--KernelManager.transport=ipc",
		// Sockets go to the kernel-writable ipc dir rather than next to the
		// connection file in the root-only runtime dir.
		"--KernelManager.ip=" + filepath.Join(k.ipcDir, "k"),
	}
	return nil
}

type toolPaths struct{ sh, bwrap, prlimit, setpriv, env string }

func findTools(cfg Config) (toolPaths, error) {
	var t toolPaths
	var errs []error
	look := func(name string, dst *string) {
		p, err := exec.LookPath(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s not found: %w", name, err))
			return
		}
		if p, err = filepath.Abs(p); err == nil {
			*dst = p
		}
	}
	look("sh", &t.sh)
	if cfg.Mode == ModeBwrap {
		look("bwrap", &t.bwrap)
		look("prlimit", &t.prlimit)
		if os.Geteuid() == 0 {
			look("setpriv", &t.setpriv)
		}
	} else {
		look("env", &t.env)
	}
	if cfg.RootFS == "" {
		if _, err := os.Stat(cfg.Python); err != nil {
			errs = append(errs, fmt.Errorf("python: %w", err))
		}
	}
	if len(errs) > 0 {
		return t, fmt.Errorf("sandbox tools: %w", errors.Join(errs...))
	}
	return t, nil
}

func writeEtc(dir string, uid, gid int) error {
	files := map[string]string{
		"passwd": fmt.Sprintf("root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n%s:x:%d:%d:learner:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			sandboxUser, uid, gid, SandboxHome),
		"group":    fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", sandboxUser, gid),
		"hostname": sandboxHostname + "\n",
		"hosts":    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t" + sandboxHostname + "\n",
	}
	if uid == 65534 { // avoid a duplicate uid line
		files["passwd"] = fmt.Sprintf("root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n%s:x:%d:%d:learner:%s:/bin/sh\n", sandboxUser, uid, gid, SandboxHome)
	}
	if gid == 65534 {
		files["group"] = fmt.Sprintf("root:x:0:\n%s:x:%d:\n", sandboxUser, gid)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return fmt.Errorf("write sandbox %s: %w", name, err)
		}
	}
	return nil
}

// etcReadOnly is the subset of the host /etc the kernel sees: what the
// dynamic linker, Python, locale/tz, matplotlib and fonts need. passwd,
// group, hostname and hosts are generated instead.
var etcReadOnly = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/localtime", "/etc/timezone", "/etc/mime.types", "/etc/nsswitch.conf",
	"/etc/matplotlibrc", "/etc/fonts", "/etc/ssl", "/etc/ca-certificates",
	"/etc/os-release", "/etc/debian_version",
}

func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

// setenvArgs are bwrap's --setenv options for env, in a stable order.
func setenvArgs(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	a := make([]string, 0, 3*len(keys))
	for _, k := range keys {
		a = append(a, "--setenv", k, env[k])
	}
	return a
}

// bwrapArgs are the fixed sandbox arguments. The file descriptors are
// opened by the wrapper (as the runner) so that the unprivileged bwrap
// never needs to traverse the runner's private directories: 4 work dir,
// 5 ipc dir, 6-9 generated /etc files; bwrap closes them once used.
func (k *Kernel) bwrapArgs() []string {
	cfg := k.cfg
	a := []string{
		"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
	}
	if !cfg.AllowNetwork {
		a = append(a, "--unshare-net")
	}
	a = append(a,
		// No nested user namespaces: they are the usual kernel attack surface.
		"--disable-userns",
		"--die-with-parent",
		// setsid(): no controlling terminal, so no TIOCSTI injection. Fine
		// for interrupts because the kernelspec uses interrupt_mode=message.
		"--new-session",
		"--cap-drop", "ALL",
		"--hostname", sandboxHostname,
		"--clearenv",
	)
	a = append(a, setenvArgs(cfg.kernelEnv())...)
	a = append(a, systemBinds(cfg)...)
	a = append(a,
		"--proc", "/proc",
		"--dev", "/dev",
		"--size", strconv.FormatInt(cfg.DiskLimit, 10), "--tmpfs", "/dev/shm",
		"--size", strconv.FormatInt(cfg.DiskLimit, 10), "--tmpfs", "/tmp",
		"--perms", "0444", "--ro-bind-data", "6", "/etc/passwd",
		"--perms", "0444", "--ro-bind-data", "7", "/etc/group",
		"--perms", "0444", "--ro-bind-data", "8", "/etc/hostname",
		"--perms", "0444", "--ro-bind-data", "9", "/etc/hosts",
		"--bind-fd", "4", SandboxHome,
		"--bind-fd", "5", k.ipcDir,
	)
	for _, d := range cfg.Devices {
		a = append(a, "--dev-bind", d, d)
	}
	for _, d := range append(append([]string{}, cfg.DriverDirs...), cfg.ExtraReadOnly...) {
		a = append(a, "--ro-bind", d, d)
	}
	return a
}

// script renders the wrapper that jupyter_client runs as
// `/bin/sh launch.sh CONNECTION_FILE` (and Command runs as
// `/bin/sh launch.sh - PROGRAM ARGS...`). It runs as the runner: it records
// its pid, joins the job cgroup (so every descendant is accounted and
// killable), sets rlimits, drops to the kernel uid and execs bwrap.
func (k *Kernel) script(t toolPaths, etcDir string) string {
	cfg := k.cfg
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("#!/bin/sh")
	w("# Generated by npugrade internal/sandbox for %s. Do not edit.", k.id)
	w("set -eu")
	w("umask 077")
	w(`conn="${1:--}"`)
	w(`[ $# -gt 0 ] && shift`)
	w("echo $$ >> %s", quote(k.pidFile))
	if cfg.Mode == ModeNone {
		env := cfg.kernelEnv()
		env["HOME"] = k.WorkDir
		env["NPUGRADE_SANDBOX_JOB"] = k.id // lets Close recognise its processes
		keys := make([]string, 0, len(env))
		for key := range env {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		kv := make([]string, 0, len(keys))
		for _, key := range keys {
			kv = append(kv, key+"="+env[key])
		}
		w("cd %s", quote(k.WorkDir))
		w(`if [ "$conn" = "-" ]; then`)
		w(`  exec %s -i %s "$@"`, quote(t.env), quoteAll(kv))
		w("fi")
		w(`exec %s -i %s %s -m ipykernel_launcher -f "$conn" %s`, quote(t.env), quoteAll(kv), quote(cfg.Python), quoteAll(kernelOptions))
		return b.String()
	}
	if k.cg != nil {
		for _, f := range k.cg.procsFiles() {
			w("echo $$ > %s", quote(f))
		}
	}
	w("exec 4<%s 5<%s 6<%s 7<%s 8<%s 9<%s", quote(k.WorkDir), quote(k.ipcDir),
		quote(filepath.Join(etcDir, "passwd")), quote(filepath.Join(etcDir, "group")),
		quote(filepath.Join(etcDir, "hostname")), quote(filepath.Join(etcDir, "hosts")))
	tail := quoteAll([]string{"--remount-ro", "/", "--chdir", SandboxHome, "--"})
	// The fork path (zygote.go): "@ CONNECTION_FILE|-" runs a placeholder
	// that says "ready" once the sandbox is complete and lives until its
	// stdin (a pipe the zygote's helper holds) closes; zlaunch.py reads the
	// sandbox's pid 1 from fd 10 and the zygote forks the kernel into its
	// namespaces.
	placeholder := quoteAll([]string{"--info-fd", "10", "--remount-ro", "/", "--chdir", SandboxHome, "--", "/bin/sh", "-c", "echo ready; read -r _; exit 0"})
	w(`if [ "$conn" = "@" ]; then`)
	w(`  if [ "${1:--}" = "-" ]; then`)
	w(`    set -- %s`, placeholder)
	w("  else")
	w(`    exec 3<"$1"`)
	w(`    set -- --size 1048576 --tmpfs %s --perms 0600 --file 3 %s %s`,
		quote(filepath.Dir(sandboxConnFile)), quote(sandboxConnFile), placeholder)
	w("  fi")
	w(`elif [ "$conn" = "-" ]; then`)
	w(`  [ $# -gt 0 ] || { echo "usage: $0 CONNECTION_FILE | - PROGRAM [ARGS...]" >&2; exit 2; }`)
	w(`  set -- %s "$@"`, tail)
	w("else")
	w(`  exec 3<"$conn"`)
	// ipykernel rewrites the connection file at startup (remove + create),
	// so it is a plain file in a small private tmpfs, not a read-only bind.
	w(`  set -- --size 1048576 --tmpfs %s --perms 0600 --file 3 %s %s %s -m ipykernel_launcher -f %s %s`,
		quote(filepath.Dir(sandboxConnFile)),
		quote(sandboxConnFile), tail, quote(cfg.Python), quote(sandboxConnFile), quoteAll(kernelOptions))
	w("fi")
	lim := []string{t.prlimit, "--core=0", "--fsize=" + strconv.FormatInt(cfg.FileSizeLimit, 10)}
	if cfg.CPUTimeLimit > 0 {
		secs := int64((cfg.CPUTimeLimit + time.Second - 1) / time.Second)
		lim = append(lim, "--cpu="+strconv.FormatInt(secs, 10))
	}
	if k.cg == nil {
		lim = append(lim, "--as="+strconv.FormatInt(cfg.MemoryLimit, 10))
	}
	lim = append(lim, "--")
	if t.setpriv != "" {
		lim = append(lim, t.setpriv, "--reuid="+strconv.Itoa(k.Limits.UID), "--regid="+strconv.Itoa(k.Limits.GID), "--clear-groups", "--")
	}
	lim = append(lim, t.bwrap)
	w("exec %s \\\n  %s \\\n  \"$@\"", quoteAll(lim), quoteAll(k.bwrapArgs()))
	return b.String()
}

// Command returns a command that runs name with args inside this job's
// sandbox (same cgroup, limits, work dir and environment as the kernel).
// The tests use it; the executor may use it for non-kernel steps.
//
// On the fork path, `Python -c CODE` runs in a process forked from the
// zygote, as the kernel is (the isolation tests use it to probe the fork
// path); other programs are exec'd in the sandbox as on the exec path.
func (k *Kernel) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{k.launch, "-", name}, args...)...)
	if k.fork != nil && name == k.cfg.Python && len(args) >= 2 && args[0] == "-c" {
		cmd = exec.CommandContext(ctx, k.fork[0], append(append(append([]string{}, k.fork[1:]...), "-", "-c"), args[1:]...)...)
	}
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Stats reports the job's resource usage so far (after Close: the final
// values, read just before the cgroup was removed).
func (k *Kernel) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.final != nil {
		return *k.final
	}
	return k.statsLocked()
}

func (k *Kernel) statsLocked() Stats {
	s := Stats{MemoryLimit: k.cfg.MemoryLimit, PidsLimit: k.cfg.PidsLimit}
	if k.cg != nil {
		k.cg.stats(&s)
	}
	s.MemoryLimitHit = s.OOMKills > 0
	s.PidsLimitHit = s.PidsLimitEvents > 0
	return s
}

// Close kills every process the job left (the whole cgroup, or the
// launched process trees when cgroups are unusable), records final Stats,
// removes the cgroup, unmounts the work dir and deletes the private area
// (including WorkDir) and the IPC dir. It is idempotent.
func (k *Kernel) Close() error {
	k.closeOnce.Do(func() { k.closeErr = k.close() })
	return k.closeErr
}

func (k *Kernel) close() error {
	var errs []error
	k.killLaunched()
	if k.cg != nil {
		if err := k.cg.kill(5 * time.Second); err != nil {
			errs = append(errs, fmt.Errorf("kill job processes: %w", err))
		}
	}
	k.mu.Lock()
	st := k.statsLocked()
	k.final = &st
	k.mu.Unlock()
	if k.cg != nil {
		if err := k.cg.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if k.mounted {
		if err := syscall.Unmount(k.WorkDir, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount work dir: %w", err))
		}
	}
	if k.pub != "" {
		if err := os.RemoveAll(k.pub); err != nil {
			errs = append(errs, fmt.Errorf("remove job dir under base dir: %w", err))
		}
	}
	if k.priv != "" {
		if err := os.RemoveAll(k.priv); err != nil {
			errs = append(errs, fmt.Errorf("remove private dir: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sandbox %s close: %w", k.id, err)
	}
	return nil
}

// killLaunched SIGKILLs the wrapper processes recorded in the pid file,
// after checking each pid still belongs to this job (pid reuse). In bwrap
// mode the wrapper has exec'd into the outer bwrap; killing it kills the
// sandbox's PID namespace (--die-with-parent), hence every process in it.
// In ModeNone the kernel leads its own process group, which is killed.
func (k *Kernel) killLaunched() {
	if k.pidFile == "" {
		return
	}
	b, err := os.ReadFile(k.pidFile)
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 1 {
			continue
		}
		var marker []byte
		var needle string
		if k.cfg.Mode == ModeNone {
			marker, _ = os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			needle = "NPUGRADE_SANDBOX_JOB=" + k.id + "\x00"
		} else {
			marker, _ = os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			needle = "\x00" + k.ipcDir + "\x00"
		}
		if !strings.Contains(string(marker), needle) {
			continue
		}
		if k.cfg.Mode == ModeNone {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// ensureBaseDir creates BaseDir 0711 and refuses one that another user
// could have prepared (symlink, foreign owner, group/world writable).
func ensureBaseDir(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("create base dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("base dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("base dir %s: not a directory owned by uid %d", dir, os.Geteuid())
	}
	if fi.Mode().Perm() != 0o711 {
		if err := os.Chmod(dir, 0o711); err != nil {
			return fmt.Errorf("base dir: %w", err)
		}
	}
	// The unprivileged bwrap resolves the bind sources itself: every
	// ancestor must be searchable by "others".
	return checkSearchable(filepath.Dir(dir))
}

// checkSearchable tells whether an unrelated uid can traverse to path:
// bwrap, already running as the kernel uid, resolves bind sources itself.
func checkSearchable(path string) error {
	for d := path; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("check %s: %w", path, err)
		}
		if fi.IsDir() && fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("%s: directory %s is not searchable by the kernel uid (mode %v; needs o+x)", path, d, fi.Mode().Perm())
		}
		if d == "/" {
			return nil
		}
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
