package execution_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// TestPoolOnTheForkPath: a pool with both zygotes (as the runner's
// --fork-server sets it up) forks its spare's kernel and driver from
// them, and counts their memory as the spares'.
func TestPoolOnTheForkPath(t *testing.T) {
	t.Parallel()
	requireExecution(t)
	if os.Geteuid() != 0 {
		t.Skip("the fork path needs root")
	}
	cfg := sandbox.DefaultConfig()
	cfg.RootFS = filepath.Join(envtest.RequireCPU(t), "rootfs")
	cfg.BaseDir = filepath.Join(shortTemp(t), "b")
	kz, dz := &sandbox.Zygote{}, &execution.DriverZygote{}
	defer kz.Close()
	defer dz.Close()
	cfg.Zygote = kz
	e := &execution.Executor{Profile: "cpu", WorkRoot: shortTemp(t), Isolation: &cfg, DriverZygote: dz}
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
