package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// TestNPUSlotsPinOneDeviceEach: with a fake /dev holding three NPUs, slot i
// runs on the i-th device: ASCEND_RT_VISIBLE_DEVICES=<its id> in the
// kernel's environment and only its /dev/davinciN (plus the manager nodes)
// bound into the sandbox.
func TestNPUSlotsPinOneDeviceEach(t *testing.T) {
	t.Parallel()
	dev := t.TempDir()
	for _, n := range []string{"davinci0", "davinci1", "davinci3", "davinci_manager", "devmm_svm", "hisi_hdc"} {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	all, err := listNPUs(dev, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].ID != 0 || all[1].ID != 1 || all[2].ID != 3 {
		t.Fatalf("listNPUs: %+v (the manager nodes are not NPUs)", all)
	}
	some, err := listNPUs(dev, "3, 1")
	if err != nil || len(some) != 2 || some[0].ID != 3 || some[1].ID != 1 {
		t.Fatalf("listNPUs --devices 3,1: %+v %v", some, err)
	}
	for _, bad := range []string{"2", "x"} {
		if _, err := listNPUs(dev, bad); err == nil {
			t.Fatalf("--devices %s: no error", bad)
		}
	}
	if _, err := listNPUs(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "davinciN") {
		t.Fatalf("no NPU nodes: %v", err)
	}

	managers := []string{filepath.Join(dev, "davinci_manager"), filepath.Join(dev, "devmm_svm"), filepath.Join(dev, "hisi_hdc")}
	base := &execution.Executor{Profile: "npu-a2", ExtraEnv: map[string]string{"KEEP": "1"},
		Isolation: &sandbox.Config{Mode: sandbox.ModeBwrap, Devices: []string{"/dev/should-be-replaced"}}}
	tests := []struct {
		slots   int
		devices []string // ASCEND_RT_VISIBLE_DEVICES per slot
	}{
		{3, []string{"0", "1", "3"}},
		{1, []string{"0"}},
		{4, []string{"0", "1", "3", "0"}}, // more slots than NPUs share devices
	}
	for _, tc := range tests {
		exs := slotExecutors(base, all, managers, []string{"/usr/local/Ascend/driver"}, tc.slots)
		if len(exs) != tc.slots {
			t.Fatalf("%d slots: %d executors", tc.slots, len(exs))
		}
		for i, e := range exs {
			want := tc.devices[i]
			if e.ExtraEnv["ASCEND_RT_VISIBLE_DEVICES"] != want || e.ExtraEnv["KEEP"] != "1" || e.Profile != "npu-a2" {
				t.Fatalf("slot %d env: %v", i, e.ExtraEnv)
			}
			wantDevs := append([]string{filepath.Join(dev, "davinci"+want)}, managers...)
			if !slices.Equal(sandboxConfig(e).Devices, wantDevs) || !slices.Equal(sandboxConfig(e).DriverDirs, []string{"/usr/local/Ascend/driver"}) {
				t.Fatalf("slot %d binds %v %v, want %v", i, sandboxConfig(e).Devices, sandboxConfig(e).DriverDirs, wantDevs)
			}
		}
	}
	if base.ExtraEnv["ASCEND_RT_VISIBLE_DEVICES"] != "" || sandboxConfig(base).Devices[0] != "/dev/should-be-replaced" {
		t.Fatal("slotExecutors changed the base executor")
	}
}
