package envprobe

import (
	"strings"
	"testing"
)

func TestSatisfies(t *testing.T) {
	t.Parallel()
	cpu := Validate(Report{Arch: "x86_64", Python: "3.11.2", Torch: "1.13.0a0"})
	a2r730 := Validate(a2())
	a3r26 := Validate(with(a2(), func(r *Report) {
		r.TorchNPU, r.CANN, r.DeviceName, r.DeviceCount = "2.9.0.post2", "9.0.0", "Ascend910_9391", 16
	}))
	npu950 := Validate(with(a2(), func(r *Report) { r.TorchNPU, r.CANN, r.DeviceName = "2.9.0.post2", "9.0.0", "Ascend950DT_9582" }))
	a2r720 := Validate(with(a2(), func(r *Report) { r.TorchNPU, r.Torch, r.CANN = "2.8.0", "2.8.0", "8.3.RC1" }))
	dev := Validate(with(a2(), func(r *Report) { r.TorchNPU, r.Torch = "2.10.0.dev20260401", "2.10.0" }))
	warnA2 := Validate(with(a2(), func(r *Report) { r.CANN = "8.5.0.B120" }))
	legacy := Validate(with(a2(), func(r *Report) { r.DeviceName = "Ascend910B" }))
	for _, r := range []Report{a2r730, a3r26, npu950, a2r720} {
		if r.Verdict != VerdictOK {
			t.Fatalf("fixture %s/%s not ok: %q", r.DeviceName, r.TorchNPU, r.Warnings)
		}
	}

	if !(Requirement{}).IsZero() || (Requirement{Accelerator: "npu"}).IsZero() {
		t.Error("IsZero")
	}
	tests := []struct {
		name   string
		r      Report
		q      Requirement
		ok     bool
		reason string // substring
	}{
		{"nothing asked, cpu", cpu, Requirement{}, true, ""},
		{"nothing asked, npu", a2r730, Requirement{}, true, ""},
		{"cpu asked, cpu", cpu, Requirement{Accelerator: "cpu"}, true, ""},
		{"cpu asked, npu runner", a2r730, Requirement{Accelerator: "cpu"}, false, "needs a cpu runner; this runner has the npu-a2 profile"},
		{"npu asked, cpu runner", cpu, Requirement{Accelerator: "npu"}, false, "needs an NPU runner; this runner has the cpu profile"},
		{"A2 asked, cpu runner", cpu, Requirement{Accelerator: "npu", Product: "A2"}, false, "needs an NPU runner (Atlas A2); this runner has the cpu profile"},
		{"A2 asked, A2", a2r730, Requirement{Accelerator: "npu", Product: "A2"}, true, ""},
		{"product implies npu", a2r730, Requirement{Product: "A2"}, true, ""},
		{"A2 asked, A3", a3r26, Requirement{Product: "A2"}, false, "this runner is Atlas A3 (Ascend910_9391)"},
		{"950 asked, 950", npu950, Requirement{Product: "950"}, true, ""},

		// Releases compare numerically.
		{"7.3.0 asked, 26.0.0", a3r26, Requirement{TorchAir: "7.3.0"}, true, ""},
		{"26.0.0 asked, 7.3.0", a2r730, Requirement{TorchAir: "26.0.0"}, false, "this runner has TorchAir 7.3.0"},
		{"7.3.0 asked, 7.3.0", a2r730, Requirement{TorchAir: "7.3.0"}, true, ""},
		{"7.3.0 asked, 7.2.0", a2r720, Requirement{TorchAir: "7.3.0"}, false, "TorchAir 7.2.0"},
		{"7.3.0 asked, dev build", dev, Requirement{TorchAir: "7.3.0"}, false, "TorchAir release is unknown"},
		{"npu asked, dev build (warn)", dev, Requirement{Accelerator: "npu"}, true, ""},
		{"torchair implies npu", cpu, Requirement{TorchAir: "7.3.0"}, false, "this runner has the cpu profile"},
		{"master asked", a3r26, Requirement{TorchAir: "master"}, false, "TorchAir 26.0.0"},

		// Features.
		{"deadlock_check on 26.0.0", a3r26, Requirement{Accelerator: "npu", Product: "A3", TorchAir: "7.3.0", Feature: "deadlock_check"}, true, ""},
		{"deadlock_check on 7.3.0", a2r730, Requirement{Feature: "deadlock_check"}, false, "it is in TorchAir 26.0.0 and later"},
		{"npugraph_ex on 7.2.0", a2r720, Requirement{Feature: "npugraph_ex_backend"}, false, "lacks it"},
		{"npugraph_ex on dev with backend", dev, Requirement{Feature: "npugraph_ex_backend"}, true, ""},
		{"force_recapture on 26.0.0", a3r26, Requirement{Feature: "force_recapture"}, false, "master only"},
		{"super_kernel on 950", npu950, Requirement{Feature: "super_kernel_optimize"}, false, "A2/A3 only"},
		{"super_kernel on A3", a3r26, Requirement{Feature: "super_kernel_optimize"}, true, ""},
		{"reduce-overhead on 26.0.0", a3r26, Requirement{Feature: "reduce_overhead_mode"}, false, "7.0.0 to 7.3.0"},
		{"reduce-overhead on 7.2.0", a2r720, Requirement{Feature: "reduce_overhead_mode"}, true, ""},
		{"feature on cpu", cpu, Requirement{Feature: "deadlock_check"}, false, "needs an NPU runner (feature deadlock_check); this runner has the cpu profile"},

		// Verdicts.
		{"warn runner still serves", warnA2, Requirement{Product: "A2"}, true, ""},
		{"unsupported runner serves nothing", legacy, Requirement{}, false, "unsupported: device Ascend910B"},
		{"unvalidated report", a2(), Requirement{}, false, "not been validated"},

		// Bad requirements.
		{"unknown accelerator", cpu, Requirement{Accelerator: "gpu"}, false, "unknown accelerator"},
		{"unknown product", a2r730, Requirement{Product: "A5"}, false, "unknown product"},
		{"unknown feature", a2r730, Requirement{Feature: "warp_drive"}, false, "unknown feature"},
		{"bad release", a2r730, Requirement{TorchAir: "latest"}, false, "bad requirement"},
		{"contradiction", cpu, Requirement{Accelerator: "cpu", Product: "A2"}, false, "contradictory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, reason := tt.r.Satisfies(tt.q)
			if ok != tt.ok {
				t.Fatalf("ok = %v (%q), want %v", ok, reason, tt.ok)
			}
			if ok && reason != "" {
				t.Errorf("reason %q on success", reason)
			}
			if !strings.Contains(reason, tt.reason) {
				t.Errorf("reason %q lacks %q", reason, tt.reason)
			}
		})
	}
}
