package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/grading"
	"github.com/npugrade/npugrade/internal/runner"
	"github.com/npugrade/npugrade/internal/runnerclient"
)

func cmdRunner(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", envOr("NPUGRADE_SERVER", ""), "server URL")
	token := fs.String("token", os.Getenv("NPUGRADE_RUNNER_TOKEN"), "runner token (npugrade user add NAME --role runner)")
	slots := fs.Int("slots", 0, "jobs at once (default: the NPU count, or 1 on CPU)")
	profile := fs.String("profile", "", "runner profile (default: from the environment probe)")
	labels := fs.String("labels", "", "k=v,... labels shown to instructors")
	name := fs.String("name", "", "runner name (default: host name)")
	probe := fs.Bool("probe", false, "print the JSON environment report and exit")
	python := fs.String("python", "", "Python interpreter the notebooks run under (default /usr/bin/python3)")
	jupyter := fs.String("jupyter", "", "jupyter command")
	logLevel := fs.String("log-level", "info", "log level")
	sandboxConfig := sandboxFlags(fs)
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	rep, err := envprobe.Collect(ctx, envprobe.Options{Python: *python})
	if err != nil {
		fmt.Fprintln(stderr, "npugrade runner: environment probe:", err)
		return exitError
	}
	if *profile != "" {
		rep.Profile = *profile
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
	if *server == "" || *token == "" {
		fmt.Fprintln(stderr, "usage: npugrade runner --server URL --token TOKEN [--slots N] [--profile P] [--labels k=v,...]\n       npugrade runner --probe")
		return exitError
	}
	log := newLogger(stderr, *logLevel)
	if *slots <= 0 {
		*slots = max(1, rep.DeviceCount)
	}
	if *name == "" {
		*name, _ = os.Hostname()
	}
	lb := map[string]string{}
	for _, kv := range strings.Split(*labels, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok {
			lb[k] = v
		}
	}
	client := &runnerclient.Client{Server: *server, Token: *token}
	reg, err := client.Register(ctx, *name, *slots, lb, rep)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade runner:", err)
		return exitError
	}
	log.Info("registered", "runner", reg.RunnerID, "profile", rep.Profile, "verdict", rep.Verdict, "slots", *slots)
	match := func(req grading.Requirement) (bool, string) {
		return rep.Satisfies(req)
	}
	ex := &execution.Executor{Jupyter: *jupyter, Profile: rep.Profile, Match: match, Log: log}
	if ex.Sandbox, err = sandboxConfig(stderr); err != nil {
		fmt.Fprintln(stderr, "npugrade:", err)
		return exitError
	}
	if rep.HasNPU() {
		// The sandboxed kernel sees exactly the NPU device nodes and the
		// driver, read-only; nothing else of the host.
		ex.Sandbox.Devices, ex.Sandbox.DriverDirs = npuDevices()
	}
	if err := ex.Check(ctx); err != nil {
		fmt.Fprintln(stderr, "npugrade runner:", err)
		return exitError
	}
	r := &runner.Runner{
		Source: client, Executor: ex, Slots: *slots,
		HeartbeatEvery: time.Duration(reg.LeaseTTLSeconds / 3 * float64(time.Second)),
		Fingerprint:    rep.Fingerprint, Log: log,
	}
	_ = r.Run(ctx)
	log.Info("runner stopped")
	return exitOK
}

// npuDevices lists the Ascend device nodes and driver directories present
// on this host, as the docker-compose npu profile mounts them.
func npuDevices() (devices, driverDirs []string) {
	nodes, _ := filepath.Glob("/dev/davinci[0-9]*")
	for _, n := range append(nodes, "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc") {
		if _, err := os.Stat(n); err == nil {
			devices = append(devices, n)
		}
	}
	for _, d := range []string{"/usr/local/Ascend/driver", "/usr/local/Ascend/ascend-toolkit", "/usr/local/Ascend/cann"} {
		if _, err := os.Stat(d); err == nil {
			driverDirs = append(driverDirs, d)
		}
	}
	return devices, driverDirs
}
