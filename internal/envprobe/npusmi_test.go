package envprobe

import (
	"strings"
	"testing"
)

func TestParseNPUSMIRecordings(t *testing.T) {
	t.Parallel()
	type chipCheck struct {
		index             int
		npu, chip         int
		phyID, deviceID   int // -1: absent
		name, health, bus string
		power             float64 // <0: nil
		hbmUsed, hbmTotal int
		memUsed, memTotal int
		aicore            int
	}
	tests := []struct {
		file         string
		driver       string
		chips, npus  int
		secondColumn string
		hasHBM       bool
		processes    []NPUProcess
		checks       []chipCheck
	}{
		{
			file: "npu-smi-info.a2-910b3-8npu.txt", driver: "25.2.0", chips: 8, npus: 8, hasHBM: true,
			processes: []NPUProcess{{NPU: 4, Chip: 0, PID: 1601114, Name: "python", MemoryMB: 18429}},
			checks: []chipCheck{
				{index: 0, npu: 0, chip: 0, phyID: -1, deviceID: -1, name: "910B3", health: "OK", bus: "0000:C1:00.0", power: 94.8, hbmUsed: 3407, hbmTotal: 65536},
				// Five-digit HBM value touching the slash.
				{index: 4, npu: 4, chip: 0, phyID: -1, deviceID: -1, name: "910B3", health: "OK", bus: "0000:01:00.0", power: 139.7, hbmUsed: 21784, hbmTotal: 65536, aicore: 25},
			},
		},
		{
			file: "npu-smi-info.a3-ascend910-8npu-16chip.txt", driver: "25.3.rc1", chips: 16, npus: 8, secondColumn: "Phy-ID", hasHBM: true,
			checks: []chipCheck{
				{index: 0, npu: 0, chip: 0, phyID: 0, deviceID: -1, name: "Ascend910", health: "OK", bus: "0000:9D:00.0", power: 166.6, hbmUsed: 3150, hbmTotal: 65536},
				// Second chip of an NPU: power "-".
				{index: 1, npu: 0, chip: 1, phyID: 1, deviceID: -1, name: "Ascend910", health: "OK", bus: "0000:9F:00.0", power: -1, hbmUsed: 2886, hbmTotal: 65536},
				{index: 8, npu: 4, chip: 0, phyID: 8, deviceID: -1, name: "Ascend910", health: "OK", bus: "0000:8D:00.0", power: 171.5, hbmUsed: 58072, hbmTotal: 65536},
				{index: 15, npu: 7, chip: 1, phyID: 15, deviceID: -1, name: "Ascend910", health: "OK", bus: "0000:83:00.0", power: -1, hbmUsed: 57132, hbmTotal: 65536},
			},
		},
		{
			file: "npu-smi-info.310p3-2card-4chip.txt", driver: "25.2.0", chips: 4, npus: 2, secondColumn: "Device", hasHBM: false,
			checks: []chipCheck{
				{index: 0, npu: 64, chip: 0, phyID: -1, deviceID: 0, name: "310P3", health: "OK", bus: "0000:03:00.0", power: -1, memUsed: 1526, memTotal: 44280},
				{index: 3, npu: 32832, chip: 1, phyID: -1, deviceID: 3, name: "310P3", health: "OK", bus: "0000:83:00.0", power: -1, memUsed: 1308, memTotal: 43693},
			},
		},
		{
			file: "npu-smi-info.910prob-8npu.txt", driver: "24.1.0", chips: 8, npus: 8, hasHBM: true,
			checks: []chipCheck{
				{index: 0, npu: 0, chip: 0, phyID: -1, deviceID: -1, name: "910ProB", health: "OK", bus: "0000:C1:00.0", power: 78.0, memUsed: 2387, memTotal: 13553, hbmUsed: 18, hbmTotal: 32768},
			},
		},
		{
			file: "npu-smi-info.910b-legacy-8npu.txt", driver: "25.5.2", chips: 8, npus: 8, hasHBM: true,
			checks: []chipCheck{
				{index: 7, npu: 7, chip: 0, phyID: -1, deviceID: -1, name: "910B", health: "OK", bus: "0000:02:00.0", power: 68.5, memUsed: 3818, memTotal: 15589, hbmUsed: 0, hbmTotal: 32768},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			info, err := ParseNPUSMI(recording(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if info.Driver != tt.driver {
				t.Errorf("driver = %q, want %q", info.Driver, tt.driver)
			}
			if len(info.Chips) != tt.chips || len(info.NPUs()) != tt.npus {
				t.Errorf("chips = %d, npus = %d; want %d, %d", len(info.Chips), len(info.NPUs()), tt.chips, tt.npus)
			}
			if info.SecondColumn != tt.secondColumn || info.HasHBM != tt.hasHBM {
				t.Errorf("second column %q, HBM %v; want %q, %v", info.SecondColumn, info.HasHBM, tt.secondColumn, tt.hasHBM)
			}
			if len(info.Unhealthy()) != 0 {
				t.Errorf("unhealthy chips: %+v", info.Unhealthy())
			}
			if tt.processes != nil {
				if len(info.Processes) != len(tt.processes) {
					t.Fatalf("processes = %+v, want %+v", info.Processes, tt.processes)
				}
				for i := range tt.processes {
					if info.Processes[i] != tt.processes[i] {
						t.Errorf("process %d = %+v, want %+v", i, info.Processes[i], tt.processes[i])
					}
				}
			}
			for _, c := range tt.checks {
				got := info.Chips[c.index]
				if got.NPU != c.npu || got.Chip != c.chip || got.Name != c.name || got.Health != c.health || got.BusID != c.bus {
					t.Errorf("chip %d = %+v, want %+v", c.index, got, c)
				}
				if gotID := intOr(got.PhyID, -1); gotID != c.phyID {
					t.Errorf("chip %d phy id = %d, want %d", c.index, gotID, c.phyID)
				}
				if gotID := intOr(got.DeviceID, -1); gotID != c.deviceID {
					t.Errorf("chip %d device id = %d, want %d", c.index, gotID, c.deviceID)
				}
				switch {
				case c.power < 0 && got.PowerW != nil:
					t.Errorf("chip %d power = %v, want none", c.index, *got.PowerW)
				case c.power >= 0 && (got.PowerW == nil || *got.PowerW != c.power):
					t.Errorf("chip %d power = %v, want %v", c.index, got.PowerW, c.power)
				}
				if got.HBMUsed != c.hbmUsed || got.HBMTotal != c.hbmTotal || got.MemUsed != c.memUsed || got.MemTotal != c.memTotal || got.AICore != c.aicore {
					t.Errorf("chip %d usage = %+v, want %+v", c.index, got, c)
				}
			}
		})
	}
}

func TestParseNPUSMIA3Processes(t *testing.T) {
	t.Parallel()
	info, err := ParseNPUSMI(recording(t, "npu-smi-info.a3-ascend910-8npu-16chip.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Processes) != 10 {
		t.Fatalf("processes = %d, want 10: %+v", len(info.Processes), info.Processes)
	}
	pids := map[int]int{}
	for _, p := range info.Processes {
		if p.Name != "" {
			t.Errorf("process %d has name %q; the recording's names are empty", p.PID, p.Name)
		}
		pids[p.PID]++
	}
	// One PID appears on both chips' rows of NPU 6.
	if pids[1756550] != 2 {
		t.Errorf("pid 1756550 rows = %d, want 2", pids[1756550])
	}
	want := NPUProcess{NPU: 7, Chip: 1, PID: 3910682, MemoryMB: 54310}
	if got := info.Processes[9]; got != want {
		t.Errorf("last process = %+v, want %+v", got, want)
	}
}

func TestParseNPUSMIErrors(t *testing.T) {
	t.Parallel()
	a2 := recording(t, "npu-smi-info.a2-910b3-8npu.txt")
	lines := strings.Split(a2, "\n")
	tests := map[string]string{
		"empty":       "",
		"no header":   strings.Join(lines[2:], "\n"),
		"not a table": "npu-smi: command not found\n",
		// Drop the second row of NPU 0: the chip is cut in half.
		"half chip":   strings.Join(append(append([]string{}, lines[:7]...), lines[8:]...), "\n"),
		"bad power":   strings.Replace(a2, "94.8", "9x.8", 1),
		"bad hbm":     strings.Replace(a2, "3407 / 65536", "3407   65536", 1),
		"header only": strings.Join(lines[:3], "\n"),
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseNPUSMI(text)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "parse npu-smi: ") {
				t.Errorf("error %q lacks context", err)
			}
		})
	}
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func TestNPUSMIUnhealthy(t *testing.T) {
	t.Parallel()
	// The A2 recording with NPU 0's health edited from OK to Warning.
	text := strings.Replace(recording(t, "npu-smi-info.a2-910b3-8npu.txt"), "| OK            | 94.8", "| Warning       | 94.8", 1)
	info, err := ParseNPUSMI(text)
	if err != nil {
		t.Fatal(err)
	}
	bad := info.Unhealthy()
	if len(bad) != 1 || bad[0].NPU != 0 || bad[0].Health != "Warning" {
		t.Errorf("unhealthy = %+v", bad)
	}
}
