package envs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// Sandbox returns sb set up to run kernels in e: its root filesystem as
// the system, its interpreter, and its image variables under the
// sandbox's own (explicit ones in sb.Env win).
func (e Env) Sandbox(sb sandbox.Config) sandbox.Config {
	sb.RootFS = e.Root()
	sb.Python = e.Meta.Python
	env := map[string]string{}
	for k, v := range e.Meta.Env {
		env[k] = v
	}
	for k, v := range sb.Env {
		env[k] = v
	}
	sb.Env = env
	return sb
}

// Probe runs the environment probe (envprobe's probe.py) inside e, in the
// sandbox sb describes (Devices and DriverDirs for an NPU profile), and
// returns its report with Environment set. cpuOnly skips the NPU queries.
func Probe(ctx context.Context, e Env, sb sandbox.Config, cpuOnly bool) (envprobe.Report, error) {
	sb = e.Sandbox(sb)
	if sb.Mode == sandbox.ModeNone {
		return envprobe.Report{}, fmt.Errorf("probe environment %s: it needs the bwrap sandbox, not --sandbox=none", e.Name)
	}
	jobDir, err := os.MkdirTemp("", "npugrade-envprobe-")
	if err != nil {
		return envprobe.Report{}, fmt.Errorf("probe environment %s: %w", e.Name, err)
	}
	defer os.RemoveAll(jobDir)
	k, err := sb.PrepareKernel(ctx, jobDir)
	if err != nil {
		return envprobe.Report{}, fmt.Errorf("probe environment %s: %w", e.Name, err)
	}
	defer k.Close()
	rep, err := envprobe.Collect(ctx, envprobe.Options{
		Python:  e.Meta.Python,
		Root:    e.Root(),
		CPUOnly: cpuOnly,
		Getenv:  func(k string) string { return e.Meta.Env[k] },
		Command: func(ctx context.Context, name string, args ...string) *exec.Cmd {
			return k.Command(ctx, name, args...)
		},
	})
	if err != nil {
		return envprobe.Report{}, fmt.Errorf("probe environment %s: %w", e.Name, err)
	}
	rep.Environment = e.Name
	rep.Fingerprint = envprobe.Fingerprint(rep)
	return rep, nil
}

// Summary is one line about an environment for `npugrade env list`.
func (e Env) Summary() string {
	r := e.Meta.Report
	if r == nil {
		return fmt.Sprintf("%-10s %-13s python %s  (not probed)", e.Name, e.Meta.Source, e.Meta.Python)
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	line := fmt.Sprintf("%-10s %-13s %-7s python %-7s torch %-12s torch_npu %-12s torchair %-6s cann %-9s npugraph_ex %-5t verdict %s",
		e.Name, e.Meta.Source, dash(r.Arch), dash(r.Python), dash(r.Torch), dash(r.TorchNPU), dash(r.TorchAirRelease), dash(r.CANN),
		r.NPUGraphExBackend, r.Verdict)
	for _, w := range r.Warnings {
		line += "\n    " + strings.TrimSpace(w)
	}
	return line
}
