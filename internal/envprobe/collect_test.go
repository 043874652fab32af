package envprobe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakes holds executables written once, before any test runs: writing an
// executable while parallel tests fork can make exec fail with ETXTBSY.
var fakes struct {
	dir string
	// python fakes print a synthetic probe result (testdata/synthetic).
	pythonA2, pythonA3, pythonNoTorchNPU, pythonA2B2, pythonSilent, pythonSlow string
	// npu-smi fakes are fed with recorded data: they cat a recording.
	npuSMIRecordedA2, npuSMIRecordedA3, npuSMIRecorded310P, npuSMIBroken string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "envprobe-fakes-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := writeFakes(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func writeFakes(dir string) error {
	fakes.dir = dir
	abs := func(parts ...string) (string, error) {
		return filepath.Abs(filepath.Join(append([]string{"testdata"}, parts...)...))
	}
	script := func(name, body string) (string, error) {
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755)
	}
	syntheticPython := func(name, jsonFile string) (string, error) {
		src, err := abs("synthetic", jsonFile)
		if err != nil {
			return "", err
		}
		// Prints noise first, like torch_npu's warnings, then the result line.
		return script(name, fmt.Sprintf("echo 'Warning: The path owner does not match the current user.'\nprintf 'NPUGRADE_ENVPROBE_JSON:'\nexec cat %q\n", src))
	}
	recordedSMI := func(name, recordingFile string) (string, error) {
		src, err := abs("recordings", recordingFile)
		if err != nil {
			return "", err
		}
		return script(name, fmt.Sprintf("[ \"$1\" = info ] || { echo 'fake npu-smi: only \"info\" is recorded' >&2; exit 2; }\nexec cat %q\n", src))
	}
	for _, f := range []struct {
		dst  *string
		make func() (string, error)
	}{
		{&fakes.pythonA2, func() (string, error) {
			return syntheticPython("python-fake-synthetic-a2", "probe-a2-910b3-torchair-7.3.0.json")
		}},
		{&fakes.pythonA3, func() (string, error) {
			return syntheticPython("python-fake-synthetic-a3", "probe-a3-910-9391-torchair-7.1.0.json")
		}},
		{&fakes.pythonNoTorchNPU, func() (string, error) {
			return syntheticPython("python-fake-synthetic-no-torch-npu", "probe-no-torch-npu.json")
		}},
		{&fakes.pythonA2B2, func() (string, error) {
			return syntheticPython("python-fake-synthetic-a2-910b2", "probe-a2-910b2.json")
		}},
		{&fakes.pythonSilent, func() (string, error) {
			return script("python-fake-silent", "echo 'Traceback: something broke' >&2\nexit 1\n")
		}},
		{&fakes.pythonSlow, func() (string, error) { return script("python-fake-slow", "exec sleep 30\n") }},
		{&fakes.npuSMIRecordedA2, func() (string, error) {
			return recordedSMI("npu-smi-fake-fed-with-recorded-a2-910b3", "npu-smi-info.a2-910b3-8npu.txt")
		}},
		{&fakes.npuSMIRecordedA3, func() (string, error) {
			return recordedSMI("npu-smi-fake-fed-with-recorded-a3-ascend910", "npu-smi-info.a3-ascend910-8npu-16chip.txt")
		}},
		{&fakes.npuSMIRecorded310P, func() (string, error) {
			return recordedSMI("npu-smi-fake-fed-with-recorded-310p3", "npu-smi-info.310p3-2card-4chip.txt")
		}},
		{&fakes.npuSMIBroken, func() (string, error) {
			return script("npu-smi-fake-broken", "echo 'dcmi model initialized failed' >&2\nexit 255\n")
		}},
	} {
		p, err := f.make()
		if err != nil {
			return err
		}
		*f.dst = p
	}
	return nil
}

// ascendHome lays out a CANN install in a temp dir with recorded files
// copied to where Collect looks for them.
func ascendHome(t *testing.T, files map[string]string) string {
	t.Helper()
	home := t.TempDir()
	for rel, rec := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(recording(t, rec)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// isolated returns options that cannot see this machine's Ascend install.
func isolated(t *testing.T, python, npuSMI string, env map[string]string) Options {
	return Options{
		Python:         python,
		NPUSMI:         npuSMI,
		Getenv:         envMap(env),
		AscendRoot:     t.TempDir(),
		ProbeTimeout:   20 * time.Second,
		CommandTimeout: 10 * time.Second,
	}
}

func hasWarning(r Report, sub string) bool {
	return slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, sub) })
}

// TestCollectRealCPU runs the real probe with the real interpreter: on this
// project's CI machine that is CPU torch 1.13 with no torch._dynamo and no
// torch_npu.
func TestCollectRealCPU(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("no python3 on this machine")
		}
	}
	if _, err := exec.LookPath("npu-smi"); err == nil {
		t.Skip("npu-smi on PATH: this is not a CPU machine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Collect(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %+v", r)
	if r.Profile != ProfileCPU || r.Product != "" || r.DeviceCount != 0 || r.TorchNPU != "" {
		t.Errorf("not a cpu report: %+v", r)
	}
	if r.Arch != goarchToMachine(runtime.GOARCH) {
		t.Errorf("arch %q, want %q", r.Arch, goarchToMachine(runtime.GOARCH))
	}
	if PythonMinor(r.Python) == "" {
		t.Errorf("python %q", r.Python)
	}
	if !hasWarning(r, "no NPU found") {
		t.Errorf("no 'no NPU found' warning in %q", r.Warnings)
	}
	if r.Torch != "" {
		if r.Verdict != VerdictOK {
			t.Errorf("verdict %q with torch %s: %q", r.Verdict, r.Torch, r.Warnings)
		}
		if r.NPUGraphExBackend {
			t.Error("npugraph_ex backend on a cpu machine")
		}
	} else if r.Verdict != VerdictWarn {
		t.Errorf("verdict %q without torch", r.Verdict)
	}
	if len(r.Fingerprint) != 12 {
		t.Errorf("fingerprint %q", r.Fingerprint)
	}
}

func TestCollectA2Fakes(t *testing.T) {
	t.Parallel()
	// New CANN layout: ASCEND_HOME_PATH=/usr/local/Ascend/cann-8.5.0.
	home := ascendHome(t, map[string]string{"aarch64-linux/ascend_toolkit_install.info": "ascend_toolkit_install.cann-8.5.0.info"})
	opts := isolated(t, fakes.pythonA2, fakes.npuSMIRecordedA2, map[string]string{"ASCEND_HOME_PATH": home})
	opts.Smoke = true
	r, err := Collect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{
		Arch: "aarch64", Python: "3.11.6", Torch: "2.9.0+cpu", TorchNPU: "2.9.0", TorchAirRelease: "7.3.0",
		CANN: "8.5.0", CANNExpected: "8.5.0", Product: "A2", DeviceName: "Ascend910B3", DeviceCount: 8,
		Driver: "25.2.0", NPUGraphExBackend: true, Profile: ProfileNPUA2, Verdict: VerdictOK,
	}
	checkReport(t, r, want)
	if r.SmokeOK == nil || !*r.SmokeOK {
		t.Errorf("smoke_ok = %v", r.SmokeOK)
	}
	if !slices.Equal(r.Features, []string{"reduce_overhead_mode", "npugraph_ex_backend"}) {
		t.Errorf("features %q", r.Features)
	}
	// No Ascend910B3.ini was provided: informational only.
	if !hasWarning(r, "core counts unknown") || r.AICoreCount != 0 {
		t.Errorf("core counts: %d, warnings %q", r.AICoreCount, r.Warnings)
	}
}

func TestCollectA3Fakes(t *testing.T) {
	t.Parallel()
	// Classic layout under the Ascend root, found without any env var.
	opts := isolated(t, fakes.pythonA3, fakes.npuSMIRecordedA3, nil)
	root := ascendHome(t, map[string]string{"ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info": "ascend_toolkit_install.cann-8.2.RC1.info"})
	opts.AscendRoot = root
	r, err := Collect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{
		Arch: "aarch64", Python: "3.10.14", Torch: "2.6.0+cpu", TorchNPU: "2.6.0", TorchAirRelease: "7.1.0",
		CANN: "8.2.RC1", CANNExpected: "8.2.RC1", Product: "A3", DeviceName: "Ascend910_9391", DeviceCount: 16,
		Driver: "25.3.rc1", Profile: ProfileNPUA3, Verdict: VerdictOK,
	}
	checkReport(t, r, want)
	if !slices.Equal(r.Features, []string{"reduce_overhead_mode"}) {
		t.Errorf("features %q", r.Features)
	}
	if ok, why := r.Satisfies(Requirement{Accelerator: "npu", Product: "A3", TorchAir: "7.3.0"}); ok || !strings.Contains(why, "TorchAir 7.1.0") {
		t.Errorf("Satisfies(7.3.0) = %v, %q", ok, why)
	}
}

func TestCollectNPUHostWithoutTorchNPU(t *testing.T) {
	t.Parallel()
	opts := isolated(t, fakes.pythonNoTorchNPU, fakes.npuSMIRecorded310P, nil)
	r, err := Collect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictUnsupported || r.Profile != "" || r.DeviceCount != 4 || r.DeviceName != "Ascend310P3" || r.Driver != "25.2.0" {
		t.Errorf("got %+v", r)
	}
	for _, w := range []string{"npu-smi lists 4 NPU chip(s) but torch_npu is not importable", "Ascend310P3 is not a supported product"} {
		if !hasWarning(r, w) {
			t.Errorf("no warning %q in %q", w, r.Warnings)
		}
	}
	// The same host attested as a cpu runner.
	opts.CPUOnly = true
	r, err = Collect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictOK || r.Profile != ProfileCPU || r.Driver != "" || r.DeviceCount != 0 {
		t.Errorf("CPUOnly: %+v", r)
	}
}

func TestCollectCPUOnlyIgnoresNPU(t *testing.T) {
	t.Parallel()
	// The fake ignores --cpu-only and reports an NPU anyway; Collect must not.
	opts := isolated(t, fakes.pythonA2, fakes.npuSMIRecordedA2, nil)
	opts.CPUOnly = true
	r, err := Collect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Profile != ProfileCPU || r.TorchNPU != "" || r.DeviceName != "" || r.Verdict != VerdictOK {
		t.Errorf("got %+v", r)
	}
}

func TestCollectPlatformConfig(t *testing.T) {
	t.Parallel()
	home := ascendHome(t, map[string]string{
		// The recording was grepped from ${ASCEND_HOME_PATH}/arm64-linux/...
		"arm64-linux/data/platform_config/Ascend910B2.ini": "platform_config.Ascend910B2.SoCInfo.txt",
		"aarch64-linux/ascend_toolkit_install.info":        "ascend_toolkit_install.cann-8.5.0.info",
	})
	opts := isolated(t, fakes.pythonA2B2, filepath.Join(fakes.dir, "no-such-npu-smi"), map[string]string{"ASCEND_TOOLKIT_HOME": home})
	r, err := Collect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.AICoreCount != 24 || r.VectorCoreCount != 48 {
		t.Errorf("cores %d/%d, warnings %q", r.AICoreCount, r.VectorCoreCount, r.Warnings)
	}
	if r.Verdict != VerdictOK || r.Driver != "" || !hasWarning(r, "npu-smi not found") {
		t.Errorf("verdict %q driver %q warnings %q", r.Verdict, r.Driver, r.Warnings)
	}
	// Explicit directory wins and a broken file is reported.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Ascend910B2.ini"), []byte("[SoCInfo]\nai_core_cnt=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.PlatformConfigDir = dir
	r, err = Collect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.AICoreCount != 0 || !hasWarning(r, "core counts unknown") || r.Verdict != VerdictOK {
		t.Errorf("broken ini: cores %d, verdict %q, warnings %q", r.AICoreCount, r.Verdict, r.Warnings)
	}
}

func TestCollectCANNSources(t *testing.T) {
	t.Parallel()
	t.Run("torch_npu and file disagree", func(t *testing.T) {
		t.Parallel()
		// torch_npu (synthetic) says 8.5.0; the file says 8.3.RC1.
		home := ascendHome(t, map[string]string{"aarch64-linux/ascend_toolkit_install.info": "ascend_toolkit_install.cann-8.3.RC1.info"})
		opts := isolated(t, fakes.pythonA2B2, fakes.npuSMIRecordedA2, map[string]string{"ASCEND_HOME_PATH": home})
		r, err := Collect(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.CANN != "8.5.0" || r.Verdict != VerdictWarn || !hasWarning(r, "differs from 8.3.RC1") {
			t.Errorf("cann %q verdict %q warnings %q", r.CANN, r.Verdict, r.Warnings)
		}
	})
	t.Run("several cann dirs", func(t *testing.T) {
		t.Parallel()
		root := ascendHome(t, map[string]string{
			"cann-8.3.RC1/aarch64-linux/ascend_toolkit_install.info": "ascend_toolkit_install.cann-8.3.RC1.info",
			"cann-8.5.0/aarch64-linux/ascend_toolkit_install.info":   "ascend_toolkit_install.cann-8.5.0.info",
		})
		opts := isolated(t, fakes.pythonA2, fakes.npuSMIRecordedA2, nil)
		opts.AscendRoot = root
		r, err := Collect(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.CANN != "8.5.0" || !hasWarning(r, "several CANN installs") || r.Verdict != VerdictWarn {
			t.Errorf("cann %q verdict %q warnings %q", r.CANN, r.Verdict, r.Warnings)
		}
	})
	t.Run("explicit file with a mismatching CANN", func(t *testing.T) {
		t.Parallel()
		opts := isolated(t, fakes.pythonA2, fakes.npuSMIRecordedA2, nil)
		opts.ToolkitInfo = filepath.Join("testdata", "recordings", "ascend_toolkit_install.cann-8.3.RC2.x86_64.info")
		r, err := Collect(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if r.CANN != "8.3.RC2" || r.Verdict != VerdictUnsupported || !hasWarning(r, "does not match 8.5.0") {
			t.Errorf("cann %q verdict %q warnings %q", r.CANN, r.Verdict, r.Warnings)
		}
	})
	t.Run("none found", func(t *testing.T) {
		t.Parallel()
		r, err := Collect(context.Background(), isolated(t, fakes.pythonA2, fakes.npuSMIRecordedA2, nil))
		if err != nil {
			t.Fatal(err)
		}
		if r.CANN != "" || r.Verdict != VerdictWarn || !hasWarning(r, "CANN version not found") {
			t.Errorf("cann %q verdict %q warnings %q", r.CANN, r.Verdict, r.Warnings)
		}
	})
}

func TestCollectBrokenNPUSMI(t *testing.T) {
	t.Parallel()
	home := ascendHome(t, map[string]string{"aarch64-linux/ascend_toolkit_install.info": "ascend_toolkit_install.cann-8.5.0.info"})
	r, err := Collect(context.Background(), isolated(t, fakes.pythonA2, fakes.npuSMIBroken, map[string]string{"ASCEND_HOME_PATH": home}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != VerdictWarn || r.Driver != "" || !hasWarning(r, "npu-smi info: exit status 255") {
		t.Errorf("verdict %q warnings %q", r.Verdict, r.Warnings)
	}
}

func TestCollectProbeFailures(t *testing.T) {
	t.Parallel()
	t.Run("no result line", func(t *testing.T) {
		t.Parallel()
		_, err := Collect(context.Background(), isolated(t, fakes.pythonSilent, "", nil))
		if err == nil || !strings.Contains(err.Error(), "something broke") || !strings.HasPrefix(err.Error(), "collect: python probe") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing interpreter", func(t *testing.T) {
		t.Parallel()
		_, err := Collect(context.Background(), isolated(t, filepath.Join(fakes.dir, "no-such-python"), "", nil))
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		opts := isolated(t, fakes.pythonSlow, "", nil)
		opts.ProbeTimeout = 200 * time.Millisecond
		start := time.Now()
		_, err := Collect(context.Background(), opts)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
}

func checkReport(t *testing.T, got, want Report) {
	t.Helper()
	type key struct {
		Arch, Python, Torch, TorchNPU, TorchAirRelease, CANN, CANNExpected, Product, DeviceName string
		DeviceCount                                                                             int
		Driver                                                                                  string
		NPUGraphExBackend                                                                       bool
		Profile, Verdict                                                                        string
	}
	k := func(r Report) key {
		return key{r.Arch, r.Python, r.Torch, r.TorchNPU, r.TorchAirRelease, r.CANN, r.CANNExpected, r.Product, r.DeviceName,
			r.DeviceCount, r.Driver, r.NPUGraphExBackend, r.Profile, r.Verdict}
	}
	if k(got) != k(want) {
		t.Errorf("got  %+v\nwant %+v\nwarnings %q", k(got), k(want), got.Warnings)
	}
}
