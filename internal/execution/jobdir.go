package execution

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/npugrade/npugrade/internal/procid"
)

// A job directory holds the learner's notebook with the exercise's hidden
// probe cells: it must not outlive its job. A runner that dies (SIGKILL,
// the OOM killer, a crash) removes nothing, so every job directory is
// named for the process that made it, "npugrade-job-PID.START.HOST-RANDOM"
// (START: the process's start time, which tells it from a later process
// with the same pid; HOST: hostKey), and SweepJobDirs, run when a runner
// starts, removes those whose process is gone. The name is made by the same
// mkdir as the directory, so no crash point leaves a job directory
// without its owner, with or without a sandbox.

const jobDirPrefix = "npugrade-job-"

// ownerTag is "PID.START.HOST" for this process ("" where /proc cannot
// tell: the job directories are then unmarked and no sweep removes them).
var ownerTag = sync.OnceValue(func() string {
	pid := os.Getpid()
	start, host := procid.Start(pid), hostKey()
	if start == "" || host == "" {
		return ""
	}
	return strconv.Itoa(pid) + "." + start + "." + host
})

// jobDirPattern is os.MkdirTemp's pattern for this process's job directories.
func jobDirPattern() string {
	if tag := ownerTag(); tag != "" {
		return jobDirPrefix + tag + "-"
	}
	return jobDirPrefix
}

// hostKey names the kernel boot and PID namespace this process runs in
// (8 hex digits of a hash of both): a pid and start time recorded under
// another key (another host sharing the work root, a container with its
// own PID namespace, an earlier boot) say nothing about the processes
// here, and the sweep leaves such directories alone.
var hostKey = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "\x00" + ns))
	return hex.EncodeToString(sum[:4])
})

// jobDirOwner parses a job directory's name: the pid and start time of the
// process that made it, if the name is exactly what jobDirPattern makes
// and carries this host's key.
func jobDirOwner(name string) (pid int, start string, ok bool) {
	rest, found := strings.CutPrefix(name, jobDirPrefix)
	tag, suffix, cut := strings.Cut(rest, "-")
	if !found || !cut || suffix == "" {
		return 0, "", false
	}
	f := strings.Split(tag, ".")
	if len(f) != 3 || f[2] == "" || f[2] != hostKey() || !digits(f[1]) {
		return 0, "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 || strconv.Itoa(pid) != f[0] {
		return 0, "", false
	}
	return pid, f[1], true
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// SweepJobDirs removes the job directories under root (the executor's
// WorkRoot; "" is os.TempDir()) that a dead process made: runners call it
// at start, after the isolation's own sweep has stopped what the dead
// runners' kernels left running. It removes only what proves to be such a
// directory: a name jobDirPattern makes, with this host's key, for a
// process that no longer runs (pid and start time); a real directory (not
// followed through a link), owned by this process's uid, mode 0700. A live
// runner's directories, another uid's, unmarked ones and anything else are
// left alone; several runners may share the root. It returns how many it
// removed.
func SweepJobDirs(root string) (int, error) {
	if root == "" {
		root = os.TempDir()
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("sweep job directories in %s: %w", root, err)
	}
	var errs []error
	n := 0
	for _, e := range entries {
		pid, start, ok := jobDirOwner(e.Name())
		if !ok || procid.Alive(pid, start) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || !ownedByMe(fi) {
			continue
		}
		// RemoveAll follows no link, neither dir nor anything in it.
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove a dead runner's job directory: %w", err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// ownedByMe tells whether fi is this process's effective uid's.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
