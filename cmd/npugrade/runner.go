package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/runner"
	"github.com/npugrade/npugrade/internal/runnerclient"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/sandbox"
)

var (
	envDevRoot        = envVar{"NPUGRADE_DEV_ROOT", "directory of the NPU device nodes, the default of --dev-root"}
	envVisibleDevices = envVar{"ASCEND_VISIBLE_DEVICES", "the NPUs the Ascend device plugin gave this pod (physical ids); the runner uses those"}
)

// spareStartWait bounds how long a runner waits for its warm spares
// before it registers, so that its registration says what they hold (a
// start takes seconds); on a slow or busy host it registers without
// waiting longer, and its heartbeats report them later.
const spareStartWait = 10 * time.Second

func cmdRunner(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand(ctx, "runner", "", "Run a remote runner: pull jobs from a server over HTTP with a runner token and execute them.\nWith --probe, print this host's environment report and exit (1 when unsupported).",
		envServer, envRunnerToken, envSandbox, envDevRoot, envVisibleDevices)
	server := fs.String("server", envOr("NPUGRADE_SERVER", ""), "server URL")
	token := fs.String("token", os.Getenv("NPUGRADE_RUNNER_TOKEN"), "runner token (npugrade user add NAME --role runner)")
	slots := fs.IntMin("slots", 0, 0, "jobs at once (default: the NPU count, or 1 on CPU)")
	profile := fs.String("profile", "", "runner profile (default: from the environment probe)")
	labels := fs.String("labels", "", "k=v,... labels shown to instructors")
	name := fs.String("name", "", "runner name (default: host name)")
	probe := fs.Bool("probe", false, "print the JSON environment report and exit")
	python := fs.String("python", "", "Python interpreter the notebooks run under (default /usr/bin/python3)")
	jupyter := fs.String("jupyter", "", "jupyter command")
	logLevel := fs.LogLevel()
	cellTimeout := fs.DurationMin("cell-timeout", 0, 0, "cap on any cell's timeout, whatever the server asks (0: the server's)")
	jobTimeout := fs.DurationMin("job-timeout", 0, 0, "cap on a whole notebook run, whatever the server asks (0: the server's)")
	drain := fs.DurationMin("drain-timeout", 30*time.Second, 0, "on SIGTERM, how long jobs in flight may finish before they are handed back")
	devices := fs.String("devices", "", "NPU device ids to use, e.g. 0,1 (default: every /dev/davinciN, or those ASCEND_VISIBLE_DEVICES names); slot i runs on the i-th")
	devRoot := fs.String("dev-root", envOr("NPUGRADE_DEV_ROOT", "/dev"), "directory of the NPU device nodes (davinciN); tests point it at a fake /dev built from recordings")
	envFor := envFlags(fs)
	setupExecutor := executorFlags(fs, envFor)
	warmPool := warmFlags(fs.FlagSet)
	if _, code, ok := fs.parse(args, 0, 0, stdout, stderr); !ok {
		return code
	}
	w := fs.words()
	lb, err := parseLabels(w, *labels)
	if err != nil {
		return fs.usageError(stderr, err.Error())
	}
	if !*probe && (*server == "" || *token == "") {
		return fs.usageError(stderr, w.T("--server (or NPUGRADE_SERVER) and --token (or NPUGRADE_RUNNER_TOKEN) are required unless --probe"))
	}
	if !*probe {
		if *server, err = serverURL(w, *server); err != nil {
			return fs.usageError(stderr, err.Error())
		}
	}
	rep, env, err := runnerReport(ctx, *python, *profile, *devRoot, envFor, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade runner:", w.T("environment probe:"), w.flagProblem(err))
		return exitError
	}
	sandboxed := fs.Lookup("sandbox") == nil || fs.Lookup("sandbox").Value.String() != sandbox.ModeNone
	npus, err := runnerDevices(w, &rep, *devRoot, *devices, *slots, sandboxed, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade runner:", err)
		return exitError
	}
	if *probe {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		if rep.Verdict == "unsupported" {
			return exitMismatch
		}
		return exitOK
	}
	log := newLogger(stderr, *logLevel)
	if *slots <= 0 {
		// One job per device: an NPU runs one notebook's graphs at a time.
		*slots = max(1, len(npus))
	}
	if *name == "" {
		*name, _ = os.Hostname()
	}
	ex := &execution.Executor{Jupyter: *jupyter, Profile: rep.Profile, Match: rep.Satisfies, Log: log}
	if err := setupExecutor(ctx, ex, stderr); err != nil {
		fmt.Fprintln(stderr, "npugrade runner:", err)
		return exitError
	}
	// The warm spares start before the runner registers: it then claims
	// jobs at execution speed, and reports the memory its spares hold.
	// A bad token is found a few seconds later than without spares.
	executor, slotExecs, stop := runnerExecutors(ex, npus, *slots, env != nil, warmPool, log)
	defer stop()
	allExecs := append([]runner.Executor{executor}, slotExecs...)
	waitSpares(ctx, spareStartWait, allExecs...)
	client := &runnerclient.Client{Server: *server, Token: *token, Lang: w.lang, WarmSpares: func() *runnerproto.WarmSpares { return spareReport(allExecs...) }}
	reg, err := client.Register(ctx, *name, *slots, lb, rep)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade runner:", registerProblem(w, *server, err))
		return exitError
	}
	log.Info("registered", "runner", reg.RunnerID, "profile", rep.Profile, "verdict", rep.Verdict, "slots", *slots)
	r := &runner.Runner{
		Source: client, Slots: *slots, Executor: executor, SlotExecutors: slotExecs,
		HeartbeatEvery: time.Duration(reg.LeaseTTLSeconds / 3 * float64(time.Second)),
		Fingerprint:    rep.Fingerprint, Log: log, DrainTimeout: *drain,
		MaxCellTimeout: *cellTimeout, MaxJobTimeout: *jobTimeout,
	}
	_ = r.Run(ctx)
	log.Info("runner stopped")
	return exitOK
}

// runnerExecutors are the executors of a runner's slots, each with its
// warm spares: one pinned to each NPU's slot, else one shared by every
// slot. stop stops their spares.
func runnerExecutors(ex *execution.Executor, npus []envprobe.Device, slots int, inEnv bool,
	warmPool func(*execution.Executor, int, *slog.Logger) (runner.Executor, func()), log *slog.Logger) (shared runner.Executor, pinned []runner.Executor, stop func()) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	if len(npus) == 0 {
		e, st := warmPool(ex, slots, log)
		return e, nil, st
	}
	if slots > len(npus) {
		log.Warn("more slots than NPUs: slots share devices", "slots", slots, "npus", len(npus))
	}
	bound := envprobe.Slots(npus, envprobe.Existing(envprobe.ManagerNodes), envprobe.Existing(envprobe.DriverDirs(inEnv)), slots)
	for _, e := range slotExecutors(ex, bound) {
		se, st := warmPool(e, 1, log)
		stops = append(stops, st)
		pinned = append(pinned, se)
	}
	return nil, pinned, stop
}

// parseLabels reads --labels k=v,k2=v2; an entry without "=" or with an
// empty key is a mistake, not something to drop silently.
func parseLabels(w words, s string) (map[string]string, error) {
	lb := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, w.Errorf("--labels: %q is not key=value", kv)
		}
		lb[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return lb, nil
}

// runnerReport is the environment report the runner registers with: the
// probe run where the kernels run (inside the grading environment --env
// picks for the profile, else on the host), with the profile --profile
// forces. The host is probed first to learn the profile and the NPUs.
func runnerReport(ctx context.Context, python, profile, devRoot string, envFor envChooser, stderr io.Writer) (envprobe.Report, *envs.Env, error) {
	host, hostErr := envprobe.Collect(ctx, envprobe.Options{Python: python})
	p := profile
	if p == "" {
		if hostErr != nil {
			return envprobe.Report{}, nil, hostErr
		}
		p = host.Profile
	}
	env, err := envFor(p, stderr)
	if err != nil {
		return envprobe.Report{}, nil, err
	}
	rep := host
	if env == nil {
		if hostErr != nil {
			return envprobe.Report{}, nil, hostErr
		}
		rep.Environment = envs.Host
	} else {
		sb := sandbox.DefaultConfig()
		if npus, err := envprobe.ListVisible(devRoot, os.Getenv(envprobe.PluginVisibleDevices), ""); err == nil && hostErr == nil && host.HasNPU() {
			s := envprobe.Slots(npus, envprobe.Existing(envprobe.ManagerNodes), envprobe.Existing(envprobe.DriverDirs(true)), 1)[0]
			sb.Devices, sb.DriverDirs = s.Nodes, s.DriverDirs
		}
		if rep, err = envs.Probe(ctx, *env, sb, p == envprobe.ProfileCPU); err != nil {
			return envprobe.Report{}, nil, err
		}
		if hostErr == nil && host.Driver != "" && rep.Driver == "" {
			rep.Driver = host.Driver // npu-smi is the host's
		}
	}
	if profile != "" {
		rep.Profile = profile
	}
	rep.Fingerprint = envprobe.Fingerprint(rep)
	return rep, env, nil
}

// slotExecutors pins slot i to NPU i (envprobe.Slots): a copy of base
// whose sandbox binds only that device node plus the manager nodes and
// the driver, read-only, and whose kernel therefore sees it as logical
// device 0 (ASCEND_RT_VISIBLE_DEVICES=0); unsandboxed (--sandbox=none)
// it sees every node, and gets the device's logical id among them.
func slotExecutors(base *execution.Executor, slots []envprobe.Slot) []*execution.Executor {
	out := make([]*execution.Executor, len(slots))
	for i, s := range slots {
		e := *base
		e.ExtraEnv = maps.Clone(base.ExtraEnv)
		if e.ExtraEnv == nil {
			e.ExtraEnv = map[string]string{}
		}
		if sb := sandboxConfig(base); sb == nil || sb.Mode == sandbox.ModeNone {
			maps.Copy(e.ExtraEnv, s.Unsandboxed())
		} else {
			maps.Copy(e.ExtraEnv, s.Env)
		}
		if base := sandboxConfig(base); base != nil {
			sb := *base
			sb.Devices, sb.DriverDirs = s.Nodes, s.DriverDirs
			e.Isolation = &sb
		}
		out[i] = &e
	}
	return out
}

// runnerDevices finds the NPUs this runner was given (the device
// plugin's ASCEND_VISIBLE_DEVICES and the davinci nodes under devRoot),
// records each slot's pinning in rep and says it on stderr. A runner
// whose profile needs an NPU and was given none is an error: started by
// mistake without its device (a pod that requested no
// huawei.com/Ascend910), it would only fail every job. A cpu runner
// keeps no devices.
func runnerDevices(w words, rep *envprobe.Report, devRoot, only string, slots int, sandboxed bool, stderr io.Writer) ([]envprobe.Device, error) {
	plugin := os.Getenv(envprobe.PluginVisibleDevices)
	rep.VisibleDevices = plugin
	npus, err := envprobe.ListVisible(devRoot, plugin, only)
	needNPU := strings.HasPrefix(rep.Profile, "npu") || rep.HasNPU()
	switch {
	case err != nil && needNPU:
		return nil, w.Errorf("profile %s needs an NPU, but this runner was given none: %s; on Kubernetes the pod must request one (resources.limits huawei.com/Ascend910: 1, see docs/operations.md), elsewhere check --devices and --dev-root", rep.Profile, w.flagProblem(err))
	case err != nil && only != "":
		return nil, errors.New(w.flagProblem(err))
	case err != nil:
		return nil, nil
	}
	if !needNPU {
		fmt.Fprintln(stderr, "npugrade runner:", w.F("%d NPU device nodes found, but the environment has the cpu profile (no usable torch_npu): kernels are not pinned to them", len(npus)))
		return nil, nil
	}
	if slots <= 0 {
		slots = len(npus)
	}
	rep.NPUSlots = envprobe.Pins(envprobe.Slots(npus, nil, nil, slots), sandboxed)
	for _, p := range rep.NPUSlots {
		fmt.Fprintln(stderr, "npugrade runner:", envprobe.PinLine(p, plugin))
	}
	return npus, nil
}

// registerProblem says why the runner could not register, in w's
// language: the server's problem as the server worded it (it was asked
// in w's language), or why the server could not be reached.
func registerProblem(w words, server string, err error) string {
	var se *runnerclient.ServerError
	if errors.As(err, &se) {
		return w.F("the server refused to register this runner: %d %s: %s", se.Status, w.T(http.StatusText(se.Status)), se.Message)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		host := server
		if u, perr := url.Parse(server); perr == nil && u.Host != "" {
			host = u.Host
		}
		return w.F("cannot reach the server %s: %s", host, strings.TrimPrefix(sysProblem(w, err), host+": "))
	}
	return w.flagProblem(err)
}
