package envprobe_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/envprobe"
)

// recordedHostDev builds the /dev of an Ascend host recorded in
// internal/envprobe/testdata/recordings (real `npu-smi info` output, see
// its README for the sources): one davinci node per chip the recording
// lists, numbered by the chip's device id (the Device column on 310P, the
// Phy-ID on A3, the NPU id where an NPU is one chip), plus the manager
// nodes. It is a stand-in for an NPU host, fed with recorded data; the
// nodes are empty files, which is all discovery looks at.
func recordedHostDev(t *testing.T, recording string) (dev string, ids []int) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "envprobe", "testdata", "recordings", recording))
	if err != nil {
		t.Fatal(err)
	}
	info, err := envprobe.ParseNPUSMI(string(text))
	if err != nil {
		t.Fatal(err)
	}
	dev = t.TempDir()
	for _, c := range info.Chips {
		id := c.NPU
		switch {
		case c.DeviceID != nil:
			id = *c.DeviceID
		case c.PhyID != nil:
			id = *c.PhyID
		}
		ids = append(ids, id)
	}
	for _, n := range append(nodeNames(ids), "davinci_manager", "devmm_svm", "hisi_hdc") {
		if err := os.WriteFile(filepath.Join(dev, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(ids)
	return dev, ids
}

func nodeNames(ids []int) []string {
	var out []string
	for _, id := range ids {
		out = append(out, "davinci"+strconv.Itoa(id))
	}
	return out
}

// TestListRecordedHosts: on each recorded host every chip is one device,
// in id order (the manager nodes are not devices), and --devices picks
// and orders them or names what does not exist.
func TestListRecordedHosts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		recording string
		chips     int // as the recording's README describes the host
	}{
		{"npu-smi-info.a2-910b3-8npu.txt", 8},
		{"npu-smi-info.a3-ascend910-8npu-16chip.txt", 16},
		{"npu-smi-info.310p3-2card-4chip.txt", 4},
		{"npu-smi-info.910prob-8npu.txt", 8},
		{"npu-smi-info.910b-legacy-8npu.txt", 8},
	} {
		t.Run(tc.recording, func(t *testing.T) {
			t.Parallel()
			dev, ids := recordedHostDev(t, tc.recording)
			all, err := envprobe.List(dev, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != tc.chips {
				t.Fatalf("%d devices, want %d: %+v", len(all), tc.chips, all)
			}
			for i, d := range all {
				if d.ID != ids[i] || d.Node != filepath.Join(dev, "davinci"+strconv.Itoa(ids[i])) {
					t.Errorf("device %d: %+v, want id %d", i, d, ids[i])
				}
			}
			last, first := ids[len(ids)-1], ids[0]
			some, err := envprobe.List(dev, strconv.Itoa(last)+", "+strconv.Itoa(first))
			if err != nil || len(some) != 2 || some[0].ID != last || some[1].ID != first {
				t.Errorf("--devices %d,%d: %+v %v", last, first, some, err)
			}
			for _, bad := range []string{strconv.Itoa(last + 1), "x"} {
				if _, err := envprobe.List(dev, bad); err == nil || !strings.HasPrefix(err.Error(), "--devices") {
					t.Errorf("--devices %s: %v", bad, err)
				}
			}
		})
	}
	if _, err := envprobe.List(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "davinciN") {
		t.Errorf("no NPU nodes: %v", err)
	}
}

// TestSlotsPinOneDeviceEach: on the recorded A3 host (16 chips) slot i
// runs on the i-th chip, binds only its node plus the manager nodes, and
// sees it as logical device 0 (outside a sandbox, as its index among the
// host's chips); more slots than chips share them from the first.
func TestSlotsPinOneDeviceEach(t *testing.T) {
	t.Parallel()
	dev, ids := recordedHostDev(t, "npu-smi-info.a3-ascend910-8npu-16chip.txt")
	all, err := envprobe.List(dev, "")
	if err != nil {
		t.Fatal(err)
	}
	managers := []string{filepath.Join(dev, "davinci_manager"), filepath.Join(dev, "devmm_svm"), filepath.Join(dev, "hisi_hdc")}
	driver := []string{"/usr/local/Ascend/driver"}
	for _, slots := range []int{1, len(ids), len(ids) + 2} {
		got := envprobe.Slots(all, managers, driver, slots)
		if len(got) != slots {
			t.Fatalf("%d slots: got %d", slots, len(got))
		}
		for i, s := range got {
			id := ids[i%len(ids)]
			node := filepath.Join(dev, "davinci"+strconv.Itoa(id))
			// The sandbox binds only the slot's node, so inside it the
			// device is logical 0 whatever its physical id.
			if s.Device.ID != id || s.Env["ASCEND_RT_VISIBLE_DEVICES"] != "0" || len(s.Env) != 1 ||
				s.Unsandboxed()["ASCEND_RT_VISIBLE_DEVICES"] != strconv.Itoa(slices.Index(ids, id)) {
				t.Errorf("slot %d of %d: device %+v env %v, want id %d", i, slots, s.Device, s.Env, id)
			}
			if want := append([]string{node}, managers...); !slices.Equal(s.Nodes, want) || !slices.Equal(s.DriverDirs, driver) {
				t.Errorf("slot %d of %d binds %v %v, want %v %v", i, slots, s.Nodes, s.DriverDirs, want, driver)
			}
		}
		// Each slot owns its slices: pinning one does not move another.
		got[0].Nodes[0] = "changed"
		if slots > 1 && got[1].Nodes[0] == "changed" {
			t.Error("slots share their node lists")
		}
	}
	if envprobe.Slots(nil, managers, driver, 2) != nil {
		t.Error("slots without devices")
	}
}

func TestDriverDirsAndExisting(t *testing.T) {
	t.Parallel()
	if got := envprobe.DriverDirs(true); !slices.Equal(got, []string{"/usr/local/Ascend/driver"}) {
		t.Errorf("in an environment: %v (the environment brings its own CANN)", got)
	}
	if got := envprobe.DriverDirs(false); len(got) != 3 || got[0] != "/usr/local/Ascend/driver" {
		t.Errorf("on the host: %v", got)
	}
	dir := t.TempDir()
	have := filepath.Join(dir, "davinci_manager")
	if err := os.WriteFile(have, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := envprobe.Existing([]string{filepath.Join(dir, "devmm_svm"), have}); !slices.Equal(got, []string{have}) {
		t.Errorf("Existing: %v", got)
	}
}
