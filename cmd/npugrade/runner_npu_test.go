package main

import (
	"slices"
	"testing"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// TestNPUSlotsPinOneDeviceEach: slot i's executor runs on the i-th pinned
// device: ASCEND_RT_VISIBLE_DEVICES=<its id> in the kernel's environment
// and only its /dev/davinciN (plus the manager nodes) bound into the
// sandbox; the base executor is left as it was. (Device discovery and
// pinning are internal/envprobe's, tested there on recorded hosts.)
func TestNPUSlotsPinOneDeviceEach(t *testing.T) {
	t.Parallel()
	devs := []envprobe.Device{{ID: 0, Node: "/dev/davinci0"}, {ID: 1, Node: "/dev/davinci1"}, {ID: 3, Node: "/dev/davinci3"}}
	managers := []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}
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
		exs := slotExecutors(base, envprobe.Slots(devs, managers, []string{"/usr/local/Ascend/driver"}, tc.slots))
		if len(exs) != tc.slots {
			t.Fatalf("%d slots: %d executors", tc.slots, len(exs))
		}
		for i, e := range exs {
			want := tc.devices[i]
			if e.ExtraEnv["ASCEND_RT_VISIBLE_DEVICES"] != want || e.ExtraEnv["KEEP"] != "1" || e.Profile != "npu-a2" {
				t.Fatalf("slot %d env: %v", i, e.ExtraEnv)
			}
			wantDevs := append([]string{"/dev/davinci" + want}, managers...)
			if !slices.Equal(sandboxConfig(e).Devices, wantDevs) || !slices.Equal(sandboxConfig(e).DriverDirs, []string{"/usr/local/Ascend/driver"}) {
				t.Fatalf("slot %d binds %v %v, want %v", i, sandboxConfig(e).Devices, sandboxConfig(e).DriverDirs, wantDevs)
			}
		}
	}
	if base.ExtraEnv["ASCEND_RT_VISIBLE_DEVICES"] != "" || sandboxConfig(base).Devices[0] != "/dev/should-be-replaced" {
		t.Fatal("slotExecutors changed the base executor")
	}
}
