package domain

import (
	"context"
	"fmt"
	"math"
)

// Isolation is an isolation backend: how a learner's kernel is kept from
// the runner's host (learner code is hostile). Package execution runs the
// notebook driver and asks the backend for one kernel per job; package
// sandbox implements it with bubblewrap and cgroups (and a "none" backend
// for development). Another backend (a Kubernetes pod, a VM) implements
// these two interfaces; the stop reasons it reports are written into the
// notebook by execution, the same for every backend.
type Isolation interface {
	// Isolate prepares one job's kernel. jobDir is the executor's private
	// job directory (the notebook lives there; the kernel must never see
	// it). env is what the kernel must see beyond the backend's own base
	// environment (env wins on conflicts). Nothing runs until the driver
	// starts the kernel. The caller always closes the result.
	Isolate(ctx context.Context, jobDir string, env map[string]string) (IsolatedKernel, error)
}

// IsolatedKernel is one job's prepared kernel.
type IsolatedKernel interface {
	// Launch is what the notebook driver needs to start this kernel:
	// nbconvert options ("--Class.trait=value") and KEY=VALUE entries
	// added to the driver's environment.
	Launch() (nbconvertArgs, driverEnv []string)
	// MemoryInUse is the memory the kernel and everything it started use
	// now, in bytes (0 when the backend cannot tell).
	MemoryInUse() int64
	// Close stops every process the kernel left and removes what Isolate
	// made. It is idempotent; LimitHits is final after it.
	Close() error
	// LimitHits reports the limits in force and which were hit.
	LimitHits() LimitHits
}

// LimitHits are the isolation's limits and which of them a run hit: what
// the stop reasons and the learner's report say.
type LimitHits struct {
	MemoryLimit    int64 // bytes; 0 when none
	MemoryLimitHit bool  // a process was killed at the memory limit
	PidsLimit      int   // processes+threads; 0 when none
	PidsLimitHit   bool  // a fork/clone was refused at the limit
}

// Violations renders the limits that were hit, for the learner's report,
// e.g. "exceeded the 2 GiB memory limit".
func (h LimitHits) Violations() []string {
	var v []string
	if h.MemoryLimitHit {
		v = append(v, fmt.Sprintf("exceeded the %s memory limit", FormatSize(h.MemoryLimit)))
	}
	if h.PidsLimitHit {
		v = append(v, fmt.Sprintf("exceeded the limit of %d processes/threads", h.PidsLimit))
	}
	return v
}

// FormatSize renders bytes with the largest binary unit that divides
// reasonably, e.g. 2147483648 -> "2 GiB", 1572864 -> "1.5 MiB".
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for i < len(units)-1 && math.Abs(f) >= 1024 {
		f /= 1024
		i++
	}
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d %s", int64(f), units[i])
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
