package execution_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/execution"
)

// TestPoolSpares: a pool of two warm spares on real sandboxed kernels.
// A spare serves exactly one job (nothing a job leaves in its work dir is
// seen by the next, and its directories are gone after it); spares that
// die while waiting are replaced by new ones; Close kills every spare and
// leaves no process, directory or sandbox behind. Their memory is counted.
func TestPoolSpares(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	e := sandboxedExecutor(t)
	p := &execution.Pool{Exec: e, Size: 2}
	p.Start(context.Background())
	closed := false
	defer func() {
		if !closed {
			p.Close()
		}
	}()
	waitSpares := func(n int) []string {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for p.Ready() < n || len(kernelDirs(t, e.WorkRoot)) != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d spares ready, %d job dirs; want %d", p.Ready(), len(kernelDirs(t, e.WorkRoot)), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return kernelDirs(t, e.WorkRoot)
	}
	before := waitSpares(2)
	if m := p.SpareMemory(); m < 2<<20 {
		t.Errorf("memory of two spares: %d bytes", m)
	}

	// Each job finds a fresh work dir and kernel.
	job := codeNotebook(t, "import os\nprint(os.path.exists('left-by-a-job'))\n_ = open('left-by-a-job', 'w').write('x')")
	used := map[string]bool{}
	for i := 0; i < 3; i++ {
		res, err := p.Execute(context.Background(), job, execution.Options{CellTimeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("job %d: %v\n%s", i, err, res.Log)
		}
		if got := cellTexts(t, res.Notebook); len(got) != 1 || got[0] != "False" {
			t.Errorf("job %d saw another job's file: %q", i, got)
		}
		now := kernelDirs(t, e.WorkRoot)
		for _, d := range before {
			if !slices.Contains(now, d) {
				used[d] = true // handed out, then destroyed
			}
		}
		for d := range used {
			if slices.Contains(now, d) {
				t.Errorf("job %d: the used spare %s is still there", i, d)
			}
		}
		before = waitSpares(2)
	}
	if len(used) != 3 {
		t.Errorf("3 jobs used %d spares", len(used))
	}

	// Spares that die while waiting are replaced by new ones.
	killDrivers(t, e.WorkRoot)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		now := kernelDirs(t, e.WorkRoot)
		if p.Ready() == 2 && len(now) == 2 && !slices.Contains(now, before[0]) && !slices.Contains(now, before[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dead spares not replaced: ready %d, dirs %v (dead %v)", p.Ready(), now, before)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Close kills the spares and removes everything they held.
	p.Close()
	closed = true
	if p.Ready() != 0 {
		t.Errorf("after Close: %d spares ready", p.Ready())
	}
	if d := kernelDirs(t, e.WorkRoot); len(d) != 0 {
		t.Errorf("after Close: job dirs %v", d)
	}
	if entries, _ := os.ReadDir(sandboxOf(e).BaseDir); len(entries) != 0 {
		t.Errorf("after Close: sandbox dirs %v", entries)
	}
	if pids := warmDrivers(e.WorkRoot); len(pids) != 0 {
		t.Errorf("after Close: warm drivers still running: %v", pids)
	}
}

// warmDrivers lists the /proc entries of warm drivers whose config lives
// under root.
func warmDrivers(root string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), root) && strings.Contains(string(b), "--warm") {
			out = append(out, filepath.Dir(f))
		}
	}
	return out
}
