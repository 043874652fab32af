package sandbox

import (
	"context"
	"log/slog"
	"maps"
	"path/filepath"

	"github.com/npugrade/npugrade/internal/domain"
)

// This file makes the package an isolation backend (domain.Isolation):
// *Config isolates with bubblewrap and cgroups (ModeNone delegates to
// None), and None runs the kernel unisolated.

var (
	_ domain.Isolation      = (*Config)(nil)
	_ domain.Isolation      = None{}
	_ domain.IsolatedKernel = (*Kernel)(nil)
	_ domain.IsolatedKernel = noneKernel{}
)

// Isolate prepares a sandboxed kernel for one job (PrepareKernel) whose
// environment is c.Env overlaid with env. With ModeNone it is None's.
func (c *Config) Isolate(ctx context.Context, jobDir string, env map[string]string) (domain.IsolatedKernel, error) {
	if c.Mode == ModeNone {
		return None{}.Isolate(ctx, jobDir, env)
	}
	cfg := *c
	cfg.Env = maps.Clone(c.Env)
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	maps.Copy(cfg.Env, env)
	k, err := cfg.PrepareKernel(ctx, jobDir)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return k, nil
}

// Launch returns the nbconvert options that select the job's kernelspec
// and the environment entries that let nbconvert find it.
func (k *Kernel) Launch() (nbconvertArgs, driverEnv []string) { return k.Args, k.Env }

// LimitHits reports the limits of Stats that a run's stop reasons use.
func (k *Kernel) LimitHits() domain.LimitHits { return k.Stats().hits() }

// MemoryInUse is the job cgroup's current memory use (0 without a cgroup).
func (k *Kernel) MemoryInUse() int64 {
	if k.cg == nil {
		return 0
	}
	name := "memory.current"
	if k.cg.version == 1 {
		name = "memory.usage_in_bytes"
	}
	v, _ := readInt(filepath.Join(k.cg.memDir, name))
	return v
}

func (s Stats) hits() domain.LimitHits {
	return domain.LimitHits{MemoryLimit: s.MemoryLimit, MemoryLimitHit: s.MemoryLimitHit, PidsLimit: s.PidsLimit, PidsLimitHit: s.PidsLimitHit}
}

// None is the "none" isolation backend (--sandbox=none): the kernel is the
// host's python3 kernelspec, a child of the notebook driver with the
// runner's rights and the driver's allow-listed environment (which holds
// env already). Development only: every job logs a warning.
type None struct{}

// Isolate logs the warning; there is nothing to prepare.
func (None) Isolate(context.Context, string, map[string]string) (domain.IsolatedKernel, error) {
	slog.Warn("executing WITHOUT a sandbox: learner code runs with the runner's rights (--sandbox=none)")
	return noneKernel{}, nil
}

type noneKernel struct{}

func (noneKernel) Launch() (nbconvertArgs, driverEnv []string) {
	return []string{"--ExecutePreprocessor.kernel_name=python3"}, nil
}
func (noneKernel) MemoryInUse() int64          { return 0 }
func (noneKernel) Close() error                { return nil }
func (noneKernel) LimitHits() domain.LimitHits { return domain.LimitHits{} }
