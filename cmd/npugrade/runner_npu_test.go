package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// TestNPUSlotsPinOneDeviceEach: slot i's executor runs on the i-th pinned
// device: only its /dev/davinciN (plus the manager nodes) bound into the
// sandbox, so ASCEND_RT_VISIBLE_DEVICES=0 (CANN's logical id of the one
// device the kernel sees) in the kernel's environment; without the
// sandbox the kernel sees every node and gets the device's logical id
// among them; the base executor is left as it was. (Device discovery and
// pinning are internal/envprobe's, tested there on recorded hosts.)
func TestNPUSlotsPinOneDeviceEach(t *testing.T) {
	t.Parallel()
	devs := []envprobe.Device{{ID: 0, Node: "/dev/davinci0"}, {ID: 1, Node: "/dev/davinci1", Logical: 1}, {ID: 3, Node: "/dev/davinci3", Logical: 2}}
	managers := []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}
	base := &execution.Executor{Profile: "npu-a2", ExtraEnv: map[string]string{"KEEP": "1"},
		Isolation: &sandbox.Config{Mode: sandbox.ModeBwrap, Devices: []string{"/dev/should-be-replaced"}}}
	tests := []struct {
		slots   int
		devices []string // the device node per slot
		logical []string // ASCEND_RT_VISIBLE_DEVICES per slot without the sandbox
	}{
		{3, []string{"0", "1", "3"}, []string{"0", "1", "2"}},
		{1, []string{"0"}, []string{"0"}},
		{4, []string{"0", "1", "3", "0"}, []string{"0", "1", "2", "0"}}, // more slots than NPUs share devices
	}
	for _, tc := range tests {
		exs := slotExecutors(base, envprobe.Slots(devs, managers, []string{"/usr/local/Ascend/driver"}, tc.slots))
		if len(exs) != tc.slots {
			t.Fatalf("%d slots: %d executors", tc.slots, len(exs))
		}
		for i, e := range exs {
			want := tc.devices[i]
			if e.ExtraEnv["ASCEND_RT_VISIBLE_DEVICES"] != "0" || e.ExtraEnv["KEEP"] != "1" || e.Profile != "npu-a2" {
				t.Fatalf("slot %d env: %v", i, e.ExtraEnv)
			}
			wantDevs := append([]string{"/dev/davinci" + want}, managers...)
			if !slices.Equal(sandboxConfig(e).Devices, wantDevs) || !slices.Equal(sandboxConfig(e).DriverDirs, []string{"/usr/local/Ascend/driver"}) {
				t.Fatalf("slot %d binds %v %v, want %v", i, sandboxConfig(e).Devices, sandboxConfig(e).DriverDirs, wantDevs)
			}
		}
		none := *base
		none.Isolation = &sandbox.Config{Mode: sandbox.ModeNone}
		for i, e := range slotExecutors(&none, envprobe.Slots(devs, managers, nil, tc.slots)) {
			if got := e.ExtraEnv["ASCEND_RT_VISIBLE_DEVICES"]; got != tc.logical[i] {
				t.Fatalf("slot %d unsandboxed: ASCEND_RT_VISIBLE_DEVICES=%s, want %s", i, got, tc.logical[i])
			}
		}
	}
	if base.ExtraEnv["ASCEND_RT_VISIBLE_DEVICES"] != "" || sandboxConfig(base).Devices[0] != "/dev/should-be-replaced" {
		t.Fatal("slotExecutors changed the base executor")
	}
}

// fakeRecordedDev is a fake /dev built from the recorded A2 host
// (internal/envprobe/testdata/recordings/npu-smi-info.a2-910b3-8npu.txt:
// 8 NPUs, ids 0-7) as a pod sees it: the chips it was given, and the
// manager nodes. The nodes are empty files, which is all discovery reads.
func fakeRecordedDev(t *testing.T, chips ...int) string {
	t.Helper()
	dev := t.TempDir()
	names := []string{"davinci_manager", "devmm_svm", "hisi_hdc"}
	for _, c := range chips {
		if c < 0 || c > 7 {
			t.Fatalf("the recorded A2 host has chips 0-7, not %d", c)
		}
		names = append(names, "davinci"+strconv.Itoa(c))
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dev
}

// TestRunnerProbeInPluginPod: `npugrade runner --probe` in a pod the
// device plugin gave davinci5 (ASCEND_VISIBLE_DEVICES=5) pins its slot to
// logical device 0 and says it is physical device 5, in its report and on
// stderr; a runner whose profile needs an NPU and that was given none
// refuses to start, naming the fix.
func TestRunnerProbeInPluginPod(t *testing.T) {
	t.Setenv("ASCEND_VISIBLE_DEVICES", "5")
	dev := fakeRecordedDev(t, 5)
	var out, errb strings.Builder
	code := cmdRunner(context.Background(), []string{"--probe", "--env", "host", "--profile", "npu-a2", "--dev-root", dev}, &out, &errb)
	var rep envprobe.Report
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil || code == exitError {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	want := []envprobe.SlotPin{{Slot: 0, Physical: 5, Logical: 0, Node: filepath.Join(dev, "davinci5")}}
	if !slices.Equal(rep.NPUSlots, want) || rep.VisibleDevices != "5" {
		t.Errorf("report pins %+v (visible %q), want %+v", rep.NPUSlots, rep.VisibleDevices, want)
	}
	if !strings.Contains(errb.String(), "slot 0: logical NPU 0 (ASCEND_RT_VISIBLE_DEVICES=0 in its kernel) = physical device 5") {
		t.Errorf("stderr does not say the pinning:\n%s", errb.String())
	}

	for _, tc := range []struct{ plugin, want string }{
		{"", "ASCEND_VISIBLE_DEVICES is not set"},
		{"5", "ASCEND_VISIBLE_DEVICES=5 names device 5, but there is no"},
	} {
		t.Setenv("ASCEND_VISIBLE_DEVICES", tc.plugin)
		errb.Reset()
		code := cmdRunner(context.Background(), []string{"--server", "http://127.0.0.1:1", "--token", "x", "--env", "host",
			"--profile", "npu-a2", "--dev-root", fakeRecordedDev(t)}, io.Discard, &errb)
		if code != exitError || !strings.Contains(errb.String(), "profile npu-a2 needs an NPU, but this runner was given none") ||
			!strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), "huawei.com/Ascend910") {
			t.Errorf("ASCEND_VISIBLE_DEVICES=%q, no device: exit %d\n%s", tc.plugin, code, errb.String())
		}
	}
}
