package envprobe

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// The embedded table must say exactly what the source table says.
// testdata/version-table.seed.txt is a copy of the project's seed document
// holding the TorchAir version table (tab-separated).
func TestVersionTableMatchesSeed(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "version-table.seed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want []Row
	release := regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	for _, line := range strings.Split(string(data), "\n") {
		cols := strings.Split(strings.TrimRight(line, "\r"), "\t")
		if len(cols) != 6 || !release.MatchString(cols[0]) {
			continue
		}
		var py []string
		for _, p := range strings.Split(cols[5], "/") {
			p = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(p), "Python"), ".x")
			py = append(py, p)
		}
		want = append(want, Row{TorchAir: cols[0], TorchNPU: cols[1], TorchNPUBranch: cols[2], Torch: cols[3], CANN: cols[4], Python: py})
	}
	if len(want) != 18 {
		t.Fatalf("seed rows = %d, want 18", len(want))
	}
	if got := Table().Rows; !reflect.DeepEqual(got, want) {
		t.Errorf("embedded rows differ from the seed:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseVersionTableRejects(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"syntax":       `{`,
		"duplicate":    `{"rows":[{"torchair":"7.3.0","torch_npu":"2.9.0","torch":"2.9.0","cann":"8.5.0"},{"torchair":"7.3.0","torch_npu":"2.9.0","torch":"2.9.0","cann":"8.5.0"}]}`,
		"torch base":   `{"rows":[{"torchair":"7.3.0","torch_npu":"2.9.0","torch":"2.8.0","cann":"8.5.0"}]}`,
		"cann suffix":  `{"rows":[{"torchair":"7.3.0","torch_npu":"2.9.0","torch":"2.9.0","cann":"8.5.0.B1"}]}`,
		"bad release":  `{"rows":[{"torchair":"seven","torch_npu":"2.9.0","torch":"2.9.0","cann":"8.5.0"}]}`,
		"bad pattern":  `{"products":[{"product":"A2","pattern":"("}]}`,
		"feature prod": `{"features":[{"name":"x","since":"7.3.0","products":["A9"]}]}`,
		"feature rel":  `{"features":[{"name":"x","since":"soon"}]}`,
	} {
		if _, err := parseVersionTable([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLookupTorchNPU(t *testing.T) {
	t.Parallel()
	tests := []struct {
		torchNPU, release, cann string
		found                   bool
	}{
		{"2.9.0.post2", "26.0.0", "9.0.0", true},
		{"2.9.0", "7.3.0", "8.5.0", true}, // not 26.0.0: exact match only
		{"2.8.0", "7.2.0", "8.3.RC1", true},
		{"2.8.0.post2", "7.3.0", "8.5.0", true},
		{"2.8.0.post4", "26.0.0", "9.0.0", true},
		{"2.1.0.post17", "7.2.0", "8.3.RC1", true},
		{"2.1.0.post12", "7.0.0", "8.1.RC1", true},
		{"2.1.0.post3", "", "", false}, // recorded on a real host, not in the table
		{"2.10.0", "", "", false},      // recorded on a real host, not in the table
		{"2.9.0.post1", "", "", false}, // between rows
		{"2.9.0.dev20260101", "", "", false},
		{"2.9.0+cpu", "", "", false},
	}
	for _, tt := range tests {
		row, found := Table().LookupTorchNPU(tt.torchNPU)
		if found != tt.found || row.TorchAir != tt.release || row.CANN != tt.cann {
			t.Errorf("LookupTorchNPU(%s) = %+v, %v", tt.torchNPU, row, found)
		}
	}
}

func TestMatchProduct(t *testing.T) {
	t.Parallel()
	tests := []struct{ device, product string }{
		{"Ascend910B1", "A2"},
		{"Ascend910B2", "A2"},
		{"Ascend910B2C", "A2"},
		{"Ascend910B3", "A2"},
		{"Ascend910B4", "A2"},
		{"Ascend910B4_1", "A2"},
		{"Ascend910_9391", "A3"},
		{"Ascend910_9381", "A3"},
		{"Ascend950DT_9582", "950"},
		{"Ascend950PR_9599", "950"},
		{"Ascend910B", ""},    // first-generation 910 (soc_version 104), not A2
		{"Ascend910ProB", ""}, // first-generation
		{"Ascend910A", ""},
		{"Ascend910", ""}, // what npu-smi prints on A3: not enough to tell
		{"Ascend310P3", ""},
		{"Ascend950", ""},
		{"910B3", ""}, // npu-smi spelling; Collect adds the prefix
		{"", ""},
	}
	for _, tt := range tests {
		p, ok := Table().MatchProduct(tt.device)
		if p.Product != tt.product || ok != (tt.product != "") {
			t.Errorf("MatchProduct(%q) = %q, %v; want %q", tt.device, p.Product, ok, tt.product)
		}
	}
	// Names as the recorded npu-smi tables print them.
	for file, want := range map[string]string{
		"npu-smi-info.a2-910b3-8npu.txt":            "A2",
		"npu-smi-info.910b-legacy-8npu.txt":         "",
		"npu-smi-info.910prob-8npu.txt":             "",
		"npu-smi-info.310p3-2card-4chip.txt":        "",
		"npu-smi-info.a3-ascend910-8npu-16chip.txt": "",
	} {
		info, err := ParseNPUSMI(recording(t, file))
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := Table().MatchProduct(smiDeviceName(info.Chips[0].Name)); p.Product != want {
			t.Errorf("%s: %s → %q, want %q", file, info.Chips[0].Name, p.Product, want)
		}
	}
}

func TestFeaturesFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		release, product string
		want             []string
	}{
		{"7.0.0", "A2", []string{"reduce_overhead_mode"}},
		{"7.2.0", "A2", []string{"reduce_overhead_mode"}},
		{"7.3.0", "A2", []string{"reduce_overhead_mode", "npugraph_ex_backend"}},
		{"26.0.0", "A2", []string{"npugraph_ex_backend", "deadlock_check", "dump_tensor_data", "remove_cat_ops", "super_kernel_optimize"}},
		{"26.0.0", "A3", []string{"npugraph_ex_backend", "deadlock_check", "dump_tensor_data", "remove_cat_ops", "super_kernel_optimize"}},
		{"26.0.0", "950", []string{"npugraph_ex_backend", "deadlock_check", "dump_tensor_data", "remove_cat_ops"}},
		{"master", "A2", []string{"npugraph_ex_backend", "deadlock_check", "dump_tensor_data", "remove_cat_ops", "super_kernel_optimize", "force_recapture", "capture_error_mode"}},
		{"6.0.0", "A2", []string{}},
		{"", "A2", []string{}},
	}
	for _, tt := range tests {
		if got := Table().FeaturesFor(tt.release, tt.product); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("FeaturesFor(%s, %s) = %q, want %q", tt.release, tt.product, got, tt.want)
		}
	}
}
