package envprobe

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed probe.py
var probeScript string

const probeMarker = "NPUGRADE_ENVPROBE_JSON:"

// Options says where Collect looks. Every source is injectable so tests (and
// unusual hosts) can point it elsewhere; the zero value probes this machine.
type Options struct {
	// Python is the interpreter the notebooks will run under. Default:
	// /usr/bin/python3 if it exists, else python3 from PATH.
	Python string
	// NPUSMI is the npu-smi command. Default: "npu-smi" from PATH; a host
	// without it is treated as having no driver information.
	NPUSMI string
	// Getenv reads ASCEND_HOME_PATH and ASCEND_TOOLKIT_HOME. Default os.Getenv.
	// The Python probe itself always inherits the real process environment.
	Getenv func(string) string
	// AscendRoot holds ascend-toolkit/latest and cann-<version>. Default
	// /usr/local/Ascend.
	AscendRoot string
	// ToolkitInfo, if set, is the only ascend_toolkit_install.info read.
	ToolkitInfo string
	// PlatformConfigDir, if set, is the only directory searched for
	// <device name>.ini.
	PlatformConfigDir string
	// Smoke runs the npugraph_ex smoke test when an NPU is present.
	Smoke bool
	// CPUOnly skips every NPU source and attests a cpu runner, for NPU hosts
	// whose stack is unsupported but whose CPU can still grade CPU questions.
	CPUOnly bool
	// ProbeTimeout bounds the Python probe (imports of torch_npu and the
	// smoke test's graph capture take tens of seconds). Default 5 minutes.
	ProbeTimeout time.Duration
	// CommandTimeout bounds npu-smi. Default 30 seconds.
	CommandTimeout time.Duration
	// Command, when set, builds the command that runs the Python probe
	// (name is Python, args its arguments): a grading environment runs it
	// inside its sandbox, so that the report is the environment's, not the
	// host's. Its environment is the command's own.
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
	// Root is the host path of the environment's root filesystem when the
	// kernels run in one: CANN files (AscendRoot, ASCEND_HOME_PATH) are
	// read under it. Empty: the host's.
	Root string
}

func (o Options) withDefaults() (Options, error) {
	if o.Python == "" && o.Command != nil {
		o.Python = "/usr/bin/python3"
	}
	if o.Python == "" {
		if st, err := os.Stat("/usr/bin/python3"); err == nil && !st.IsDir() {
			o.Python = "/usr/bin/python3"
		} else if p, err := exec.LookPath("python3"); err == nil {
			o.Python = p
		} else {
			return o, errors.New("no Python interpreter: /usr/bin/python3 missing and python3 not on PATH")
		}
	}
	if o.NPUSMI == "" {
		o.NPUSMI = "npu-smi"
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.AscendRoot == "" {
		o.AscendRoot = filepath.Join("/", o.Root, "usr/local/Ascend")
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 5 * time.Minute
	}
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 30 * time.Second
	}
	return o, nil
}

// probeResult mirrors the JSON that probe.py prints.
type probeResult struct {
	SysVersion        string            `json:"sys_version"`
	Python            string            `json:"python"`
	Machine           string            `json:"machine"`
	Torch             string            `json:"torch"`
	TorchNPU          string            `json:"torch_npu"`
	TorchAir          *bool             `json:"torchair"`
	Dynamo            bool              `json:"dynamo"`
	NPUGraphExBackend bool              `json:"npugraph_ex_backend"`
	CANN              string            `json:"cann"`
	NPUAvailable      bool              `json:"npu_available"`
	DeviceCount       int               `json:"device_count"`
	DeviceName        string            `json:"device_name"`
	SmokeOK           *bool             `json:"smoke_ok"`
	Errors            map[string]string `json:"errors"`
}

// Collect probes this runner and returns a validated Report. It fails only
// when the Python probe cannot run or says nothing, since a runner without a
// working interpreter cannot run notebooks at all; a missing or unreadable
// npu-smi, toolkit info or platform config becomes a warning instead.
func Collect(ctx context.Context, opts Options) (Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Report{}, fmt.Errorf("collect: %w", err)
	}
	pr, err := runProbe(ctx, opts)
	if err != nil {
		return Report{}, fmt.Errorf("collect: %w", err)
	}
	r := Report{Arch: pr.Machine, Python: pr.Python, Torch: pr.Torch}
	if r.Python == "" {
		r.Python = strings.Fields(pr.SysVersion + " ")[0]
	}
	if e := pr.Errors["probe"]; e != "" {
		r.note(VerdictWarn, "python probe stopped early: %s", e)
	}
	if e := pr.Errors["torch"]; e != "" {
		r.note(VerdictOK, "import torch failed: %s", e)
	}
	if opts.CPUOnly {
		// The probe was told to skip NPU queries; ignore anything NPU-shaped
		// it reports anyway, so the attestation is a plain cpu runner (whose
		// environment may register the CPU stand-in of the backend).
		r.NPUGraphExBackend = pr.NPUGraphExBackend
		return Validate(r), nil
	}
	r.TorchNPU, r.NPUGraphExBackend, r.SmokeOK = pr.TorchNPU, pr.NPUGraphExBackend, pr.SmokeOK
	if pr.NPUAvailable {
		r.DeviceCount, r.DeviceName = pr.DeviceCount, pr.DeviceName
	}

	if r.TorchNPU != "" && pr.TorchAir != nil && !*pr.TorchAir {
		r.note(VerdictWarn, "torch_npu %s is installed but import torchair failed: %s", r.TorchNPU, pr.Errors["torchair"])
	}
	if e := pr.Errors["dynamo"]; r.TorchNPU != "" && e != "" {
		// Validate will say the backend is missing; this says why.
		r.note(VerdictOK, "import torch._dynamo failed: %s", e)
	}

	smi, smiFound := collectNPUSMI(ctx, opts, &r)
	if smiFound && len(smi.Chips) > 0 && r.DeviceCount == 0 {
		// The driver sees NPUs but torch does not: report the host as an NPU
		// host so Validate judges it as one, rather than quietly calling it a
		// cpu runner.
		r.DeviceCount = len(smi.Chips)
		if r.DeviceName == "" {
			r.DeviceName = smiDeviceName(smi.Chips[0].Name)
		}
		why := "torch_npu is not importable"
		if e := pr.Errors["torch_npu"]; e != "" {
			why += " (" + e + ")"
		}
		switch {
		case r.Torch == "":
			why = "torch is not importable"
		case r.TorchNPU != "" && pr.Errors["npu_available"] != "":
			why = "torch.npu.is_available() failed: " + pr.Errors["npu_available"]
		case r.TorchNPU != "":
			why = "torch.npu.is_available() is False"
		}
		r.note(VerdictUnsupported, "npu-smi lists %d NPU chip(s) but %s; set CPUOnly to run this host as a cpu runner", len(smi.Chips), why)
	}
	if pr.NPUAvailable && pr.DeviceCount > 0 && !smiFound {
		r.note(VerdictOK, "npu-smi not found: driver version unknown")
	}
	if opts.Smoke && r.HasNPU() && r.SmokeOK == nil {
		r.note(VerdictOK, "smoke test requested but not run: torch.npu is not usable")
	}

	arch := r.Arch
	if arch == "" {
		arch = goarchToMachine(runtime.GOARCH)
	}
	homes, homeNote := ascendHomes(opts)
	collectCANN(opts, &r, pr.CANN, homes, homeNote, arch)
	if r.DeviceName != "" {
		collectCoreCounts(opts, &r, homes, arch)
	}
	return Validate(r), nil
}

func runProbe(ctx context.Context, opts Options) (probeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, opts.ProbeTimeout)
	defer cancel()
	args := []string{"-c", probeScript}
	if opts.Smoke {
		args = append(args, "--smoke")
	}
	if opts.CPUOnly {
		args = append(args, "--cpu-only")
	}
	var cmd *exec.Cmd
	if opts.Command != nil {
		cmd = opts.Command(ctx, opts.Python, args...)
	} else {
		cmd = exec.CommandContext(ctx, opts.Python, args...)
		cmd.Env = append(os.Environ(), "PYTHONIOENCODING=utf-8", "PYTHONDONTWRITEBYTECODE=1")
	}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return probeResult{}, fmt.Errorf("python probe %s: %w", opts.Python, ctx.Err())
	}
	line := ""
	for _, l := range strings.Split(stdout.String(), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), probeMarker); ok {
			line = rest
		}
	}
	if line == "" {
		if runErr == nil {
			runErr = errors.New("no result line")
		}
		return probeResult{}, fmt.Errorf("python probe %s: %w; stderr: %s", opts.Python, runErr, tail(stderr.String(), 800))
	}
	var pr probeResult
	if err := json.Unmarshal([]byte(line), &pr); err != nil {
		return probeResult{}, fmt.Errorf("python probe %s: decode result: %w", opts.Python, err)
	}
	return pr, nil
}

func collectNPUSMI(ctx context.Context, opts Options, r *Report) (NPUSMIInfo, bool) {
	bin, err := exec.LookPath(opts.NPUSMI)
	if err != nil {
		return NPUSMIInfo{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, opts.CommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "info")
	cmd.WaitDelay = 2 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.note(VerdictWarn, "npu-smi info: %v; stderr: %s", err, tail(stderr.String(), 300))
		return NPUSMIInfo{}, true
	}
	info, err := ParseNPUSMI(string(out))
	if err != nil {
		r.note(VerdictWarn, "%v", err)
		return NPUSMIInfo{}, true
	}
	r.Driver = info.Driver
	for _, c := range info.Unhealthy() {
		r.note(VerdictWarn, "npu-smi: NPU %d chip %d (%s) health is %s", c.NPU, c.Chip, c.Name, c.Health)
	}
	return info, true
}

// smiDeviceName turns an npu-smi name ("910B3") into the form
// torch.npu.get_device_name uses ("Ascend910B3"). It is only a fallback: on
// A3 npu-smi says "Ascend910" where torch says "Ascend910_9391".
func smiDeviceName(name string) string {
	if name == "" || strings.HasPrefix(name, "Ascend") {
		return name
	}
	return "Ascend" + name
}

// ascendHomes lists CANN install directories in order of preference: the
// ones set_env.sh exported, ascend-toolkit/latest, then cann-<version>
// directories newest first. note is non-empty when several cann-* installs
// exist, since then the newest may not be the one in use.
func ascendHomes(opts Options) (homes []string, note string) {
	for _, env := range []string{"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"} {
		if v := opts.Getenv(env); v != "" && !slices.Contains(homes, filepath.Join("/", opts.Root, v)) {
			v = filepath.Join("/", opts.Root, v)
			homes = append(homes, v)
		}
	}
	homes = append(homes, filepath.Join(opts.AscendRoot, "ascend-toolkit", "latest"))
	canns, _ := filepath.Glob(filepath.Join(opts.AscendRoot, "cann-*"))
	slices.SortFunc(canns, func(a, b string) int {
		return -compareCANN(strings.TrimPrefix(filepath.Base(a), "cann-"), strings.TrimPrefix(filepath.Base(b), "cann-"))
	})
	if len(canns) > 1 {
		names := make([]string, len(canns))
		for i, c := range canns {
			names[i] = filepath.Base(c)
		}
		note = fmt.Sprintf("several CANN installs under %s (%s); set ASCEND_HOME_PATH to choose", opts.AscendRoot, strings.Join(names, ", "))
	}
	return append(homes, canns...), note
}

func collectCANN(opts Options, r *Report, fromTorchNPU string, homes []string, homeNote, arch string) {
	var candidates []string
	if opts.ToolkitInfo != "" {
		candidates = []string{opts.ToolkitInfo}
	} else {
		for _, h := range homes {
			candidates = append(candidates,
				filepath.Join(h, arch+"-linux", "ascend_toolkit_install.info"),
				filepath.Join(h, "ascend_toolkit_install.info"))
		}
	}
	var info ToolkitInfo
	var infoPath string
	for _, p := range candidates {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			r.note(VerdictWarn, "read %s: %v", p, err)
			continue
		}
		t, err := ParseToolkitInstallInfo(string(data))
		if err != nil {
			r.note(VerdictWarn, "%s: %v", p, err)
			continue
		}
		info, infoPath = t, p
		break
	}
	if infoPath != "" && homeNote != "" && strings.Contains(infoPath, string(filepath.Separator)+"cann-") &&
		opts.Getenv("ASCEND_HOME_PATH") == "" && opts.Getenv("ASCEND_TOOLKIT_HOME") == "" {
		r.note(VerdictWarn, "%s; read %s", homeNote, infoPath)
	}

	// torch_npu's own answer reflects the libraries it loaded, so it wins;
	// the file is the fallback and a cross-check.
	switch {
	case fromTorchNPU != "":
		r.CANN = fromTorchNPU
		if info.Version != "" {
			a, _, _ := NormalizeCANN(fromTorchNPU)
			b, _, _ := NormalizeCANN(info.Version)
			if a != b {
				r.note(VerdictWarn, "CANN %s reported by torch_npu differs from %s in %s", fromTorchNPU, info.Version, infoPath)
			}
		}
	case info.Version != "":
		r.CANN = info.Version
	case r.HasNPU() || r.TorchNPU != "":
		r.note(VerdictOK, "no ascend_toolkit_install.info found (looked in %s)", strings.Join(homes, ", "))
	}
}

func collectCoreCounts(opts Options, r *Report, homes []string, arch string) {
	file := r.DeviceName + ".ini"
	var dirs []string
	if opts.PlatformConfigDir != "" {
		dirs = []string{opts.PlatformConfigDir}
	} else {
		archDirs := []string{arch + "-linux"}
		if arch == "aarch64" {
			archDirs = append(archDirs, "arm64-linux")
		}
		for _, h := range homes {
			for _, a := range archDirs {
				dirs = append(dirs, filepath.Join(h, a, "data", "platform_config"))
			}
			dirs = append(dirs, filepath.Join(h, "data", "platform_config"))
		}
	}
	for _, d := range dirs {
		p := filepath.Join(d, file)
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			r.note(VerdictOK, "core counts unknown: read %s: %v", p, err)
			return
		}
		s, err := ParseSoCInfo(string(data))
		if err != nil {
			r.note(VerdictOK, "core counts unknown: %s: %v", p, err)
			return
		}
		r.AICoreCount, r.VectorCoreCount = s.AICoreCount, s.VectorCoreCount
		return
	}
	r.note(VerdictOK, "core counts unknown: no platform_config %s found", file)
}

// compareCANN orders normalised CANN versions; an RC precedes the numbered
// patch of the same major.minor. Unparsable versions sort first.
func compareCANN(a, b string) int {
	ka, kb := cannKey(a), cannKey(b)
	return slices.Compare(ka, kb)
}

func cannKey(v string) []int {
	p, _, ok := NormalizeCANN(v)
	if !ok {
		return []int{-1}
	}
	parts := strings.Split(p, ".")
	key := make([]int, 0, 4)
	for i, s := range parts {
		if i == 2 && strings.HasPrefix(s, "RC") {
			n, _ := strconv.Atoi(s[2:])
			key = append(key, -1, n) // RCs before .0
			continue
		}
		n, _ := strconv.Atoi(s)
		key = append(key, n)
		if i == 2 {
			key = append(key, 0)
		}
	}
	return key
}

func goarchToMachine(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	}
	return goarch
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
