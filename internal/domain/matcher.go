package domain

import "strings"

// Matcher says whether a runner satisfies a requirement, and if not, why.
// The queue uses it to pick jobs a runner can run; the executor uses it to
// skip cells whose requirement this runner does not meet.
type Matcher func(Requirement) (bool, string)

// CPUMatcher is the capability of a runner with no accelerator. A
// product, a TorchAir release or a feature implies an NPU (NeedsNPU), as
// envprobe's Report.Satisfies decides for a cpu runner with a report: a
// cell asking for TorchAir 26.0.0 with no accelerator is not run on the
// CPU, whether the cpu runner is in-process, `npugrade check` or remote.
func CPUMatcher(req Requirement) (bool, string) {
	if (req.Accelerator == "" || req.Accelerator == "cpu") && !req.NeedsNPU() {
		return true, ""
	}
	var extra []string
	if req.Product != "" {
		extra = append(extra, "Atlas "+req.Product)
	}
	if req.TorchAir != "" {
		extra = append(extra, "TorchAir >= "+req.TorchAir)
	}
	if req.Feature != "" {
		extra = append(extra, "feature "+req.Feature)
	}
	what := "an NPU runner"
	if len(extra) > 0 {
		what += " (" + strings.Join(extra, ", ") + ")"
	}
	return false, "needs " + what + "; this runner has the cpu profile"
}

// ProfileMatcher is the capability of a runner known only by its profile
// name (npu-a2, npu-a3, npu-950); a runner with an environment report
// uses the report's own matcher instead, which also knows its TorchAir
// release and features.
func ProfileMatcher(profile string) Matcher {
	product := strings.ToUpper(strings.TrimPrefix(profile, "npu-"))
	return func(req Requirement) (bool, string) {
		if !strings.HasPrefix(profile, "npu") {
			return CPUMatcher(req)
		}
		if req.Product != "" && req.Product != product {
			return false, "needs Atlas " + req.Product + "; this runner has the " + profile + " profile"
		}
		return true, ""
	}
}
