package envprobe

import (
	"strings"
	"testing"
)

// TestSatisfiesEnvironment: the chapters' requirement (Python ≥ 3.10,
// torch ≥ 2.1, the npugraph_ex backend) against the reports of the
// environments a runner may have: Debian 12's host Python (torch
// 1.13.0a0, no Dynamo), the cpu grading environment (torch 2.6.0+debian
// with the npugraph_ex stand-in), an A2 runner on TorchAir 7.3.0, a host
// without torch.
func TestSatisfiesEnvironment(t *testing.T) {
	t.Parallel()
	chapter := Requirement{Python: ">=3.10", Torch: ">=2.1", Backend: "npugraph_ex"}
	debian := Validate(Report{Arch: "x86_64", Python: "3.11.2", Torch: "1.13.0a0", Environment: "host"})
	cpuEnv := Validate(Report{Arch: "x86_64", Python: "3.13.5", Torch: "2.6.0+debian", NPUGraphExBackend: true, Environment: "cpu"})
	npu := Validate(with(a2(), func(r *Report) { r.NPUGraphExBackend = true }))
	noTorch := Validate(Report{Arch: "x86_64", Python: "3.11.2"})
	oldPython := Validate(Report{Arch: "x86_64", Python: "3.9.2", Torch: "2.1.0", NPUGraphExBackend: true})
	for _, tc := range []struct {
		name   string
		r      Report
		q      Requirement
		ok     bool
		reason string
	}{
		{"chapter on debian's torch 1.13", debian, chapter, false, "needs torch >= 2.1; this runner has torch 1.13.0a0"},
		{"chapter in the cpu environment", cpuEnv, chapter, true, ""},
		{"chapter on an A2 runner", npu, chapter, true, ""},
		{"chapter without torch", noTorch, chapter, false, "torch is not importable"},
		{"chapter on python 3.9", oldPython, chapter, false, "needs Python >= 3.10; this runner has Python 3.9.2"},
		{"backend only, debian", debian, Requirement{Backend: "npugraph_ex"}, false, "npugraph_ex backend"},
		{"bare version", cpuEnv, Requirement{Torch: "2.6"}, true, ""},
		{"exact floor with local suffix", cpuEnv, Requirement{Torch: ">=2.6.0"}, true, ""},
		{"above", cpuEnv, Requirement{Torch: ">= 2.7"}, false, "needs torch >= 2.7"},
		{"cpu accelerator and torch", debian, Requirement{Accelerator: "cpu", Torch: ">=2.1"}, false, "torch >= 2.1"},
		{"malformed", cpuEnv, Requirement{Torch: "~2.1"}, false, "bad requirement: requires.torch"},
		{"unknown backend", cpuEnv, Requirement{Backend: "inductor2"}, false, "unknown backend"},
	} {
		ok, why := tc.r.Satisfies(tc.q)
		if ok != tc.ok || (tc.reason != "" && !strings.Contains(why, tc.reason)) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, ok, why, tc.ok, tc.reason)
		}
	}
	if got := strings.Join(chapter.EnvironmentWords(false), ", "); got != "torch ≥ 2.1, Python ≥ 3.10, the npugraph_ex backend" {
		t.Errorf("words: %q", got)
	}
}
