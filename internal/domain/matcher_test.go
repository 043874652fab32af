package domain

import (
	"strings"
	"testing"
)

// A cpu runner without a report (in-process, `npugrade check`) must decide
// as a cpu runner with one: a product, TorchAir release or feature needs an
// NPU even when the requirement names no accelerator.
func TestCPUMatcher(t *testing.T) {
	tests := []struct {
		req    Requirement
		ok     bool
		reason string
	}{
		{Requirement{}, true, ""},
		{Requirement{Accelerator: "cpu"}, true, ""},
		{Requirement{Accelerator: "npu"}, false, "needs an NPU runner; this runner has the cpu profile"},
		{Requirement{Product: "A2"}, false, "needs an NPU runner (Atlas A2); this runner has the cpu profile"},
		{Requirement{TorchAir: "26.0.0"}, false, "needs an NPU runner (TorchAir >= 26.0.0); this runner has the cpu profile"},
		{Requirement{Feature: "deadlock_check"}, false, "(feature deadlock_check)"},
		{Requirement{Accelerator: "npu", TorchAir: "26.0.0"}, false, "TorchAir >= 26.0.0"},
	}
	for _, tt := range tests {
		ok, reason := CPUMatcher(tt.req)
		if ok != tt.ok || !strings.Contains(reason, tt.reason) || (tt.ok && reason != "") {
			t.Errorf("CPUMatcher(%+v) = %v, %q; want %v, %q", tt.req, ok, reason, tt.ok, tt.reason)
		}
	}
}

// ProfileMatcher of the cpu profile is CPUMatcher.
func TestProfileMatcherCPU(t *testing.T) {
	if ok, _ := ProfileMatcher("cpu")(Requirement{TorchAir: "7.3.0"}); ok {
		t.Error("the cpu profile runs a cell that asks for TorchAir 7.3.0")
	}
}
