package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// jobCgroup is the set of per-job cgroup directories the wrapper joins. On
// cgroup v1 it is one directory per controller (memory, pids, freezer); on
// v2 a single directory.
type jobCgroup struct {
	version int
	memDir  string // v1 memory dir, or the v2 dir
	pidsDir string // v1 pids dir (may be empty), or the v2 dir
	frzDir  string // v1 freezer dir (optional)
	// cpuDir is where the job's CPU weight is set (v1 cpu dir or the v2
	// dir when its cpu controller is on; empty: no CPU priority).
	cpuDir string
}

// cgroupMounts finds cgroup mount points from /proc/self/mountinfo: the v2
// mount (only if it is the unified hierarchy with the memory controller) and
// the v1 mounts keyed by controller.
func cgroupMounts() (v2 string, v1 map[string]string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	v1 = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		line := sc.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		pre, post := strings.Fields(line[:sep]), strings.Fields(line[sep+3:])
		if len(pre) < 5 || len(post) < 3 {
			continue
		}
		mnt := unescapeMount(pre[4])
		switch post[0] {
		case "cgroup2":
			b, err := os.ReadFile(filepath.Join(mnt, "cgroup.controllers"))
			if err == nil && hasWord(string(b), "memory") && v2 == "" {
				v2 = mnt
			}
		case "cgroup":
			for _, o := range strings.Split(post[2], ",") {
				if o == "memory" || o == "pids" || o == "freezer" || o == "cpu" {
					if _, ok := v1[o]; !ok {
						v1[o] = mnt
					}
				}
			}
		}
	}
	return v2, v1, sc.Err()
}

func unescapeMount(s string) string {
	// mountinfo escapes space, tab, newline and backslash as \ooo.
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// newJobCgroup creates the per-job cgroup(s) with the limits applied. Any
// failure removes what was created and returns an error; the caller then
// falls back to rlimits.
func newJobCgroup(parent, name string, memLimit int64, pidsLimit int) (_ *jobCgroup, err error) {
	v2, v1, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	cg := &jobCgroup{}
	defer func() {
		if err != nil {
			cg.remove()
		}
	}()
	switch {
	case v1["memory"] != "":
		cg.version = 1
		if cg.memDir, err = mkCgroup(v1["memory"], parent, name); err != nil {
			return nil, err
		}
		if err = writeFile(cg.memDir, "memory.limit_in_bytes", strconv.FormatInt(memLimit, 10)); err != nil {
			return nil, err
		}
		// No swap and no swap-in-disguise: memsw only exists with swap
		// accounting; swappiness may be refused. Both are best effort.
		_ = writeFile(cg.memDir, "memory.memsw.limit_in_bytes", strconv.FormatInt(memLimit, 10))
		_ = writeFile(cg.memDir, "memory.swappiness", "0")
		if v1["pids"] != "" {
			if cg.pidsDir, err = mkCgroup(v1["pids"], parent, name); err != nil {
				return nil, err
			}
			if err = writeFile(cg.pidsDir, "pids.max", strconv.Itoa(pidsLimit)); err != nil {
				return nil, err
			}
		}
		if v1["freezer"] != "" {
			// The freezer only makes Close atomic against forks; not required.
			if d, ferr := mkCgroup(v1["freezer"], parent, name); ferr == nil {
				cg.frzDir = d
			}
		}
		if v1["cpu"] != "" {
			// CPU weight (a spare starts in the background); not required.
			if d, cerr := mkCgroup(v1["cpu"], parent, name); cerr == nil {
				cg.cpuDir = d
			}
		}
	case v2 != "":
		cg.version = 2
		pdir := filepath.Join(v2, parent)
		if err = os.MkdirAll(pdir, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", pdir, err)
		}
		// Enable the controllers for children of the parent (idempotent).
		// The parent holds no processes, so this is allowed.
		if err = writeFile(pdir, "cgroup.subtree_control", "+memory +pids"); err != nil {
			if err2 := writeFile(pdir, "cgroup.subtree_control", "+memory"); err2 != nil {
				return nil, err
			}
		}
		if cg.memDir, err = mkCgroup(v2, parent, name); err != nil {
			return nil, err
		}
		if err = writeFile(cg.memDir, "memory.max", strconv.FormatInt(memLimit, 10)); err != nil {
			return nil, err
		}
		_ = writeFile(cg.memDir, "memory.swap.max", "0")
		// CPU weight (a spare starts in the background): best effort, the
		// cpu controller may not be delegated to us.
		if writeFile(pdir, "cgroup.subtree_control", "+cpu") == nil {
			if _, serr := os.Stat(filepath.Join(cg.memDir, "cpu.weight")); serr == nil {
				cg.cpuDir = cg.memDir
			}
		}
		if _, serr := os.Stat(filepath.Join(cg.memDir, "pids.max")); serr == nil {
			cg.pidsDir = cg.memDir
			if err = writeFile(cg.pidsDir, "pids.max", strconv.Itoa(pidsLimit)); err != nil {
				return nil, err
			}
		}
	default:
		return nil, errors.New("no usable cgroup memory controller (neither v1 nor v2)")
	}
	return cg, nil
}

func mkCgroup(root, parent, name string) (string, error) {
	pdir := filepath.Join(root, parent)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return "", fmt.Errorf("create cgroup %s: %w", pdir, err)
	}
	dir := filepath.Join(pdir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	return dir, nil
}

func writeFile(dir, name, val string) error {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(val), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// procsFiles are the cgroup.procs files the wrapper writes its pid into.
func (cg *jobCgroup) procsFiles() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range []string{cg.memDir, cg.pidsDir, cg.frzDir, cg.cpuDir} {
		if d != "" && !seen[d] {
			seen[d] = true
			out = append(out, filepath.Join(d, "cgroup.procs"))
		}
	}
	return out
}

// pids lists the (host) pids in any of the job's cgroups.
func (cg *jobCgroup) pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range cg.procsFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(l); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// kill SIGKILLs every process in the cgroup and waits until it is empty.
// On v2 cgroup.kill does it atomically; on v1 the freezer (when available)
// stops the group first so nothing can fork while we kill. Without the
// freezer we loop: the pids limit bounds a fork bomb and the PID namespace
// dies with its init anyway.
func (cg *jobCgroup) kill(timeout time.Duration) error {
	if cg.version == 2 {
		_ = writeFile(cg.memDir, "cgroup.kill", "1")
	}
	frozen := false
	if cg.frzDir != "" && len(cg.pids()) > 0 {
		if writeFile(cg.frzDir, "freezer.state", "FROZEN") == nil {
			frozen = true
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				b, _ := os.ReadFile(filepath.Join(cg.frzDir, "freezer.state"))
				if strings.TrimSpace(string(b)) == "FROZEN" {
					break
				}
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		ps := cg.pids()
		for _, p := range ps {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if frozen {
			// SIGKILL is delivered once thawed.
			_ = writeFile(cg.frzDir, "freezer.state", "THAWED")
			frozen = false
		}
		if len(ps) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still has processes %v after %s", cg.memDir, ps, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// remove deletes the job cgroup directories (retrying briefly: a killed
// cgroup may report busy for a moment).
func (cg *jobCgroup) remove() error {
	var errs []error
	seen := map[string]bool{}
	for _, d := range []string{cg.memDir, cg.pidsDir, cg.frzDir, cg.cpuDir} {
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		var err error
		for i := 0; i < 50; i++ {
			err = os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// readKV reads a "key value" per line file (memory.stat, memory.events,
// pids.events, memory.oom_control).
func readKV(path string) map[string]int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	m := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[f[0]] = v
			}
		}
	}
	return m
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// stats fills the cgroup part of Stats.
func (cg *jobCgroup) stats(s *Stats) {
	if cg.version == 1 {
		s.Source = "cgroup-v1"
		s.MemoryPeak, _ = readInt(filepath.Join(cg.memDir, "memory.max_usage_in_bytes"))
		s.MemoryFailCount, _ = readInt(filepath.Join(cg.memDir, "memory.failcnt"))
		if oc := readKV(filepath.Join(cg.memDir, "memory.oom_control")); oc != nil {
			if v, ok := oc["oom_kill"]; ok {
				s.OOMKills = v
			} else if oc["under_oom"] > 0 {
				s.OOMKills = 1
			}
		}
	} else {
		s.Source = "cgroup-v2"
		s.MemoryPeak, _ = readInt(filepath.Join(cg.memDir, "memory.peak"))
		if ev := readKV(filepath.Join(cg.memDir, "memory.events")); ev != nil {
			s.MemoryFailCount = ev["max"]
			s.OOMKills = ev["oom_kill"]
		}
	}
	if cg.pidsDir != "" {
		s.PidsPeak, _ = readInt(filepath.Join(cg.pidsDir, "pids.peak"))
		if ev := readKV(filepath.Join(cg.pidsDir, "pids.events")); ev != nil {
			s.PidsLimitEvents = ev["max"]
		}
	}
}
