package envprobe

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// a2 is a supported TorchAir 7.3.0 runner on Atlas A2 (device name as in the
// recorded LlamaFactory report and npu-smi table; CANN as on the recorded A2
// host). Test cases change one field at a time.
func a2() Report {
	return Report{
		Arch: "aarch64", Python: "3.11.6", Torch: "2.9.0+cpu", TorchNPU: "2.9.0",
		CANN: "8.5.0", DeviceName: "Ascend910B3", DeviceCount: 8, Driver: "25.2.0",
		NPUGraphExBackend: true,
	}
}

func with(r Report, f func(*Report)) Report { f(&r); return r }

func TestValidate(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	tests := []struct {
		name     string
		in       Report
		verdict  string
		profile  string
		release  string
		expected string
		product  string
		warning  string // substring of some warning; "" means no warnings at all
	}{
		{"supported A2 7.3.0", a2(), VerdictOK, ProfileNPUA2, "7.3.0", "8.5.0", "A2", ""},
		{"26.0.0 on A3", with(a2(), func(r *Report) {
			r.TorchNPU, r.CANN, r.DeviceName, r.DeviceCount = "2.9.0.post2", "9.0.0", "Ascend910_9391", 16
		}), VerdictOK, ProfileNPUA3, "26.0.0", "9.0.0", "A3", ""},
		{"950", with(a2(), func(r *Report) {
			r.TorchNPU, r.CANN, r.DeviceName = "2.9.0.post2", "9.0.0", "Ascend950DT_9582"
		}), VerdictOK, ProfileNPU950, "26.0.0", "9.0.0", "950", ""},

		// torch_npu keyed on the exact string.
		{"2.9.0.post2 with CANN 8.5.0 is 26.0.0, wants 9.0.0", with(a2(), func(r *Report) { r.TorchNPU = "2.9.0.post2" }),
			VerdictUnsupported, ProfileNPUA2, "26.0.0", "9.0.0", "A2", "CANN 8.5.0 does not match 9.0.0"},
		{"2.8.0 is 7.2.0, not 7.3.0", with(a2(), func(r *Report) { r.TorchNPU, r.Torch = "2.8.0", "2.8.0" }),
			VerdictUnsupported, ProfileNPUA2, "7.2.0", "8.3.RC1", "A2", "does not match 8.3.RC1"},
		{"2.8.0 with 8.3.RC1 is fine", with(a2(), func(r *Report) { r.TorchNPU, r.Torch, r.CANN = "2.8.0", "2.8.0", "8.3.RC1" }),
			VerdictOK, ProfileNPUA2, "7.2.0", "8.3.RC1", "A2", ""},
		{"unknown torch_npu from a recorded host", with(a2(), func(r *Report) { r.TorchNPU, r.Torch = "2.1.0.post3", "2.1.0+cpu" }),
			VerdictUnsupported, ProfileNPUA2, "", "", "A2", "not in the TorchAir version table"},
		{"dev build is unknown: warn", with(a2(), func(r *Report) { r.TorchNPU, r.Torch = "2.9.0.dev20260101", "2.9.0" }),
			VerdictWarn, ProfileNPUA2, "", "", "A2", "dev build"},
		{"torch_npu missing on NPU host", with(a2(), func(r *Report) { r.TorchNPU = "" }),
			VerdictUnsupported, ProfileNPUA2, "", "", "A2", "torch_npu is not importable"},

		// torch base must equal torch_npu base.
		{"torch base mismatch", with(a2(), func(r *Report) { r.Torch = "2.8.0+cpu" }),
			VerdictUnsupported, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "base 2.8.0 != 2.9.0"},
		{"torch without +cpu", with(a2(), func(r *Report) { r.Torch = "2.9.0" }),
			VerdictOK, ProfileNPUA2, "7.3.0", "8.5.0", "A2", ""},

		// CANN on a normalised prefix.
		{"CANN patch build warns", with(a2(), func(r *Report) { r.CANN = "8.5.0.B120" }),
			VerdictWarn, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "patch or pre-release"},
		{"CANN beta of the right prefix warns", with(a2(), func(r *Report) { r.TorchNPU, r.CANN = "2.9.0.post2", "9.0.0-beta.2" }),
			VerdictWarn, ProfileNPUA2, "26.0.0", "9.0.0", "A2", "patch or pre-release"},
		{"CANN beta of another version fails", with(a2(), func(r *Report) { r.TorchNPU, r.CANN = "2.9.0.post2", "9.2.0-beta.2" }),
			VerdictUnsupported, ProfileNPUA2, "26.0.0", "9.0.0", "A2", "does not match"},
		{"CANN 8.3.RC2 is not 8.3.RC1", with(a2(), func(r *Report) { r.TorchNPU, r.Torch, r.CANN = "2.7.1", "2.7.1", "8.3.RC2" }),
			VerdictUnsupported, ProfileNPUA2, "7.2.0", "8.3.RC1", "A2", "does not match 8.3.RC1"},
		{"CANN lower-case rc", with(a2(), func(r *Report) { r.TorchNPU, r.Torch, r.CANN = "2.7.1", "2.7.1", "8.3.rc1" }),
			VerdictOK, ProfileNPUA2, "7.2.0", "8.3.RC1", "A2", ""},
		{"CANN unknown warns", with(a2(), func(r *Report) { r.CANN = "" }),
			VerdictWarn, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "CANN version not found"},
		{"CANN garbage fails", with(a2(), func(r *Report) { r.CANN = "latest" }),
			VerdictUnsupported, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "not recognisable"},

		// Python listed for the row.
		{"Python 3.9 not listed for 2.9.0", with(a2(), func(r *Report) { r.Python = "3.9.18" }),
			VerdictWarn, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "Python 3.9 is not listed"},
		{"Python 3.12 not listed for 2.6.0.post5", with(a2(), func(r *Report) { r.TorchNPU, r.Torch, r.Python = "2.6.0.post5", "2.6.0", "3.12.1" }),
			VerdictWarn, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "Python 3.12 is not listed"},

		// Product patterns.
		{"bare 910B is first-generation", with(a2(), func(r *Report) { r.DeviceName = "Ascend910B" }),
			VerdictUnsupported, "", "7.3.0", "8.5.0", "", "Ascend910B is not a supported product"},
		{"910ProB", with(a2(), func(r *Report) { r.DeviceName = "Ascend910ProB" }),
			VerdictUnsupported, "", "7.3.0", "8.5.0", "", "not a supported product"},
		{"310P3", with(a2(), func(r *Report) { r.DeviceName = "Ascend310P3" }),
			VerdictUnsupported, "", "7.3.0", "8.5.0", "", "not a supported product"},
		{"old 910A", with(a2(), func(r *Report) { r.DeviceName = "Ascend910A" }),
			VerdictUnsupported, "", "7.3.0", "8.5.0", "", "not a supported product"},
		{"910B2C is A2", with(a2(), func(r *Report) { r.DeviceName = "Ascend910B2C" }),
			VerdictOK, ProfileNPUA2, "7.3.0", "8.5.0", "A2", ""},
		{"device name unknown", with(a2(), func(r *Report) { r.DeviceName = "" }),
			VerdictUnsupported, "", "7.3.0", "8.5.0", "", "device name unknown"},
		// The recorded first-generation host: torch_npu 2.10.0, bare 910B, CANN 9.0.0.
		{"recorded 910B legacy host", Report{Python: "3.11.4", Torch: "2.10.0+cpu", TorchNPU: "2.10.0", CANN: "9.0.0", DeviceName: "Ascend910B", DeviceCount: 8, Driver: "25.5.2"},
			VerdictUnsupported, "", "", "", "", "not in the TorchAir version table"},

		// Backend and smoke test.
		{"7.3.0 without the npugraph_ex backend", with(a2(), func(r *Report) { r.NPUGraphExBackend = false }),
			VerdictWarn, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "does not list it"},
		{"smoke test failed", with(a2(), func(r *Report) { r.SmokeOK = &no }),
			VerdictUnsupported, ProfileNPUA2, "7.3.0", "8.5.0", "A2", "smoke test failed"},
		{"smoke test passed", with(a2(), func(r *Report) { r.SmokeOK = &yes }),
			VerdictOK, ProfileNPUA2, "7.3.0", "8.5.0", "A2", ""},

		// CPU runners.
		{"cpu runner", Report{Arch: "x86_64", Python: "3.11.2", Torch: "1.13.0a0"},
			VerdictOK, ProfileCPU, "", "", "", "no NPU found"},
		{"cpu runner without torch", Report{Arch: "x86_64", Python: "3.11.2"},
			VerdictWarn, ProfileCPU, "", "", "", "torch is not importable"},
		{"cpu runner with torch_npu installed", Report{Python: "3.11.2", Torch: "2.9.0+cpu", TorchNPU: "2.9.0"},
			VerdictOK, ProfileCPU, "7.3.0", "8.5.0", "", "no NPU found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Validate(tt.in)
			if got.Verdict != tt.verdict || got.Profile != tt.profile || got.TorchAirRelease != tt.release ||
				got.CANNExpected != tt.expected || got.Product != tt.product {
				t.Errorf("verdict %q profile %q release %q cann_expected %q product %q; want %q %q %q %q %q\nwarnings: %q",
					got.Verdict, got.Profile, got.TorchAirRelease, got.CANNExpected, got.Product,
					tt.verdict, tt.profile, tt.release, tt.expected, tt.product, got.Warnings)
			}
			if got.Warnings == nil || got.Features == nil {
				t.Error("warnings and features must never be nil")
			}
			switch {
			case tt.warning == "" && tt.verdict == VerdictOK && tt.profile != ProfileCPU && len(got.Warnings) != 0:
				t.Errorf("unexpected warnings %q", got.Warnings)
			case tt.warning != "" && !slices.ContainsFunc(got.Warnings, func(w string) bool { return strings.Contains(w, tt.warning) }):
				t.Errorf("no warning containing %q in %q", tt.warning, got.Warnings)
			}
			if len(got.Fingerprint) != 12 {
				t.Errorf("fingerprint %q", got.Fingerprint)
			}
			// Validate is idempotent.
			if again := Validate(got); !reflect.DeepEqual(again, got) {
				t.Errorf("second Validate changed the report:\n%+v\n%+v", got, again)
			}
		})
	}
}

func TestValidateFeatures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Report
		want []string
	}{
		{"7.3.0 A2", a2(), []string{"reduce_overhead_mode", "npugraph_ex_backend"}},
		{"7.3.0 without backend registered", with(a2(), func(r *Report) { r.NPUGraphExBackend = false }), []string{"reduce_overhead_mode"}},
		{"26.0.0 A2", with(a2(), func(r *Report) { r.TorchNPU, r.CANN = "2.9.0.post2", "9.0.0" }),
			[]string{"npugraph_ex_backend", "deadlock_check", "dump_tensor_data", "remove_cat_ops", "super_kernel_optimize"}},
		{"26.0.0 on 950: no SuperKernel", with(a2(), func(r *Report) { r.TorchNPU, r.CANN, r.DeviceName = "2.9.0.post2", "9.0.0", "Ascend950PR_9599" }),
			[]string{"npugraph_ex_backend", "deadlock_check", "dump_tensor_data", "remove_cat_ops"}},
		{"7.1.0", with(a2(), func(r *Report) { r.TorchNPU, r.Torch, r.CANN, r.NPUGraphExBackend = "2.6.0", "2.6.0", "8.2.RC1", false }),
			[]string{"reduce_overhead_mode"}},
		{"dev build: only what was observed", with(a2(), func(r *Report) { r.TorchNPU, r.Torch = "2.10.0.dev20260401", "2.10.0" }),
			[]string{"npugraph_ex_backend"}},
		{"cpu", Report{Python: "3.11.2", Torch: "1.13.0a0"}, []string{}},
	}
	for _, tt := range tests {
		if got := Validate(tt.in).Features; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: features %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	r := Validate(Report{Arch: "x86_64", Python: "3.11.2", Torch: "1.13.0a0"})
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"arch", "python", "torch", "torch_npu", "torchair_release", "cann", "cann_expected", "product",
		"device_name", "device_count", "driver", "npugraph_ex_backend", "profile", "verdict", "warnings", "features", "fingerprint"}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, data)
		}
	}
	for _, k := range []string{"smoke_ok", "ai_core_count", "vector_core_count"} {
		if _, ok := m[k]; ok {
			t.Errorf("JSON has %q although unknown: %s", k, data)
		}
	}
	if len(m) != len(want) {
		t.Errorf("JSON has %d keys, want %d: %s", len(m), len(want), data)
	}
	if _, ok := m["warnings"].([]any); !ok {
		t.Errorf("warnings is not an array: %s", data)
	}
	// A decoded report validates to the same result.
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if again := Validate(back); !reflect.DeepEqual(again, r) {
		t.Errorf("round trip changed the report:\n%+v\n%+v", r, again)
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	base := Validate(a2())
	if Validate(a2()).Fingerprint != base.Fingerprint {
		t.Fatal("fingerprint is not stable")
	}
	// Volatile facts do not change it.
	same := Validate(with(a2(), func(r *Report) { r.DeviceCount, r.AICoreCount = 1, 24 }))
	if same.Fingerprint != base.Fingerprint {
		t.Error("device count or core counts changed the fingerprint")
	}
	for name, f := range map[string]func(*Report){
		"cann":      func(r *Report) { r.CANN = "8.5.0.B120" },
		"driver":    func(r *Report) { r.Driver = "25.5.0" },
		"device":    func(r *Report) { r.DeviceName = "Ascend910B4" },
		"torch_npu": func(r *Report) { r.TorchNPU = "2.9.0.post2" },
		"python":    func(r *Report) { r.Python = "3.11.7" },
	} {
		if Validate(with(a2(), f)).Fingerprint == base.Fingerprint {
			t.Errorf("changing %s kept the fingerprint", name)
		}
	}
}
