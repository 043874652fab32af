package envprobe

import (
	"fmt"

	"github.com/npugrade/npugrade/internal/domain"
)

// satisfiesEnvironment checks the environment fields of q (python, torch,
// backend) against the report: what an exercise written for PyTorch 2.x
// and torch.compile needs, whatever the accelerator. A runner on
// Debian's torch 1.13 fails it, and so never grades such an exercise.
func (r Report) satisfiesEnvironment(q Requirement) (bool, string) {
	if err := q.CheckEnvironment(); err != nil {
		return false, "bad requirement: " + err.Error()
	}
	if q.Python != "" {
		min, _ := domain.MinVersion(q.Python)
		if r.Python == "" || !domain.AtLeast(r.Python, min) {
			return false, fmt.Sprintf("needs Python >= %s; this runner has Python %s", min, orUnknown(r.Python))
		}
	}
	if q.Torch != "" {
		min, _ := domain.MinVersion(q.Torch)
		if r.Torch == "" {
			return false, fmt.Sprintf("needs torch >= %s; torch is not importable on this runner", min)
		}
		if !domain.AtLeast(r.Torch, min) {
			return false, fmt.Sprintf("needs torch >= %s; this runner has torch %s", min, r.Torch)
		}
	}
	if q.Backend == "npugraph_ex" && !r.NPUGraphExBackend {
		return false, fmt.Sprintf("needs the npugraph_ex backend; torch._dynamo.list_backends() does not list it on this runner (torch %s)", orUnknown(r.Torch))
	}
	if q.Backend != "" && q.Backend != "npugraph_ex" {
		return false, fmt.Sprintf("unknown backend %q (want npugraph_ex)", q.Backend)
	}
	return true, ""
}
