package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevicesAndDriverDirs: only the listed device nodes appear in /dev
// (as an NPU job would get /dev/davinci*), and driver/extra dirs are
// visible read-only. /dev/fuse stands in for an NPU device node.
func TestDevicesAndDriverDirs(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	const dev = "/dev/fuse"
	if _, err := os.Stat(dev); err != nil {
		t.Skipf("%s not present to stand in for an NPU device", dev)
	}
	drv := filepath.Join(t.TempDir(), "driver")
	if err := os.MkdirAll(filepath.Join(drv, "lib64"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(drv, "version.info"), []byte("Version=23.0.0"), 0o644); err != nil {
		t.Fatal(err)
	}
	// t.TempDir is 0700: the unprivileged bwrap must be able to traverse to it.
	for d := drv; d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(d, fi.Mode().Perm()|0o011)
		}
	}
	k, _, _ := prepare(t, testConfig(t, func(c *Config) {
		c.Devices = []string{dev}
		c.DriverDirs = []string{drv}
	}))
	out := mustPy(t, k, `
import os
print("DEV", sorted(os.listdir("/dev")))
print("DRV", open(`+pyQuote(filepath.Join(drv, "version.info"))+`).read())
try:
    open(`+pyQuote(filepath.Join(drv, "x"))+`, "w"); print("DRV-WRITABLE")
except OSError as e:
    print("DRV-RO", e.errno)
`)
	t.Logf("\n%s", out)
	for _, want := range []string{"'fuse'", "DRV Version=23.0.0", "DRV-RO 30"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, bad := range []string{"'kmsg'", "'kvm'", "'loop0'", "'tty0'", "'console'"} {
		if strings.Contains(out, bad) {
			t.Errorf("host device %s visible in the sandbox", bad)
		}
	}
}
