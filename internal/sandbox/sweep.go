package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/npugrade/npugrade/internal/procid"
)

// ownerFile names the file in BaseDir/<id> that records which process
// prepared the sandbox, so that a later runner can tell a live job from one
// whose runner was SIGKILLed (Close never ran: its tmpfs, cgroups and
// directories would stay behind for ever).
const ownerFile = "owner"

// jobDirFile names the file in BaseDir/<id> that records the job
// directory the sandbox was prepared for (its private area is in it):
// the sweep removes it with the sandbox, or a killed runner's job
// directories (the notebook, with its hidden probe cells, among them)
// would stay behind for ever.
const jobDirFile = "jobdir"

// writeOwner records this process as the sandbox's owner.
func writeOwner(pub string) error {
	return os.WriteFile(filepath.Join(pub, ownerFile), []byte(strconv.Itoa(os.Getpid())+" "+procid.Start(os.Getpid())), 0o600)
}

// ownerAlive reports whether the process recorded in pub/owner still runs.
// A sandbox without an owner file (being prepared right now, or left by a
// version that wrote none) counts as alive for its first hour.
func ownerAlive(pub string) bool {
	b, err := os.ReadFile(filepath.Join(pub, ownerFile))
	if err != nil {
		fi, serr := os.Stat(pub)
		return serr == nil && time.Since(fi.ModTime()) < time.Hour
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return false
	}
	return procid.Alive(pid, f[1])
}

// Sweep removes sandboxes whose owning process is gone: it kills what is
// left in their cgroups, removes the cgroups, unmounts their work tmpfs and
// deletes their directories. Runners call it at start. It returns how many
// sandboxes it removed.
func Sweep(cfg Config) (int, error) {
	if cfg.BaseDir == "" {
		cfg.BaseDir = DefaultConfig().BaseDir
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = DefaultCgroupParent
	}
	entries, err := os.ReadDir(cfg.BaseDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep %s: %w", cfg.BaseDir, err)
	}
	v2, v1, _ := cgroupMounts()
	var errs []error
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "job-") {
			continue
		}
		pub := filepath.Join(cfg.BaseDir, e.Name())
		if ownerAlive(pub) {
			continue
		}
		cg := &jobCgroup{version: 1}
		if v1["memory"] != "" {
			cg.memDir = filepath.Join(v1["memory"], cfg.CgroupParent, e.Name())
			if v1["pids"] != "" {
				cg.pidsDir = filepath.Join(v1["pids"], cfg.CgroupParent, e.Name())
			}
			if v1["freezer"] != "" {
				cg.frzDir = filepath.Join(v1["freezer"], cfg.CgroupParent, e.Name())
			}
			if v1["cpu"] != "" {
				cg.cpuDir = filepath.Join(v1["cpu"], cfg.CgroupParent, e.Name())
			}
		} else if v2 != "" {
			cg.version = 2
			cg.memDir = filepath.Join(v2, cfg.CgroupParent, e.Name())
		}
		for _, d := range []string{cg.memDir, cg.pidsDir, cg.frzDir, cg.cpuDir} {
			if d == "" {
				continue
			}
			if _, err := os.Stat(d); err != nil {
				switch d {
				case cg.memDir:
					cg.memDir = ""
				case cg.pidsDir:
					cg.pidsDir = ""
				case cg.frzDir:
					cg.frzDir = ""
				case cg.cpuDir:
					cg.cpuDir = ""
				}
			}
		}
		if cg.memDir != "" || cg.pidsDir != "" || cg.frzDir != "" || cg.cpuDir != "" {
			if err := cg.kill(5 * time.Second); err != nil {
				errs = append(errs, err)
			}
			if err := cg.remove(); err != nil {
				errs = append(errs, err)
			}
		}
		work := filepath.Join(pub, "work")
		_ = syscall.Unmount(work, syscall.MNT_DETACH) // not a mount point: EINVAL, harmless
		if err := removeJobDir(pub); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(pub); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", pub, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// removeJobDir removes the job directory a dead sandbox recorded
// (jobDirFile), but only a real directory holding the private area
// PrepareKernel made in it (root's, 0700): what the file names is never
// trusted further than that. Nothing recorded (an older sandbox) or
// nothing there is no error.
func removeJobDir(pub string) error {
	b, err := os.ReadFile(filepath.Join(pub, jobDirFile))
	if err != nil {
		return nil
	}
	dir := string(b)
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || dir == "/" {
		return fmt.Errorf("sweep %s: recorded job dir %q is not a clean absolute path", pub, dir)
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("sweep %s: recorded job dir %s is not a directory (%v)", pub, dir, err)
	}
	pfi, err := os.Lstat(filepath.Join(dir, privDirName))
	st, ok := sysStat(pfi)
	if err != nil || !pfi.IsDir() || pfi.Mode().Perm() != 0o700 || !ok || st.Uid != 0 {
		return fmt.Errorf("sweep %s: %s has no private area of a sandbox; left alone", pub, dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("sweep %s: remove job dir: %w", pub, err)
	}
	return nil
}

// sysStat is fi's stat_t, if it has one.
func sysStat(fi os.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}
