package fleet_test

import (
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/fleet"
)

// TestWaitingFor: a chapter's job with only a Debian-torch runner online
// waits "for a runner with torch ≥ 2.1 and the npugraph_ex backend" (its
// Python 3.11 meets ≥ 3.10, so that is not named), in Chinese on learner
// pages; a cpu-environment runner takes it; a draining one does not.
func TestWaitingFor(t *testing.T) {
	t.Parallel()
	chapter := domain.Requirement{Python: ">=3.10", Torch: ">=2.1", Backend: "npugraph_ex"}
	host := fleet.Runner{ID: "host", Report: envprobe.Validate(envprobe.Report{Python: "3.11.2", Torch: "1.13.0a0", Environment: "host"})}
	cpu := fleet.Runner{ID: "cpu", Report: envprobe.Validate(envprobe.Report{Python: "3.13.5", Torch: "2.6.0+debian", NPUGraphExBackend: true, Environment: "cpu"})}
	for _, tc := range []struct {
		name    string
		req     domain.Requirement
		runners []fleet.Runner
		en, zh  string
	}{
		{"host only", chapter, []fleet.Runner{host}, "waiting for a runner with torch ≥ 2.1 and the npugraph_ex backend", "等待具备 torch ≥ 2.1、npugraph_ex 后端 的执行节点"},
		{"torch only", domain.Requirement{Torch: ">=2.1"}, []fleet.Runner{host}, "waiting for a runner with torch ≥ 2.1", "等待具备 torch ≥ 2.1 的执行节点"},
		{"none online", chapter, nil, "waiting for a runner with torch ≥ 2.1, Python ≥ 3.10 and the npugraph_ex backend", "等待具备 torch ≥ 2.1、Python ≥ 3.10、npugraph_ex 后端 的执行节点"},
		{"cpu env online", chapter, []fleet.Runner{host, cpu}, "", ""},
		{"cpu env draining", domain.Requirement{Torch: ">=2.1"}, []fleet.Runner{host, {ID: "d", Report: cpu.Report, Draining: true}}, "waiting for a runner with torch ≥ 2.1", "等待具备 torch ≥ 2.1 的执行节点"},
		{"npu", domain.Requirement{Accelerator: "npu"}, []fleet.Runner{cpu}, "waiting for an NPU runner", "等待 NPU 执行节点"},
	} {
		if got := fleet.WaitingFor(tc.req, tc.runners, false); got != tc.en {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.en)
		}
		if got := fleet.WaitingFor(tc.req, tc.runners, true); got != tc.zh {
			t.Errorf("%s (zh): %q, want %q", tc.name, got, tc.zh)
		}
	}
}
