package execution_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/execution"
)

// TestSpareWaitsInTheBackground: a pre-started environment starts and
// waits at the lowest CPU priority (its driver and its kernel niced), so
// that starting it takes no CPU from jobs executing next to it; the job
// handed to it runs at normal priority (the learner's kernel sees nice 0).
func TestSpareWaitsInTheBackground(t *testing.T) {
	requireExecution(t)
	if os.Geteuid() != 0 {
		t.Skip("CPU priorities are lowered only where they can be raised again (root)")
	}
	t.Parallel()
	e := sandboxedExecutor(t)
	t0 := time.Now()
	w, err := e.Prestart(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if took := time.Since(t0); took > 14*time.Second {
		// A start that long is promoted to normal priority (backgroundLimit).
		t.Skipf("the start took %v on this loaded host: it left the background, nothing to check", took)
	}
	drivers := warmDrivers(e.WorkRoot)
	if len(drivers) != 1 {
		t.Fatalf("warm drivers: %v", drivers)
	}
	pid, _ := strconv.Atoi(filepath.Base(drivers[0]))
	if n := niceOf(t, pid); n != 19 {
		t.Errorf("waiting driver: nice %d, want 19", n)
	}
	if p := policyOf(t, pid); p != schedIdle {
		t.Errorf("waiting driver: scheduling policy %d, want SCHED_IDLE (%d)", p, schedIdle)
	}
	kernels := descendants(pid)
	if len(kernels) == 0 {
		t.Fatal("the waiting driver has no kernel process")
	}
	for _, k := range kernels {
		if n := niceOf(t, k); n != 19 {
			t.Errorf("waiting kernel process %d: nice %d, want 19", k, n)
		}
		if p := policyOf(t, k); p != schedIdle {
			t.Errorf("waiting kernel process %d: scheduling policy %d, want SCHED_IDLE (%d)", k, p, schedIdle)
		}
	}
	nb := codeNotebook(t, "import os\nprint(os.nice(0), os.sched_getscheduler(0))")
	res, err := w.Execute(context.Background(), nb, execution.Options{CellTimeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Log)
	}
	if got := cellTexts(t, res.Notebook); len(got) != 1 || got[0] != "0 0" {
		t.Errorf("the job's kernel runs at nice and scheduling policy %q, want \"0 0\" (nice 0, SCHED_OTHER)", got)
	}
}

// Scheduling policies (sched.h).
const schedOther, schedIdle = 0, 5

// policyOf reads a process's scheduling policy (field 41 of /proc/PID/stat).
func policyOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(f[38])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// niceOf reads a process's nice value (field 19 of /proc/PID/stat).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(f[16]) // fields from 3 on: nice is the 19th
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// descendants lists the pids below pid (children, grandchildren...).
func descendants(pid int) []int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		fs := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		p, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		pp, _ := strconv.Atoi(fs[1])
		parent[p] = pp
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// TestPromotedStartLeavesTheBackground: a start that a job waits for
// (promote closed) runs at normal priority.
func TestPromotedStartLeavesTheBackground(t *testing.T) {
	requireExecution(t)
	if os.Geteuid() != 0 {
		t.Skip("CPU priorities are lowered only where they can be raised again (root)")
	}
	t.Parallel()
	e := sandboxedExecutor(t)
	promote := make(chan struct{})
	close(promote)
	w, err := e.Prestart(context.Background(), nil, promote)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	drivers := warmDrivers(e.WorkRoot)
	if len(drivers) != 1 {
		t.Fatalf("warm drivers: %v", drivers)
	}
	pid, _ := strconv.Atoi(filepath.Base(drivers[0]))
	if n := niceOf(t, pid); n != 0 {
		t.Errorf("promoted driver: nice %d, want 0", n)
	}
	if p := policyOf(t, pid); p != schedOther {
		t.Errorf("promoted driver: scheduling policy %d, want SCHED_OTHER", p)
	}
	for _, k := range descendants(pid) {
		if n := niceOf(t, k); n != 0 {
			t.Errorf("promoted kernel process %d: nice %d, want 0", k, n)
		}
		if p := policyOf(t, k); p != schedOther {
			t.Errorf("promoted kernel process %d: scheduling policy %d, want SCHED_OTHER", k, p)
		}
	}
}
