package fleet

import (
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// Eligible counts the runners (live ones, as the caller lists them) that
// are not draining and whose attested report satisfies req.
func Eligible(req domain.Requirement, runners []Runner) int {
	n := 0
	for _, r := range runners {
		if ok, _ := r.Report.Satisfies(req); ok && !r.Draining {
			n++
		}
	}
	return n
}

// WaitingFor says, for a learner, what a job with requirement req waits
// for when none of runners can take it ("" when one can): the parts of
// the requirement no runner meets, "waiting for a runner with torch ≥
// 2.1", or in Chinese "等待具备 torch ≥ 2.1 的执行节点".
func WaitingFor(req domain.Requirement, runners []Runner, chinese bool) string {
	if Eligible(req, runners) > 0 {
		return ""
	}
	parts := []domain.Requirement{{Python: req.Python}, {Torch: req.Torch}, {Backend: req.Backend}}
	lacking := domain.Requirement{}
	for _, p := range parts {
		if !p.IsZero() && Eligible(p, runners) == 0 {
			lacking.Python, lacking.Torch, lacking.Backend = lacking.Python+p.Python, lacking.Torch+p.Torch, lacking.Backend+p.Backend
		}
	}
	if lacking.IsZero() { // each part is met somewhere, never all at once
		lacking = domain.Requirement{Python: req.Python, Torch: req.Torch, Backend: req.Backend}
	}
	words := lacking.EnvironmentWords(chinese)
	npu := req.NeedsNPU()
	switch {
	case chinese && len(words) == 0 && npu:
		return "等待 NPU 执行节点"
	case chinese && len(words) == 0:
		return "等待执行节点"
	case chinese && npu:
		return "等待具备 " + strings.Join(words, "、") + " 的 NPU 执行节点"
	case chinese:
		return "等待具备 " + strings.Join(words, "、") + " 的执行节点"
	case len(words) == 0 && npu:
		return "waiting for an NPU runner"
	case len(words) == 0:
		return "waiting for a runner"
	}
	what := "a runner"
	if npu {
		what = "an NPU runner"
	}
	return "waiting for " + what + " with " + andList(words)
}

func andList(w []string) string {
	if len(w) <= 1 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}
