package envprobe

import (
	"fmt"
	"slices"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

// Requirement is domain.Requirement: the `requires` object of an
// exercise or a grader cell (docs/grader-metadata.md). It is an alias so
// that jobs, cells and runner reports share one type with no conversions.
type Requirement = domain.Requirement

// describe renders the requirement for reasons: "an NPU runner (Atlas A2)".
func describe(q Requirement, t *VersionTable) string {
	var extra []string
	if q.Product != "" {
		name := q.Product
		if p := t.productRule(q.Product); p != nil {
			name = p.Name
		}
		extra = append(extra, name)
	}
	if q.TorchAir != "" {
		extra = append(extra, "TorchAir >= "+q.TorchAir)
	}
	if q.Feature != "" {
		extra = append(extra, "feature "+q.Feature)
	}
	if len(extra) == 0 {
		return "an NPU runner"
	}
	return "an NPU runner (" + strings.Join(extra, ", ") + ")"
}

// Satisfies reports whether the runner can run a cell with this requirement,
// and if not, why, in words meant for a learner or an operator.
func (r Report) Satisfies(q Requirement) (ok bool, reason string) {
	t := Table()

	switch q.Accelerator {
	case "", "cpu", "npu":
	default:
		return false, fmt.Sprintf("unknown accelerator %q (want \"\", \"cpu\" or \"npu\")", q.Accelerator)
	}
	if q.Product != "" && t.productRule(q.Product) == nil {
		return false, fmt.Sprintf("unknown product %q (want A2, A3 or 950)", q.Product)
	}
	if q.TorchAir != "" {
		if _, err := parseRelease(q.TorchAir); err != nil {
			return false, fmt.Sprintf("bad requirement: %v", err)
		}
	}
	var feature Feature
	if q.Feature != "" {
		f, found := t.Feature(q.Feature)
		if !found {
			return false, fmt.Sprintf("unknown feature %q", q.Feature)
		}
		feature = f
	}
	if q.Accelerator == "cpu" && q.NeedsNPU() {
		return false, "contradictory requirement: accelerator cpu with an NPU product, TorchAir release or feature"
	}

	switch r.Verdict {
	case VerdictOK, VerdictWarn:
	case "":
		return false, "this runner's environment has not been validated"
	default:
		why := ""
		if len(r.Warnings) > 0 {
			why = ": " + r.Warnings[0]
		}
		return false, "this runner's environment is unsupported" + why
	}
	if ok, why := r.satisfiesEnvironment(q); !ok {
		return false, why
	}

	if q.Accelerator == "cpu" {
		if r.Profile != ProfileCPU {
			return false, fmt.Sprintf("needs a cpu runner; this runner has the %s profile", r.Profile)
		}
		return true, ""
	}
	if !q.NeedsNPU() {
		return true, ""
	}

	want := describe(q, t)
	if r.Profile == ProfileCPU || r.Profile == "" {
		return false, fmt.Sprintf("needs %s; this runner has the %s profile", want, orNone(r.Profile))
	}
	if q.Product != "" && r.Product != q.Product {
		have := r.Product
		if p := t.productRule(r.Product); p != nil {
			have = p.Name
		}
		return false, fmt.Sprintf("needs %s; this runner is %s (%s)", want, have, r.DeviceName)
	}
	if q.TorchAir != "" {
		if r.TorchAirRelease == "" {
			return false, fmt.Sprintf("needs %s; this runner's TorchAir release is unknown (torch_npu %s)", want, r.TorchNPU)
		}
		if c, err := CompareReleases(r.TorchAirRelease, q.TorchAir); err != nil || c < 0 {
			return false, fmt.Sprintf("needs %s; this runner has TorchAir %s", want, r.TorchAirRelease)
		}
	}
	if q.Feature != "" && !slices.Contains(r.Features, q.Feature) {
		return false, fmt.Sprintf("needs %s; this runner (TorchAir %s) lacks it%s", want, orUnknown(r.TorchAirRelease), featureWindow(feature))
	}
	return true, ""
}

func featureWindow(f Feature) string {
	var parts []string
	switch {
	case f.Since == "master":
		parts = append(parts, "it is on TorchAir master only")
	case f.Until != "":
		parts = append(parts, fmt.Sprintf("it is in TorchAir %s to %s", f.Since, f.Until))
	default:
		parts = append(parts, fmt.Sprintf("it is in TorchAir %s and later", f.Since))
	}
	if len(f.Products) > 0 {
		parts = append(parts, "on "+strings.Join(f.Products, "/")+" only")
	}
	return "; " + strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "no"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
