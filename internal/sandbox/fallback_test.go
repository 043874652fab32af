package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestRlimitFallback covers hosts without usable cgroups: memory is capped
// per process by RLIMIT_AS (Python sees MemoryError) and Close still kills
// the whole sandbox through the recorded wrapper pid. Not parallel: it
// flips a package variable.
func TestRlimitFallback(t *testing.T) {
	requireSandbox(t)
	testDisableCgroups = true
	defer func() { testDisableCgroups = false }()
	k, _, _ := prepare(t, testConfig(t, func(c *Config) { c.MemoryLimit = 1 << 30 }))
	testDisableCgroups = false
	if k.Limits.Memory != "rlimit-as" || k.cg != nil {
		t.Fatalf("limits %+v, want the rlimit fallback", k.Limits)
	}
	out := mustPy(t, k, `
import resource
print("AS", resource.getrlimit(resource.RLIMIT_AS)[0])
try:
    b = bytearray(2 << 30); print("ALLOCATED")
except MemoryError:
    print("MEMORYERROR")
import torch; print("TORCH-OK")
`)
	t.Logf("\n%s", out)
	for _, want := range []string{"AS 1073741824", "MEMORYERROR", "TORCH-OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := k.Command(ctx, "/bin/sh", "-c", "(setsid sleep 3600 &); sleep 3600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for processesWithArg("3600") < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	time.Sleep(100 * time.Millisecond)
	if n := processesWithArg(k.ipcDir); n != 0 {
		t.Errorf("%d wrapper processes remain", n)
	}
	if n := processesWithArg("3600"); n != 0 {
		t.Errorf("%d sandboxed sleepers remain after Close", n)
	}
}
