package envprobe

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// NPUSMIInfo is what `npu-smi info` says about a host.
type NPUSMIInfo struct {
	// Driver is the version in the `npu-smi X  Version: X` header. It is the
	// NPU driver's version, not CANN's: the two are released separately and
	// a host with driver 25.2.0 may run CANN 8.3.RC1 or 8.5.0.
	Driver string `json:"driver"`
	// SecondColumn names the number that follows the chip id in the second
	// row of each chip: "Phy-ID" on A3 (two chips per NPU), "Device" on 310P,
	// "" on A2 and first-generation 910 hosts.
	SecondColumn string       `json:"second_column,omitempty"`
	HasHBM       bool         `json:"has_hbm"` // the table has an HBM-Usage column (310P has none)
	Chips        []NPUChip    `json:"chips"`
	Processes    []NPUProcess `json:"processes"`
}

// NPUChip is one chip row pair of the device table.
type NPUChip struct {
	NPU      int      `json:"npu"`
	Chip     int      `json:"chip"`
	PhyID    *int     `json:"phy_id,omitempty"`    // A3 layout
	DeviceID *int     `json:"device_id,omitempty"` // 310P layout
	Name     string   `json:"name"`                // as npu-smi prints it: "910B3", "Ascend910", "310P3"
	Health   string   `json:"health"`
	PowerW   *float64 `json:"power_w,omitempty"` // nil when npu-smi prints "-" (A3 second chip) or "NA" (310P)
	TempC    int      `json:"temp_c"`
	BusID    string   `json:"bus_id"`
	AICore   int      `json:"aicore_percent"`
	MemUsed  int      `json:"memory_used_mb"`
	MemTotal int      `json:"memory_total_mb"`
	HBMUsed  int      `json:"hbm_used_mb"`
	HBMTotal int      `json:"hbm_total_mb"`
}

// NPUProcess is one row of the process table.
type NPUProcess struct {
	NPU      int    `json:"npu"`
	Chip     int    `json:"chip"`
	PID      int    `json:"pid"`
	Name     string `json:"name"` // may be empty (seen on A3 hosts)
	MemoryMB int    `json:"memory_mb"`
}

// NPUs returns the distinct NPU ids in table order.
func (i NPUSMIInfo) NPUs() []int {
	var ids []int
	for _, c := range i.Chips {
		if !slices.Contains(ids, c.NPU) {
			ids = append(ids, c.NPU)
		}
	}
	return ids
}

// Unhealthy returns the chips whose Health is not "OK".
func (i NPUSMIInfo) Unhealthy() []NPUChip {
	var out []NPUChip
	for _, c := range i.Chips {
		if c.Health != "OK" {
			out = append(out, c)
		}
	}
	return out
}

var (
	smiHeaderRE = regexp.MustCompile(`npu-smi\s+(\S+)\s+Version:\s*(\S+)`)
	// A used/total pair. Five-digit values touch the slash ("21784/ 65536"),
	// so whitespace on either side is optional.
	smiPairRE = regexp.MustCompile(`(\d+)\s*/\s*(\d+)`)
)

type smiSection int

const (
	smiNone smiSection = iota
	smiDevices
	smiProcesses
)

// ParseNPUSMI parses the text of `npu-smi info`. It understands the 98-column
// A2/A3/first-generation-910 layout and the 106-column 310P layout, including
// the A3 `Chip  Phy-ID` two-chip rows. Rows are read by splitting on "|", not
// by column offsets, because the widths differ between products and versions.
func ParseNPUSMI(text string) (NPUSMIInfo, error) {
	info, err := parseNPUSMI(text)
	if err != nil {
		return NPUSMIInfo{}, fmt.Errorf("parse npu-smi: %w", err)
	}
	return info, nil
}

func parseNPUSMI(text string) (NPUSMIInfo, error) {
	info := NPUSMIInfo{Chips: []NPUChip{}, Processes: []NPUProcess{}}
	var (
		section   smiSection
		hasMemory bool
		pending   *NPUChip // first row of a chip seen, waiting for the second
		sawHeader bool
	)
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for n, raw := range lines {
		line := strings.TrimSpace(raw)
		lineErr := func(format string, args ...any) error {
			return fmt.Errorf("line %d %q: %s", n+1, line, fmt.Sprintf(format, args...))
		}
		if line == "" {
			continue
		}
		if !sawHeader {
			if m := smiHeaderRE.FindStringSubmatch(line); m != nil {
				info.Driver = m[2]
				sawHeader = true
			}
			continue
		}
		if strings.HasPrefix(line, "+") {
			// A separator ends a chip; a chip cut in half is a format we do
			// not understand.
			if pending != nil {
				return NPUSMIInfo{}, lineErr("chip of NPU %d has only one row", pending.NPU)
			}
			continue
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := splitCells(line)
		if len(cells) == 0 {
			continue
		}
		first := strings.Fields(cells[0])
		switch {
		case len(first) >= 2 && first[0] == "NPU" && first[1] == "Name":
			section = smiDevices
			continue
		case len(first) >= 1 && first[0] == "NPU" && len(cells) >= 2 && strings.HasPrefix(cells[1], "Process"):
			section = smiProcesses
			continue
		case len(first) >= 1 && first[0] == "Chip" && section == smiDevices:
			if len(first) >= 2 {
				info.SecondColumn = first[1]
			}
			if len(cells) >= 3 {
				hasMemory = strings.Contains(cells[2], "Memory-Usage")
				info.HasHBM = strings.Contains(cells[2], "HBM-Usage")
			}
			continue
		}
		switch section {
		case smiDevices:
			if pending == nil {
				c, err := parseChipFirstRow(cells)
				if err != nil {
					return NPUSMIInfo{}, lineErr("%v", err)
				}
				pending = &c
				continue
			}
			if err := parseChipSecondRow(pending, cells, info.SecondColumn, hasMemory, info.HasHBM); err != nil {
				return NPUSMIInfo{}, lineErr("%v", err)
			}
			info.Chips = append(info.Chips, *pending)
			pending = nil
		case smiProcesses:
			if strings.HasPrefix(cells[0], "No running processes") {
				continue
			}
			p, err := parseProcessRow(cells)
			if err != nil {
				return NPUSMIInfo{}, lineErr("%v", err)
			}
			info.Processes = append(info.Processes, p)
		}
	}
	switch {
	case !sawHeader:
		return NPUSMIInfo{}, errors.New(`no "npu-smi <version>  Version: <version>" header`)
	case pending != nil:
		return NPUSMIInfo{}, fmt.Errorf("table ends inside the rows of NPU %d", pending.NPU)
	case section == smiNone:
		return NPUSMIInfo{}, errors.New("no device table after the header")
	}
	return info, nil
}

// splitCells splits "| a | b |" into trimmed cells, keeping empty inner cells
// (process names can be blank).
func splitCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	parts := strings.Split(line, "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// parseChipFirstRow reads "| 0     910B3 | OK | 94.8  36  0 / 0 |".
func parseChipFirstRow(cells []string) (NPUChip, error) {
	if len(cells) < 3 {
		return NPUChip{}, fmt.Errorf("want 3 cells in the first chip row, got %d", len(cells))
	}
	head := strings.Fields(cells[0])
	if len(head) < 2 {
		return NPUChip{}, errors.New("want NPU id and name")
	}
	npu, err := strconv.Atoi(head[0])
	if err != nil {
		return NPUChip{}, fmt.Errorf("NPU id: %w", err)
	}
	c := NPUChip{NPU: npu, Name: strings.Join(head[1:], " "), Health: cells[1]}
	stats := strings.Fields(cells[2])
	if len(stats) < 2 {
		return NPUChip{}, errors.New("want power and temperature")
	}
	if p, err := strconv.ParseFloat(stats[0], 64); err == nil {
		c.PowerW = &p
	} else if stats[0] != "-" && stats[0] != "NA" {
		return NPUChip{}, fmt.Errorf("power %q: %w", stats[0], err)
	}
	if c.TempC, err = strconv.Atoi(stats[1]); err != nil {
		return NPUChip{}, fmt.Errorf("temperature: %w", err)
	}
	return c, nil
}

// parseChipSecondRow reads "| 0  [phy/device] | 0000:C1:00.0 | 0  0 / 0  3407 / 65536 |".
func parseChipSecondRow(c *NPUChip, cells []string, secondColumn string, hasMemory, hasHBM bool) error {
	if len(cells) < 3 {
		return fmt.Errorf("want 3 cells in the second chip row, got %d", len(cells))
	}
	head := strings.Fields(cells[0])
	if len(head) < 1 {
		return errors.New("want chip id")
	}
	var err error
	if c.Chip, err = strconv.Atoi(head[0]); err != nil {
		return fmt.Errorf("chip id: %w", err)
	}
	if len(head) >= 2 {
		id, err := strconv.Atoi(head[1])
		if err != nil {
			return fmt.Errorf("%s: %w", secondColumn, err)
		}
		switch secondColumn {
		case "Device":
			c.DeviceID = &id
		default:
			c.PhyID = &id
		}
	}
	c.BusID = cells[1]
	stats := cells[2]
	fields := strings.Fields(stats)
	if len(fields) == 0 {
		return errors.New("want AICore usage")
	}
	if fields[0] != "-" && fields[0] != "NA" {
		if c.AICore, err = strconv.Atoi(fields[0]); err != nil {
			return fmt.Errorf("AICore: %w", err)
		}
	}
	pairs := smiPairRE.FindAllStringSubmatch(stats, -1)
	want := 0
	if hasMemory {
		want++
	}
	if hasHBM {
		want++
	}
	if len(pairs) != want {
		return fmt.Errorf("want %d used/total pairs, got %d", want, len(pairs))
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n } // the regexp admits digits only
	i := 0
	if hasMemory {
		c.MemUsed, c.MemTotal = atoi(pairs[i][1]), atoi(pairs[i][2])
		i++
	}
	if hasHBM {
		c.HBMUsed, c.HBMTotal = atoi(pairs[i][1]), atoi(pairs[i][2])
	}
	return nil
}

// parseProcessRow reads "| 4   0 | 1601114 | python | 18429 |".
func parseProcessRow(cells []string) (NPUProcess, error) {
	if len(cells) < 4 {
		return NPUProcess{}, fmt.Errorf("want 4 cells in a process row, got %d", len(cells))
	}
	head := strings.Fields(cells[0])
	if len(head) != 2 {
		return NPUProcess{}, errors.New("want NPU and chip ids")
	}
	var p NPUProcess
	var err error
	if p.NPU, err = strconv.Atoi(head[0]); err != nil {
		return NPUProcess{}, fmt.Errorf("NPU id: %w", err)
	}
	if p.Chip, err = strconv.Atoi(head[1]); err != nil {
		return NPUProcess{}, fmt.Errorf("chip id: %w", err)
	}
	if p.PID, err = strconv.Atoi(cells[1]); err != nil {
		return NPUProcess{}, fmt.Errorf("pid: %w", err)
	}
	p.Name = cells[2]
	if p.MemoryMB, err = strconv.Atoi(cells[3]); err != nil {
		return NPUProcess{}, fmt.Errorf("process memory: %w", err)
	}
	return p, nil
}
