package envprobe

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Verdicts, from best to worst.
const (
	VerdictOK          = "ok"          // the runner matches the version table (or is a plain cpu runner)
	VerdictWarn        = "warn"        // usable, but something is off the tested matrix
	VerdictUnsupported = "unsupported" // must not take jobs for its profile
)

// Runner profiles; notebooks read them from NPUGRADE_PROFILE.
const (
	ProfileCPU    = "cpu"
	ProfileNPUA2  = "npu-a2"
	ProfileNPUA3  = "npu-a3"
	ProfileNPU950 = "npu-950"
)

// Report is a runner's attested environment. Collect fills the raw fields,
// Validate derives the rest (torchair_release, cann_expected, product,
// profile, features, verdict, warnings, fingerprint).
type Report struct {
	Arch              string   `json:"arch"`             // platform.machine(): "aarch64", "x86_64"
	Python            string   `json:"python"`           // "3.11.2"
	Torch             string   `json:"torch"`            // torch.__version__, "" if not importable
	TorchNPU          string   `json:"torch_npu"`        // torch_npu.__version__, "" if not importable
	TorchAirRelease   string   `json:"torchair_release"` // derived from the exact torch_npu string
	CANN              string   `json:"cann"`             // as installed, e.g. "8.5.0.B120"
	CANNExpected      string   `json:"cann_expected"`    // from the version table row
	Product           string   `json:"product"`          // "A2", "A3", "950" or ""
	DeviceName        string   `json:"device_name"`      // torch.npu.get_device_name(0), e.g. "Ascend910B3"
	DeviceCount       int      `json:"device_count"`
	Driver            string   `json:"driver"` // npu-smi header version
	NPUGraphExBackend bool     `json:"npugraph_ex_backend"`
	SmokeOK           *bool    `json:"smoke_ok,omitempty"` // nil: not run
	Profile           string   `json:"profile"`
	Verdict           string   `json:"verdict"`
	Warnings          []string `json:"warnings"`
	Features          []string `json:"features"`
	AICoreCount       int      `json:"ai_core_count,omitempty"`
	VectorCoreCount   int      `json:"vector_core_count,omitempty"`
	Fingerprint       string   `json:"fingerprint"`
	// Environment is the grading environment the kernels run in (a root
	// filesystem built or imported with `npugrade env`, e.g. "cpu"), or
	// "host" for the runner's own system; empty in reports from before.
	Environment string `json:"environment,omitempty"`
	// VisibleDevices is ASCEND_VISIBLE_DEVICES where the runner runs: the
	// physical ids the Ascend device plugin gave its pod ("" when unset).
	VisibleDevices string `json:"ascend_visible_devices,omitempty"`
	// NPUSlots are the runner's slots and the device each is pinned to,
	// physical and logical (empty: no device nodes, or not a runner).
	NPUSlots []SlotPin `json:"npu_slots,omitempty"`

	// collected holds what Collect learnt that the fields above cannot
	// express (a failed import, an unreadable file). Validate merges it into
	// Warnings and Verdict. It does not survive JSON, so Validate on a decoded
	// report judges the fields alone.
	collected []finding
}

type finding struct {
	level string // one of the Verdict constants; "ok" means informational
	msg   string
}

func verdictRank(v string) int {
	switch v {
	case VerdictOK:
		return 0
	case VerdictWarn:
		return 1
	default:
		return 2
	}
}

func (r *Report) note(level, format string, args ...any) {
	r.collected = append(r.collected, finding{level: level, msg: fmt.Sprintf(format, args...)})
}

// HasNPU reports whether the report describes a host with an NPU, whether
// or not the stack on it is usable.
func (r Report) HasNPU() bool { return r.DeviceCount > 0 || r.DeviceName != "" }

// Validate checks a report against the version table and returns it with the
// derived fields, verdict, warnings and fingerprint filled in. It recomputes
// everything derived from the raw fields, so calling it twice is harmless.
// The rules are those of torchair-domain.md §3; see the package doc for the
// choices made where the rules are open.
func Validate(r Report) Report {
	t := Table()
	var fs []finding
	add := func(level, format string, args ...any) {
		fs = append(fs, finding{level: level, msg: fmt.Sprintf(format, args...)})
	}

	r.TorchAirRelease, r.CANNExpected, r.Product, r.Profile = "", "", "", ""
	r.Features = []string{}

	row, known := t.LookupTorchNPU(r.TorchNPU)
	if known {
		// Informational on a cpu runner, binding on an NPU one.
		r.TorchAirRelease, r.CANNExpected = row.TorchAir, row.CANN
	}

	if !r.HasNPU() {
		r.Profile = ProfileCPU
		add(VerdictOK, "no NPU found: this runner has the cpu profile and runs CPU questions only")
		if r.Torch == "" {
			add(VerdictWarn, "torch is not importable: only pure-Python questions can run")
		}
	} else {
		validateNPU(&r, t, row, known, add)
	}

	fs = append(fs, r.collected...)
	r.Verdict, r.Warnings = VerdictOK, []string{}
	for _, f := range fs {
		if verdictRank(f.level) > verdictRank(r.Verdict) {
			r.Verdict = f.level
		}
		if !slices.Contains(r.Warnings, f.msg) {
			r.Warnings = append(r.Warnings, f.msg)
		}
	}
	r.Fingerprint = Fingerprint(r)
	return r
}

func validateNPU(r *Report, t *VersionTable, row Row, known bool, add func(level, format string, args ...any)) {
	// Product first: it decides the profile even when the software is off.
	if p, ok := t.MatchProduct(r.DeviceName); ok {
		r.Product, r.Profile = p.Product, p.Profile
	} else if r.DeviceName == "" {
		add(VerdictUnsupported, "NPU device name unknown: cannot tell Atlas A2, A3 or Ascend 950 apart")
	} else {
		add(VerdictUnsupported, "device %s is not a supported product (Atlas A2 Ascend910B1-B4, Atlas A3 Ascend910_93xx, Ascend 950PR/950DT)", r.DeviceName)
	}

	switch {
	case r.TorchNPU == "":
		add(VerdictUnsupported, "torch_npu is not importable on an NPU host")
	case known:
		// checked below
	case IsDevBuild(r.TorchNPU):
		add(VerdictWarn, "torch_npu %s is a dev build: TorchAir release unknown, release-gated questions will not be routed here", r.TorchNPU)
	default:
		add(VerdictUnsupported, "torch_npu %s is not in the TorchAir version table", r.TorchNPU)
	}

	if r.TorchNPU != "" {
		switch tb, nb := BaseVersion(r.Torch), BaseVersion(r.TorchNPU); {
		case r.Torch == "":
			add(VerdictUnsupported, "torch is not importable")
		case tb != nb:
			add(VerdictUnsupported, "torch %s does not match torch_npu %s (base %s != %s)", r.Torch, r.TorchNPU, tb, nb)
		}
	}

	if known {
		checkCANN(r, row, add)
		if minor := PythonMinor(r.Python); minor == "" {
			add(VerdictWarn, "Python version unknown: cannot check it against torch_npu %s (Python %s)", r.TorchNPU, strings.Join(row.Python, ", "))
		} else if !slices.Contains(row.Python, minor) {
			add(VerdictWarn, "Python %s is not listed for torch_npu %s (Python %s)", minor, r.TorchNPU, strings.Join(row.Python, ", "))
		}
		r.Features = t.FeaturesFor(row.TorchAir, r.Product)
	} else if r.NPUGraphExBackend {
		// No release to go by: advertise only what was observed.
		r.Features = append(r.Features, "npugraph_ex_backend")
	}

	if slices.Contains(r.Features, "npugraph_ex_backend") && !r.NPUGraphExBackend {
		r.Features = slices.DeleteFunc(r.Features, func(s string) bool { return s == "npugraph_ex_backend" })
		add(VerdictWarn, "TorchAir %s should register the npugraph_ex backend, but torch._dynamo.list_backends() does not list it", r.TorchAirRelease)
	}

	if r.SmokeOK != nil && !*r.SmokeOK {
		add(VerdictUnsupported, "smoke test failed: an add model under npugraph_ex did not equal eager")
	}
}

func checkCANN(r *Report, row Row, add func(level, format string, args ...any)) {
	if r.CANN == "" {
		add(VerdictWarn, "CANN version not found: cannot check it against %s expected by torch_npu %s", row.CANN, r.TorchNPU)
		return
	}
	prefix, suffix, ok := NormalizeCANN(r.CANN)
	switch {
	case !ok:
		add(VerdictUnsupported, "CANN version %q is not recognisable; torch_npu %s expects %s", r.CANN, r.TorchNPU, row.CANN)
	case prefix != row.CANN:
		add(VerdictUnsupported, "CANN %s does not match %s expected by torch_npu %s (TorchAir %s)", r.CANN, row.CANN, r.TorchNPU, row.TorchAir)
	case suffix != "":
		add(VerdictWarn, "CANN %s is a patch or pre-release build of %s", r.CANN, row.CANN)
	}
}

// Fingerprint is a short, stable hash of the fields that identify a runner's
// stack: what a score depends on, not what varies run to run (HBM use,
// power, device count, warnings). Scores are tagged with it.
func Fingerprint(r Report) string {
	fields := []string{
		"v1",
		"arch=" + r.Arch,
		"python=" + r.Python,
		"torch=" + r.Torch,
		"torch_npu=" + r.TorchNPU,
		"torchair_release=" + r.TorchAirRelease,
		"cann=" + r.CANN,
		"product=" + r.Product,
		"device_name=" + r.DeviceName,
		"driver=" + r.Driver,
		"profile=" + r.Profile,
	}
	if r.Environment != "" && r.Environment != "host" {
		// Only for an environment, so that host runners keep the
		// fingerprints they had before environments existed.
		fields = append(fields, "environment="+r.Environment)
	}
	sum := sha256.Sum256([]byte(strings.Join(fields, "\n")))
	return hex.EncodeToString(sum[:])[:12]
}
