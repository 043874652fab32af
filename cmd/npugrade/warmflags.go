package main

import (
	"context"
	"flag"
	"log/slog"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/runner"
	"github.com/npugrade/npugrade/internal/runnerproto"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// warmFlags registers --warm, --warm-spares and --preload (serve, runner
// and check) and returns a function that puts an executor behind a pool
// of pre-started kernels, --warm-spares per slot, with a stop function to
// call when the runner is done (it kills the spares). With --warm=false or
// --warm-spares 0 it returns the executor itself (the cold path: a driver
// and kernel started per job).
func warmFlags(fs *flag.FlagSet) func(ex *execution.Executor, slots int, log *slog.Logger) (runner.Executor, func()) {
	warm := fs.Bool("warm", true, "keep sandboxed kernels started ahead of the next jobs in every slot (false: start one per job, for debugging)")
	spares := fs.Int("warm-spares", 1, "pre-started kernels kept ready per slot; the next one starts while a job executes (each holds a kernel's memory: logged as 'warm spares ready'; 0: none, start one per job)")
	forkServer := fs.Bool("fork-server", true, "start warm kernels and drivers as forks of a zygote that imported torch and nbclient once, in milliseconds instead of seconds of CPU (needs root and a grading environment; elsewhere, or with false, each starts from scratch)")
	preload := fs.String("preload", "auto", "comma-separated modules imported in a pre-started kernel before it takes a job (auto: torch, plus torch_npu on NPU profiles and torch.compile's Dynamo, AOTAutograd and Inductor modules in a grading environment; modules not installed are skipped)")
	return func(ex *execution.Executor, slots int, log *slog.Logger) (runner.Executor, func()) {
		if !*warm || *spares <= 0 {
			return ex, func() {}
		}
		if log == nil {
			log = slog.Default()
		}
		mods := preloadModules(*preload, ex.Profile, sandboxConfig(ex) != nil && sandboxConfig(ex).RootFS != "")
		var zygotes []execution.Zygote
		if *forkServer {
			ex, zygotes = forkPath(ex, mods, log)
		}
		p := &execution.Pool{Exec: ex, Size: max(slots, 1) * *spares, PerSlot: *spares, Preload: mods, Zygotes: zygotes, Log: log}
		p.Start(context.Background())
		return p, func() {
			p.Close()
			for _, z := range zygotes {
				z.Close()
			}
		}
	}
}

// forkPath returns a copy of ex whose warm kernels and drivers are forked
// from zygotes (one of each per pool: slots pinned to different NPUs have
// different sandboxes), and the zygotes. The sandbox falls back to
// starting kernels from scratch, and says why once, where the fork path
// is unsupported (not root, no grading environment).
func forkPath(ex *execution.Executor, preload []string, log *slog.Logger) (*execution.Executor, []execution.Zygote) {
	sb := sandboxConfig(ex)
	if sb == nil || sb.Mode != sandbox.ModeBwrap {
		return ex, nil
	}
	kz := &sandbox.Zygote{Preload: preload, Log: log}
	dz := &execution.DriverZygote{Log: log}
	c := *sb
	c.Zygote = kz
	e := *ex
	e.Isolation, e.DriverZygote = &c, dz
	return &e, []execution.Zygote{kz, dz}
}

// preloadModules is the --preload list for a profile (auto:
// execution.AutoPreload).
func preloadModules(flagValue, profile string, inEnv bool) []string {
	if flagValue == "auto" {
		return execution.AutoPreload(profile, inEnv)
	}
	var out []string
	for _, m := range strings.Split(flagValue, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// spareReport sums the warm spares behind execs (the pools warmFlags
// made); nil when none keeps spares (cold path).
func spareReport(execs ...runner.Executor) *runnerproto.WarmSpares {
	var ws *runnerproto.WarmSpares
	for _, e := range execs {
		p, ok := e.(*execution.Pool)
		if !ok {
			continue
		}
		if ws == nil {
			ws = &runnerproto.WarmSpares{PerSlot: p.PerSlot}
		}
		ws.Kept += max(p.Size, 1)
		ws.Ready += p.Ready()
		ws.MemoryBytes += p.SpareMemory()
	}
	return ws
}

// waitSpares waits (at most timeout) until every pool behind execs has its
// spares ready, so that what the runner reports is what they hold.
func waitSpares(ctx context.Context, timeout time.Duration, execs ...runner.Executor) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, e := range execs {
		if p, ok := e.(*execution.Pool); ok {
			p.WaitReady(ctx)
		}
	}
}

// watchSpares calls report with the spares' state every time it changed
// noticeably (a spare taken or ready, memory moved by 5 %) and at least
// every refresh, until ctx ends. The checks read /proc and the cgroups
// only: cheap enough every second.
func watchSpares(ctx context.Context, refresh time.Duration, report func(runnerproto.WarmSpares), execs ...runner.Executor) {
	var last runnerproto.WarmSpares
	var sent time.Time
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if ws := spareReport(execs...); ws != nil {
			moved := ws.MemoryBytes-last.MemoryBytes > last.MemoryBytes/20 || last.MemoryBytes-ws.MemoryBytes > last.MemoryBytes/20
			if sent.IsZero() || ws.Ready != last.Ready || ws.Kept != last.Kept || moved || time.Since(sent) >= refresh {
				report(*ws)
				last, sent = *ws, time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
