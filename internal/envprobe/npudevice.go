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

// Device is one NPU as the runner sees it: /dev/davinci<ID>.
type Device struct {
	// ID is the physical id, the N of /dev/davinciN (what npu-smi and
	// the device plugin's ASCEND_VISIBLE_DEVICES call the device).
	ID   int
	Node string
	// Logical is CANN's logical id of the device for a process that sees
	// every device node the runner sees: its index among them, in id
	// order (0 in a pod given one device, whatever its physical id).
	Logical int
}

// List finds the /dev/davinciN nodes under dev, in id order, keeping only
// the ids in only (the --devices flag: "0,3"; empty keeps all, in the
// order given). It is ListVisible with no device plugin.
func List(dev, only string) ([]Device, error) { return ListVisible(dev, "", only) }

// deviceNodes maps the physical ids of the davinci nodes under dev to
// their paths, and returns the ids in order.
func deviceNodes(dev string) (map[int]string, []int) {
	nodes, _ := filepath.Glob(filepath.Join(dev, "davinci[0-9]*"))
	byID := map[int]string{}
	var ids []int
	for _, n := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(n), "davinci"))
		if err == nil {
			byID[id] = n
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return byID, ids
}

// ListVisible is List in a container the Ascend device plugin set up:
// plugin is its ASCEND_VISIBLE_DEVICES (physical ids, "5" or "0-3,6";
// empty: not set, every node under dev is the runner's). Each id it
// names must have its node under dev; the devices are those ids, then
// only picks among them as in List. Logical ids are counted over every
// davinci node under dev, which is what the driver enumerates.
func ListVisible(dev, plugin, only string) ([]Device, error) {
	byID, all := deviceNodes(dev)
	logical := map[int]int{}
	for i, id := range all {
		logical[id] = i
	}
	ids := all
	if strings.TrimSpace(plugin) != "" {
		given, err := ParseVisibleDevices(plugin)
		if err != nil {
			return nil, err
		}
		for _, id := range given {
			if _, ok := byID[id]; !ok {
				return nil, fmt.Errorf("%s=%s names device %d, but there is no %s: the container was not given the device the plugin allocated",
					PluginVisibleDevices, plugin, id, filepath.Join(dev, "davinci"+strconv.Itoa(id)))
			}
		}
		ids = given
	}
	if only != "" {
		var picked []int
		for _, f := range strings.Split(only, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("--devices: %q is not a device id", f)
			}
			if !slices.Contains(ids, id) {
				return nil, fmt.Errorf("--devices: %s does not exist%s", filepath.Join(dev, "davinci"+strconv.Itoa(id)), pluginNote(plugin))
			}
			picked = append(picked, id)
		}
		ids = picked
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no NPU: there is no %s%s", filepath.Join(dev, "davinciN"), pluginNote(plugin))
	}
	out := make([]Device, len(ids))
	for i, id := range ids {
		out[i] = Device{ID: id, Node: byID[id], Logical: logical[id]}
	}
	return out, nil
}

func pluginNote(plugin string) string {
	if strings.TrimSpace(plugin) == "" {
		return " (" + PluginVisibleDevices + " is not set: no device plugin allocated one)"
	}
	return " among " + PluginVisibleDevices + "=" + plugin
}

// PluginVisibleDevices is the variable the Ascend device plugin (MindX
// DL / MindCluster) sets in a container for the chips it allocated,
// physical ids, and Ascend Docker Runtime mounts exactly those
// /dev/davinciN nodes into it ("使用ASCEND_VISIBLE_DEVICES环境变量指定被挂载至容器中的NPU设备，
// 使用设备序号指定设备，支持单个和范围指定且支持混用": Ascend Docker Runtime
// user guide, https://www.hiascend.com/doc_center/source/zh/mindx-dl/500/dockerruntime/dockerruntimeug/dlruntime_ug_013.html).
const PluginVisibleDevices = "ASCEND_VISIBLE_DEVICES"

// RuntimeVisibleDevices restricts which devices a process's CANN runtime
// uses. CANN documents its values as *logical* ids of the devices the
// process can see, in ascending order, renumbered from 0 for the
// process ("Device ID indicates the logical ID of the Ascend AI
// Processor ... ASCEND_RT_VISIBLE_DEVICES to 1: ... The number of
// available devices is 1, and its index value is 0": CANN 8.5.0
// environment variable reference,
// https://www.hiascend.com/document/detail/en/canncommercial/850/maintenref/envvar/envref_07_0028.html;
// the same in 9.0.0,
// https://www.hiascend.com/document/detail/zh/canncommercial/latest/maintenref/envvar/envref_07_0028.html).
// A physical id is therefore wrong wherever the process does not see
// every device of the host: in a pod given davinci5 alone, and in a slot's
// sandbox, which binds only its own node.
const RuntimeVisibleDevices = "ASCEND_RT_VISIBLE_DEVICES"

// ParseVisibleDevices reads ASCEND_VISIBLE_DEVICES: ids and ranges,
// comma-separated ("0-3,6"), in ascending order without repeats.
func ParseVisibleDevices(v string) ([]int, error) {
	var ids []int
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%s=%q: %q is not a device id or a range such as 0-3", PluginVisibleDevices, v, f)
		}
		for id := a; id <= b; id++ {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Slot is what one runner slot's kernel gets of the runner's NPUs.
type Slot struct {
	Device Device
	// Nodes are the device nodes bound into its sandbox: its own device
	// first, then the manager nodes.
	Nodes []string
	// DriverDirs are bound read-only at the same path.
	DriverDirs []string
	// Env is added to the kernel's environment in its sandbox:
	// ASCEND_RT_VISIBLE_DEVICES=0, the logical id of the one device node
	// the sandbox binds (see RuntimeVisibleDevices).
	Env map[string]string
}

// Unsandboxed is Env for a kernel that runs outside a sandbox and so
// sees every device node the runner sees: the device's logical id among
// them.
func (s Slot) Unsandboxed() map[string]string {
	return map[string]string{RuntimeVisibleDevices: strconv.Itoa(s.Device.Logical)}
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
			Env:        map[string]string{RuntimeVisibleDevices: "0"},
		}
	}
	return out
}

// SlotPin is one slot's device as a runner reports it (--probe, its
// registration): the physical device and the logical id its kernel is
// given.
type SlotPin struct {
	Slot     int    `json:"slot"`
	Physical int    `json:"physical"`
	Logical  int    `json:"logical"`
	Node     string `json:"node"`
}

// Pins describes slots for a report.
func Pins(slots []Slot, sandboxed bool) []SlotPin {
	out := make([]SlotPin, len(slots))
	for i, s := range slots {
		logical := 0
		if !sandboxed {
			logical = s.Device.Logical
		}
		out[i] = SlotPin{Slot: i, Physical: s.Device.ID, Logical: logical, Node: s.Device.Node}
	}
	return out
}

// PinLine says in words what slot pin p runs on.
func PinLine(p SlotPin, plugin string) string {
	from := "every device node the runner sees"
	if strings.TrimSpace(plugin) != "" {
		from = PluginVisibleDevices + "=" + plugin
	}
	return fmt.Sprintf("slot %d: logical NPU %d (%s=%d in its kernel) = physical device %d, %s (from %s)",
		p.Slot, p.Logical, RuntimeVisibleDevices, p.Logical, p.Physical, p.Node, from)
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
