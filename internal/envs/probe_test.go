package envs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/sandbox"
)

func sandboxConfig(t *testing.T) sandbox.Config {
	t.Helper()
	base, err := os.MkdirTemp("", "npge")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	cfg := sandbox.DefaultConfig()
	cfg.BaseDir = filepath.Join(base, "b")
	return cfg
}

// TestProbeInsideTheEnvironment probes the cpu environment from inside:
// the report is its Python and PyTorch 2.x, not the host's.
func TestProbeInsideTheEnvironment(t *testing.T) {
	dir := envtest.RequireCPU(t)
	t.Parallel()
	s := Store{Dir: filepath.Dir(dir)}
	env, err := s.Get(filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Probe(context.Background(), env, sandboxConfig(t), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %+v", rep)
	host, err := envprobe.Collect(context.Background(), envprobe.Options{CPUOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Torch, "2.") {
		t.Errorf("torch %q in the environment, want 2.x", rep.Torch)
	}
	if rep.Python == "" || rep.Python == host.Python {
		t.Errorf("python %q: the host's (%s), not the environment's", rep.Python, host.Python)
	}
	if rep.Environment != env.Name || rep.Profile != envprobe.ProfileCPU || rep.Verdict != envprobe.VerdictOK {
		t.Errorf("environment %q profile %q verdict %q (%v)", rep.Environment, rep.Profile, rep.Verdict, rep.Warnings)
	}
	if rep.Fingerprint == host.Fingerprint || rep.Fingerprint != envprobe.Fingerprint(rep) {
		t.Errorf("fingerprint %q (host %q)", rep.Fingerprint, host.Fingerprint)
	}
	if env.Meta.StandIn != "" && env.Meta.StandIn != "absent" && !rep.NPUGraphExBackend {
		t.Errorf("the stand-in is installed (%s) but the probe sees no npugraph_ex backend", env.Meta.StandIn)
	}
	line := (Env{Name: env.Name, Meta: Meta{Source: env.Meta.Source, Report: &rep}}).Summary()
	if !strings.Contains(line, "torch "+rep.Torch) || !strings.Contains(line, "verdict ok") {
		t.Errorf("summary %q", line)
	}
	sb := sandboxConfig(t)
	sb.Mode = sandbox.ModeNone
	if _, err := Probe(context.Background(), env, sb, true); err == nil {
		t.Error("probed an environment without a sandbox")
	}
}
