package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// CPU priority of a kernel started ahead of its job (a warm spare). On a
// small machine a spare's start (Python, torch imports: seconds of CPU)
// would otherwise take CPU from the jobs executing next to it; in the
// background it only uses what they leave idle, and gets its full share
// back when it is handed a job.
//
// A low weight alone is not enough: a job's kernel and driver sleep and
// wake dozens of times a cell (one message round trip each), and the
// scheduler may let a low-weight start finish its time slice before the
// woken job runs, milliseconds per wake-up. An idle-class group (cgroup
// cpu.idle, Linux 5.15) or thread (SCHED_IDLE) is preempted at once by
// any other task that wakes, so the start really only gets idle CPU.

// Weights of the job's cpu cgroup: the controllers' minimum in the
// background, their default otherwise.
const (
	v1SharesBackground, v1SharesNormal = "2", "1024"
	v2WeightBackground, v2WeightNormal = "1", "100"
	// BackgroundNice is the nice value of a background kernel's
	// processes (it orders them among processes outside any cpu cgroup).
	BackgroundNice = 19
)

// Background moves the kernel's processes (those running now and those it
// starts later) to the lowest CPU priority (on) or back to the normal one
// (off). Without a cpu cgroup it only renices the processes running now;
// without root it cannot raise a priority again and changes nothing, so a
// kernel never stays in the background after it was handed a job. The
// error says what could not be changed; the kernel works either way.
func (k *Kernel) Background(on bool) error {
	if os.Geteuid() != 0 {
		return errors.New("CPU priority: not root, unchanged")
	}
	var errs []error
	if cg := k.cg; cg != nil && cg.cpuDir != "" {
		name, val := "cpu.shares", v1SharesNormal
		if on {
			val = v1SharesBackground
		}
		if cg.version == 2 {
			name, val = "cpu.weight", v2WeightNormal
			if on {
				val = v2WeightBackground
			}
		}
		// cpu.idle exists from Linux 5.15 (v1 and v2); older kernels keep
		// the weight alone. An idle group refuses a weight: leave the
		// idle class before setting it, enter it after.
		_, serr := os.Stat(filepath.Join(cg.cpuDir, "cpu.idle"))
		idle := serr == nil
		if idle && !on {
			if err := writeFile(cg.cpuDir, "cpu.idle", "0"); err != nil {
				errs = append(errs, err)
			}
		}
		if err := writeFile(cg.cpuDir, name, val); err != nil {
			errs = append(errs, err)
		}
		if idle && on {
			if err := writeFile(cg.cpuDir, "cpu.idle", "1"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, tid := range k.threads() {
		if err := setThreadBackground(tid, on); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Scheduling policies (sched.h).
const (
	schedOther = 0
	schedIdle  = 5
)

// setThreadBackground moves host thread tid to the idle scheduling class
// at nice BackgroundNice (on), or back to the normal class at nice 0. A
// thread that exited meanwhile is not an error. Threads created later
// inherit what their creator has at that moment.
func setThreadBackground(tid int, on bool) error {
	policy, nice := schedOther, 0
	if on {
		policy, nice = schedIdle, BackgroundNice
	}
	var param struct{ priority int32 }
	// sched_setscheduler(2): SCHED_IDLE and SCHED_OTHER take priority 0.
	_, _, e := syscall.Syscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&param)))
	var errs []error
	if e != 0 && e != syscall.ESRCH {
		errs = append(errs, fmt.Errorf("scheduling class of thread %d: %w", tid, e))
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
		errs = append(errs, fmt.Errorf("renice thread %d: %w", tid, err))
	}
	return errors.Join(errs...)
}

// threads lists the host thread ids in the job's cgroup (nice is per
// thread on Linux).
func (k *Kernel) threads() []int {
	cg := k.cg
	if cg == nil {
		return nil
	}
	file := filepath.Join(cg.memDir, "tasks")
	if cg.version == 2 {
		file = filepath.Join(cg.memDir, "cgroup.threads")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if tid, err := strconv.Atoi(f); err == nil {
			out = append(out, tid)
		}
	}
	return out
}
