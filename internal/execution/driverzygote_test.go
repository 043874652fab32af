package execution_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// TestPoolOnTheForkPath: a pool with both zygotes (as the runner's
// --fork-server sets it up) forks its spare's kernel and driver from
// them, and counts their memory as the spares'.
func TestPoolOnTheForkPath(t *testing.T) {
	t.Parallel()
	kz := &sandbox.Zygote{}
	defer kz.Close()
	e, dz := forkPathExecutor(t, kz)
	p := &execution.Pool{Exec: e, Size: 1, PerSlot: 1, Zygotes: []execution.Zygote{kz, dz}}
	p.Start(context.Background())
	defer p.Close()
	if !p.WaitReady(context.Background()) {
		t.Fatal("the spare did not start")
	}
	if kz.Kernels() != 1 || dz.Drivers() != 1 {
		t.Errorf("forked %d kernels and %d drivers, want 1 and 1 (a fallback to exec?)", kz.Kernels(), dz.Drivers())
	}
	if kz.Memory() <= 0 || dz.Memory() <= 0 || p.ZygoteMemory() <= 0 {
		t.Errorf("zygote memory: kernel %d, driver %d, pool %d", kz.Memory(), dz.Memory(), p.ZygoteMemory())
	}
}

// TestWarmStartEndsRightAfterFork: a warm start whose context ends the
// moment its driver is forked (a runner stopping while its spares start)
// kills that driver and returns, even before the driver has made itself
// a process group; it used to live on, waiting for a job, and the pool's
// Close and the runner's exit waited with it.
func TestWarmStartEndsRightAfterFork(t *testing.T) {
	t.Parallel()
	// Kernels on the exec path: only the driver is forked.
	e, dz := forkPathExecutor(t, nil)
	for i := 0; i < 10; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		forked := dz.Drivers()
		go func() {
			// Ends ctx as soon as the driver is forked.
			for dz.Drivers() == forked && ctx.Err() == nil {
				time.Sleep(20 * time.Microsecond)
			}
			cancel()
		}()
		done := make(chan error, 1)
		go func() {
			w, err := e.Prestart(ctx, nil, nil)
			if w != nil {
				w.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("start %d: a spare started after its context ended", i)
			}
		case <-time.After(time.Minute):
			t.Fatalf("start %d: still waiting a minute after its context ended (%d drivers forked)", i, dz.Drivers())
		}
		cancel()
	}
	if dz.Drivers() == 0 {
		t.Error("no driver was forked: the test did not reach the fork")
	}
	if dirs := kernelDirs(t, e.WorkRoot); len(dirs) != 0 {
		t.Errorf("job directories left: %v", dirs)
	}
}

// forkPathExecutor is an executor in the cpu environment whose warm
// drivers are forked from a driver zygote of its own (closed with the
// test) and whose kernels from kz (nil: exec'd). It skips where the fork
// path cannot run.
func forkPathExecutor(t *testing.T, kz *sandbox.Zygote) (*execution.Executor, *execution.DriverZygote) {
	t.Helper()
	requireExecution(t)
	if os.Geteuid() != 0 {
		t.Skip("the fork path needs root")
	}
	cfg := sandbox.DefaultConfig()
	cfg.RootFS = filepath.Join(envtest.RequireCPU(t), "rootfs")
	cfg.BaseDir = filepath.Join(shortTemp(t), "b")
	cfg.Zygote = kz
	dz := &execution.DriverZygote{}
	t.Cleanup(dz.Close)
	return &execution.Executor{Profile: "cpu", WorkRoot: shortTemp(t), Isolation: &cfg, DriverZygote: dz}, dz
}
