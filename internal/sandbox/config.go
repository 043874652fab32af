package sandbox

import (
	"errors"
	"fmt"
	"math"

	"github.com/npugrade/npugrade/internal/domain"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Isolation modes.
const (
	// ModeBwrap runs the kernel inside bubblewrap with cgroup/rlimit
	// limits. It is the default and the only mode fit for untrusted code.
	ModeBwrap = "bwrap"
	// ModeNone runs the kernel as a plain child process with a cleared
	// environment and the work dir as cwd, and nothing else. Development only.
	ModeNone = "none"
)

// KernelName is the kernelspec name PrepareKernel installs in the job's
// private JUPYTER_PATH; nbconvert selects it through Kernel.Args.
const KernelName = "npugrade-sandbox"

// Defaults sized for a 2-core, 24 GiB runner executing a couple of jobs at
// once: each job gets a slice of RAM large enough for `import torch` plus a
// small model, and little enough that two runaway jobs cannot starve the host.
const (
	DefaultMemoryLimit   int64 = 2 << 30   // 2 GiB, kernel + its children + its tmpfs files
	DefaultPidsLimit           = 256       // processes+threads; torch starts ~2 per core
	DefaultFileSizeLimit int64 = 256 << 20 // 256 MiB per file (RLIMIT_FSIZE)
	DefaultDiskLimit     int64 = 512 << 20 // 512 MiB tmpfs for the work dir (and /tmp, /dev/shm)
	DefaultPython              = "/usr/bin/python3"
	DefaultThreads             = 1 // OMP/MKL/OpenBLAS threads: jobs share 2 cores
	// DefaultUID/DefaultGID is the identity the kernel runs as when the runner
	// is root ("nobody"): the kernel must never be uid 0, even inside the
	// sandbox, because uid 0 owns most of the host files bound into it.
	DefaultUID = 65534
	DefaultGID = 65534
	// DefaultCgroupParent is the cgroup (relative to each hierarchy's root)
	// under which per-job cgroups are created.
	DefaultCgroupParent = "npugrade"
)

// Paths seen by the code inside the sandbox.
const (
	SandboxHome     = "/home/learner" // the work dir, HOME and cwd
	sandboxConnFile = "/run/npugrade/connection.json"
	sandboxUser     = "learner"
	sandboxHostname = "npugrade"
)

// Config describes how a kernel is sandboxed. The zero value of every field
// means "use the default" except AllowNetwork and the lists; use
// DefaultConfig to get the defaults spelled out.
type Config struct {
	// Mode is ModeBwrap (default when empty) or ModeNone.
	Mode string
	// MemoryLimit in bytes for everything the kernel runs (cgroup memory
	// limit; RLIMIT_AS per process if cgroups are unusable). Files written
	// to the work dir, /tmp and /dev/shm are tmpfs pages charged to it too.
	MemoryLimit int64
	// PidsLimit caps processes+threads (cgroup pids controller).
	PidsLimit int
	// FileSizeLimit is RLIMIT_FSIZE in bytes: the largest file the kernel may write.
	FileSizeLimit int64
	// DiskLimit in bytes for the writable work dir (a tmpfs mounted on the
	// host when the runner is root) and for the sandbox's private /tmp and
	// /dev/shm tmpfs (each sized DiskLimit).
	DiskLimit int64
	// CPUTimeLimit is an optional RLIMIT_CPU per process (0 = none). The
	// per-cell wall-clock timeout is the executor's job (nbclient timeout).
	CPUTimeLimit time.Duration
	// AllowNetwork keeps the host network namespace. Off by default: no
	// network at all, not even the host's loopback.
	AllowNetwork bool
	// ExtraReadOnly host paths bound read-only at the same path (e.g. /opt/datasets).
	ExtraReadOnly []string
	// Devices are device nodes bound into the sandbox /dev (e.g.
	// /dev/davinci0, /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc).
	Devices []string
	// DriverDirs are bound read-only at the same path (e.g. /usr/local/Ascend/driver).
	DriverDirs []string
	// Env is the allow-listed environment. The kernel gets only these plus
	// the fixed set of BaseEnv (Env wins on conflicts).
	Env map[string]string
	// Python is the interpreter that runs ipykernel (default /usr/bin/python3);
	// with RootFS, a path inside that root filesystem.
	Python string
	// RootFS, when set, is the host path of an environment's root
	// filesystem: the kernel sees its /usr, /bin, /lib* and /etc pieces
	// instead of the host's (see rootfs.go). It needs ModeBwrap.
	RootFS string
	// UID/GID the kernel runs as when the runner is root (default 65534).
	// Ignored when the runner is not root: the kernel keeps the runner's ids.
	UID, GID int
	// CgroupParent is the parent cgroup for per-job cgroups (default "npugrade").
	CgroupParent string
	// BaseDir holds the per-job directories bound into sandboxes (work dir
	// and IPC socket dir). Default: $TMPDIR/npugrade-sandbox. It must be
	// traversable by the kernel uid (it is made 0711): the unprivileged
	// bwrap resolves the bind sources itself, so they cannot live under a
	// 0700 job dir. Keep the path short (unix socket paths are <108 bytes).
	BaseDir string
	// Zygote, when set, starts environment kernels on the fork path
	// (zygote.go): forked from a process that imported torch once, into a
	// sandbox built exactly as on the exec path. Where the fork path is
	// unsupported (not root, no RootFS, no cgroup) kernels start on the
	// exec path and the zygote logs why once.
	Zygote *Zygote `json:"-"`
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		Mode:          ModeBwrap,
		MemoryLimit:   DefaultMemoryLimit,
		PidsLimit:     DefaultPidsLimit,
		FileSizeLimit: DefaultFileSizeLimit,
		DiskLimit:     DefaultDiskLimit,
		Python:        DefaultPython,
		UID:           DefaultUID,
		GID:           DefaultGID,
		CgroupParent:  DefaultCgroupParent,
		BaseDir:       filepath.Join(os.TempDir(), "npugrade-sandbox"),
	}
}

// withDefaults fills zero fields with defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.MemoryLimit == 0 {
		c.MemoryLimit = d.MemoryLimit
	}
	if c.PidsLimit == 0 {
		c.PidsLimit = d.PidsLimit
	}
	if c.FileSizeLimit == 0 {
		c.FileSizeLimit = d.FileSizeLimit
	}
	if c.DiskLimit == 0 {
		c.DiskLimit = d.DiskLimit
	}
	if c.Python == "" {
		c.Python = d.Python
	}
	if c.UID == 0 {
		c.UID = d.UID
	}
	if c.GID == 0 {
		c.GID = d.GID
	}
	if c.CgroupParent == "" {
		c.CgroupParent = d.CgroupParent
	}
	if c.BaseDir == "" {
		c.BaseDir = d.BaseDir
	}
	return c
}

// validate checks a config that already has defaults applied.
func (c Config) validate() error {
	var errs []error
	switch c.Mode {
	case ModeBwrap, ModeNone:
	default:
		errs = append(errs, fmt.Errorf("mode %q: want %q or %q", c.Mode, ModeBwrap, ModeNone))
	}
	if c.MemoryLimit < 16<<20 {
		errs = append(errs, fmt.Errorf("memory limit %d bytes: must be at least 16MiB", c.MemoryLimit))
	}
	if c.PidsLimit < 8 {
		errs = append(errs, fmt.Errorf("pids limit %d: must be at least 8", c.PidsLimit))
	}
	if c.FileSizeLimit < 4096 {
		errs = append(errs, fmt.Errorf("file size limit %d bytes: must be at least 4096", c.FileSizeLimit))
	}
	if c.DiskLimit < 1<<20 {
		errs = append(errs, fmt.Errorf("disk limit %d bytes: must be at least 1MiB", c.DiskLimit))
	}
	if c.CPUTimeLimit < 0 {
		errs = append(errs, fmt.Errorf("cpu time limit %s: must not be negative", c.CPUTimeLimit))
	}
	if c.UID < 0 || c.GID < 0 {
		errs = append(errs, fmt.Errorf("uid/gid %d/%d: must not be negative", c.UID, c.GID))
	}
	if !filepath.IsAbs(c.BaseDir) || len(c.BaseDir) > 60 {
		errs = append(errs, fmt.Errorf("base dir %q: must be an absolute path of at most 60 bytes", c.BaseDir))
	}
	if c.RootFS != "" && c.Mode != ModeBwrap {
		errs = append(errs, fmt.Errorf("root filesystem %s: needs the bwrap sandbox (mode %q cannot run a kernel in an environment)", c.RootFS, c.Mode))
	}
	if !filepath.IsAbs(c.Python) {
		errs = append(errs, fmt.Errorf("python %q: must be an absolute path", c.Python))
	}
	if c.CgroupParent != filepath.Clean(c.CgroupParent) || strings.HasPrefix(c.CgroupParent, "..") || strings.HasPrefix(c.CgroupParent, "/") {
		errs = append(errs, fmt.Errorf("cgroup parent %q: must be a clean relative path", c.CgroupParent))
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"extra read-only path", c.ExtraReadOnly}, {"device", c.Devices}, {"driver dir", c.DriverDirs}} {
		for _, p := range list.paths {
			if !filepath.IsAbs(p) || p != filepath.Clean(p) || p == "/" {
				errs = append(errs, fmt.Errorf("%s %q: must be a clean absolute path other than /", list.name, p))
			}
		}
	}
	for k, v := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			errs = append(errs, fmt.Errorf("env %q: invalid name or value", k))
		}
	}
	return errors.Join(errs...)
}

// BaseEnv is the fixed environment every kernel gets (before Config.Env is
// applied on top). Nothing of the runner's own environment is passed.
func BaseEnv() map[string]string {
	th := strconv.Itoa(DefaultThreads)
	return map[string]string{
		"PATH":                           "/usr/local/bin:/usr/bin:/bin",
		"HOME":                           SandboxHome,
		"USER":                           sandboxUser,
		"LOGNAME":                        sandboxUser,
		"LANG":                           "C.UTF-8",
		"TZ":                             "UTC",
		"PYTHONHASHSEED":                 "0",
		"PYTHONDONTWRITEBYTECODE":        "1",
		"MPLBACKEND":                     "Agg",
		"MPLCONFIGDIR":                   "/tmp/matplotlib",
		"IPYTHONDIR":                     "/tmp/ipython",
		"OMP_NUM_THREADS":                th,
		"OPENBLAS_NUM_THREADS":           th,
		"MKL_NUM_THREADS":                th,
		"TERM":                           "dumb",
		"PYDEVD_DISABLE_FILE_VALIDATION": "1", // silence debugpy frozen-modules warning
	}
}

// kernelEnv merges BaseEnv and cfg.Env.
func (c Config) kernelEnv() map[string]string {
	env := BaseEnv()
	for k, v := range c.Env {
		env[k] = v
	}
	return env
}

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first so "MiB" is not read as "B".
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"TB", 1000 * 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// ParseSize parses a byte size: a plain integer ("1024"), or a number with a
// binary (KiB, MiB, GiB, TiB; bare K/M/G/T are binary too, like ulimit and
// tmpfs) or decimal (KB, MB, GB, TB) unit, case-insensitive, e.g. "512MiB",
// "2GiB", "100MB", "1.5GiB". The result must be positive.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("parse size %q: empty", s)
	}
	num, mult := in, int64(1)
	upper := strings.ToUpper(in)
	for _, u := range sizeUnits {
		if strings.HasSuffix(upper, u.suffix) {
			num, mult = strings.TrimSpace(in[:len(in)-len(u.suffix)]), u.mult
			break
		}
	}
	if num == "" {
		return 0, fmt.Errorf("parse size %q: missing number", s)
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("parse size %q: must be positive", s)
		}
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("parse size %q: too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("parse size %q: %q is not a number (want e.g. 1024, 512MiB, 2GiB, 100MB)", s, num)
	}
	v := f * float64(mult)
	if v < 1 {
		return 0, fmt.Errorf("parse size %q: must be at least 1 byte", s)
	}
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("parse size %q: too large", s)
	}
	return int64(v), nil
}

// FormatSize renders bytes with the largest binary unit that divides
// reasonably, e.g. 2147483648 -> "2 GiB", 1572864 -> "1.5 MiB".
func FormatSize(n int64) string { return domain.FormatSize(n) }
