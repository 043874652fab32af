package envprobe

// Device discovery: the Ascend NPUs a runner's host offers (its
// /dev/davinciN nodes), and runner slots pinned to them: which device
// nodes and driver directories a slot's kernel gets bound into its
// sandbox, and the ASCEND_RT_VISIBLE_DEVICES it sees. An NPU runs one
// notebook's graphs at a time, so a runner defaults to one slot per
// device.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ManagerNodes are the Ascend control nodes every NPU job needs besides
// its own /dev/davinciN.
var ManagerNodes = []string{"/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"}

// driverDirs are the host directories an NPU job binds read-only: the
// driver first, then the host's CANN toolkit.
var driverDirs = []string{"/usr/local/Ascend/driver", "/usr/local/Ascend/ascend-toolkit", "/usr/local/Ascend/cann"}

// DriverDirs is what an NPU job binds from the host: the driver, and the
// host's CANN toolkit only when the kernels run on the host (a grading
// environment brings its own, the image's).
func DriverDirs(inEnvironment bool) []string {
	if inEnvironment {
		return slices.Clone(driverDirs[:1])
	}
	return slices.Clone(driverDirs)
}

// Device is one NPU as the runner's host sees it: /dev/davinci<ID>.
type Device struct {
	ID   int
	Node string
}

// List finds the /dev/davinciN nodes under dev, in id order, keeping only
// the ids in only (the --devices flag: "0,3"; empty keeps all, in the
// order given).
func List(dev, only string) ([]Device, error) {
	nodes, _ := filepath.Glob(filepath.Join(dev, "davinci[0-9]*"))
	byID := map[int]string{}
	for _, n := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(n), "davinci"))
		if err == nil {
			byID[id] = n
		}
	}
	var ids []int
	if only == "" {
		for id := range byID {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	} else {
		for _, f := range strings.Split(only, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("--devices: %q is not a device id", f)
			}
			if _, ok := byID[id]; !ok {
				return nil, fmt.Errorf("--devices: %s does not exist", filepath.Join(dev, "davinci"+strconv.Itoa(id)))
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("the environment report shows an NPU, but there is no %s", filepath.Join(dev, "davinciN"))
	}
	out := make([]Device, len(ids))
	for i, id := range ids {
		out[i] = Device{ID: id, Node: byID[id]}
	}
	return out, nil
}

// Slot is what one runner slot's kernel gets of the host's NPUs.
type Slot struct {
	Device Device
	// Nodes are the device nodes bound into its sandbox: its own device
	// first, then the manager nodes.
	Nodes []string
	// DriverDirs are bound read-only at the same path.
	DriverDirs []string
	// Env is added to the kernel's environment: ASCEND_RT_VISIBLE_DEVICES.
	Env map[string]string
}

// Slots pins slot i to device i (modulo the device count: with more slots
// than devices, slots share them). managers and driverDirs are the nodes
// and directories that exist on this host (see Existing).
func Slots(devices []Device, managers, driverDirs []string, slots int) []Slot {
	if len(devices) == 0 {
		return nil
	}
	out := make([]Slot, slots)
	for i := range out {
		d := devices[i%len(devices)]
		out[i] = Slot{
			Device:     d,
			Nodes:      append([]string{d.Node}, managers...),
			DriverDirs: slices.Clone(driverDirs),
			Env:        map[string]string{"ASCEND_RT_VISIBLE_DEVICES": strconv.Itoa(d.ID)},
		}
	}
	return out
}

// Existing keeps the paths that exist on this host.
func Existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
