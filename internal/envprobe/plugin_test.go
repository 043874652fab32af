package envprobe_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/envprobe"
)

// recordedPodDev is the /dev of a pod the Ascend device plugin gave the
// chips keep of a recorded host (Ascend Docker Runtime mounts only their
// nodes, plus the manager nodes): a fake /dev fed with the recording.
func recordedPodDev(t *testing.T, recording string, keep ...int) string {
	t.Helper()
	host, ids := recordedHostDev(t, recording)
	pod := t.TempDir()
	names := []string{"davinci_manager", "devmm_svm", "hisi_hdc"}
	for _, id := range keep {
		found := false
		for _, have := range ids {
			found = found || have == id
		}
		if !found {
			t.Fatalf("the recorded host %s has no chip %d (%v)", recording, id, ids)
		}
		names = append(names, "davinci"+strconv.Itoa(id))
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(host, n)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pod, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return pod
}

// TestDiscoverRecordedLayouts: the device a runner finds, and the logical
// id its slot's kernel gets, on recorded layouts: a pod given davinci5 of
// the recorded A2 host (ASCEND_VISIBLE_DEVICES=5), the whole 8-NPU host,
// a privileged pod that sees all nodes but was allocated two, and pods
// given none.
func TestDiscoverRecordedLayouts(t *testing.T) {
	t.Parallel()
	const a2 = "npu-smi-info.a2-910b3-8npu.txt"
	host, _ := recordedHostDev(t, a2)
	pod5 := recordedPodDev(t, a2, 5)
	empty := recordedPodDev(t, a2)
	managers := []string{"m"}
	for _, tc := range []struct {
		name, dev, plugin string
		physical          []int
		logical           []int // outside a sandbox (Device.Logical)
		err               string
	}{
		{"pod given davinci5", pod5, "5", []int{5}, []int{0}, ""},
		{"pod given davinci5, plugin variable lost", pod5, "", []int{5}, []int{0}, ""},
		{"host with 8 NPUs", host, "", []int{0, 1, 2, 3, 4, 5, 6, 7}, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"privileged pod allocated 2 and 5", host, "2,5", []int{2, 5}, []int{2, 5}, ""},
		{"plugin range", host, "4-6", []int{4, 5, 6}, []int{4, 5, 6}, ""},
		{"pod given none", empty, "", nil, nil, "ASCEND_VISIBLE_DEVICES is not set"},
		{"plugin allocated a device the pod lacks", empty, "5", nil, nil, "ASCEND_VISIBLE_DEVICES=5 names device 5, but there is no"},
		{"malformed plugin variable", pod5, "Ascend910-5", nil, nil, "is not a device id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			devs, err := envprobe.ListVisible(tc.dev, tc.plugin, "")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(devs) != len(tc.physical) {
				t.Fatalf("%+v %v, want %v", devs, err, tc.physical)
			}
			slots := envprobe.Slots(devs, managers, nil, len(devs))
			pins := envprobe.Pins(slots, true)
			free := envprobe.Pins(slots, false)
			for i, d := range devs {
				if d.ID != tc.physical[i] || d.Logical != tc.logical[i] || d.Node != filepath.Join(tc.dev, "davinci"+strconv.Itoa(d.ID)) {
					t.Errorf("device %d: %+v, want physical %d logical %d", i, d, tc.physical[i], tc.logical[i])
				}
				s := slots[i]
				if s.Env["ASCEND_RT_VISIBLE_DEVICES"] != "0" || s.Nodes[0] != d.Node || len(s.Nodes) != 2 {
					t.Errorf("slot %d: env %v nodes %v: its sandbox binds one device, logical 0", i, s.Env, s.Nodes)
				}
				if pins[i] != (envprobe.SlotPin{Slot: i, Physical: d.ID, Logical: 0, Node: d.Node}) || free[i].Logical != tc.logical[i] {
					t.Errorf("pins %+v / unsandboxed %+v", pins[i], free[i])
				}
			}
		})
	}
	devs, _ := envprobe.ListVisible(pod5, "5", "")
	line := envprobe.PinLine(envprobe.Pins(envprobe.Slots(devs, nil, nil, 1), true)[0], "5")
	want := "slot 0: logical NPU 0 (ASCEND_RT_VISIBLE_DEVICES=0 in its kernel) = physical device 5, " + filepath.Join(pod5, "davinci5") + " (from ASCEND_VISIBLE_DEVICES=5)"
	if line != want {
		t.Errorf("pin line\n%s\nwant\n%s", line, want)
	}
	if _, err := envprobe.ListVisible(host, "2,5", "3"); err == nil || !strings.Contains(err.Error(), "among ASCEND_VISIBLE_DEVICES=2,5") {
		t.Errorf("--devices outside the allocation: %v", err)
	}
	if ids, err := envprobe.ParseVisibleDevices("0-2, 7,1"); err != nil || len(ids) != 4 || ids[3] != 7 {
		t.Errorf("parse: %v %v", ids, err)
	}
}
