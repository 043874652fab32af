package main

import (
	"context"
	"fmt"
	"io"

	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// sandboxFlags registers the isolation and limit flags shared by serve,
// runner and check, and returns a function that builds the config.
func sandboxFlags(fs *command) func(stderr io.Writer, env *envs.Env) (*sandbox.Config, error) {
	def := sandbox.DefaultConfig()
	mode := fs.Choice("sandbox", envOr("NPUGRADE_SANDBOX", sandbox.ModeBwrap), []string{sandbox.ModeBwrap, sandbox.ModeNone}, "kernel isolation: bwrap, or none (development only: learner code runs with the runner's rights)")
	mem := fs.String("memory-limit", sandbox.FormatSize(def.MemoryLimit), "memory limit per job, e.g. 512MiB or 2GiB")
	pids := fs.IntMin("pids-limit", def.PidsLimit, 1, "process limit per job")
	fsize := fs.String("file-size-limit", sandbox.FormatSize(def.FileSizeLimit), "largest file a job may write")
	disk := fs.String("disk-limit", sandbox.FormatSize(def.DiskLimit), "writable space per job")
	return func(stderr io.Writer, env *envs.Env) (*sandbox.Config, error) {
		w := fs.words()
		cfg := def
		cfg.Mode = *mode
		if cfg.Mode != sandbox.ModeBwrap && cfg.Mode != sandbox.ModeNone {
			// Only a value from NPUGRADE_SANDBOX can get here: --sandbox checks its own.
			return nil, w.Errorf("NPUGRADE_SANDBOX=%q: want %s or %s", cfg.Mode, sandbox.ModeBwrap, sandbox.ModeNone)
		}
		var err error
		if cfg.MemoryLimit, err = sandbox.ParseSize(*mem); err != nil {
			return nil, w.Errorf("--memory-limit: %s", w.flagProblem(err))
		}
		if cfg.FileSizeLimit, err = sandbox.ParseSize(*fsize); err != nil {
			return nil, w.Errorf("--file-size-limit: %s", w.flagProblem(err))
		}
		if cfg.DiskLimit, err = sandbox.ParseSize(*disk); err != nil {
			return nil, w.Errorf("--disk-limit: %s", w.flagProblem(err))
		}
		cfg.PidsLimit = *pids
		if env != nil {
			if cfg.Mode == sandbox.ModeNone {
				return nil, w.Errorf("--env %s needs the sandbox: --sandbox=none runs kernels on the host (use --env host)", env.Name)
			}
			cfg = env.Sandbox(cfg)
		}
		if cfg.Mode == sandbox.ModeNone {
			fmt.Fprintln(stderr, "npugrade:", w.T("WARNING: --sandbox=none: learner code runs unisolated with this process's rights"))
			return &cfg, nil
		}
		if err := sandbox.Check(cfg); err != nil {
			return nil, w.Errorf("this host cannot sandbox learner code (%s); fix that, or pass --sandbox=none on a development machine", w.flagProblem(err))
		}
		// A runner that was SIGKILLed never closed its sandboxes: remove
		// their cgroups, mounts and directories before taking work.
		if n, err := sandbox.Sweep(cfg); err != nil {
			fmt.Fprintln(stderr, "npugrade:", w.T("WARNING: removing sandboxes left by dead runners:"), err)
		} else if n > 0 {
			fmt.Fprintln(stderr, "npugrade:", w.F("removed %d sandboxes left by runners that died", n))
		}
		return &cfg, nil
	}
}

// outputLimitFlags registers the output limits shared by serve, runner and
// check, and returns a function that applies them to an executor.
func outputLimitFlags(fs *command) func(ex *execution.Executor) error {
	cell := fs.String("cell-output-limit", sandbox.FormatSize(execution.DefaultMaxCellOutput), "outputs kept per cell, e.g. 2MiB; beyond it they are truncated with a marker and the cell is graded incomplete-output")
	nb := fs.String("notebook-output-limit", sandbox.FormatSize(execution.DefaultMaxNotebookOutput), "outputs kept per notebook, e.g. 16MiB")
	grace := fs.Duration("interrupt-grace", execution.DefaultInterruptGrace, "how long a cell may run on after its timeout interrupt before the kernel is killed")
	return func(ex *execution.Executor) error {
		w := fs.words()
		var err error
		if ex.Output.PerCell, err = sandbox.ParseSize(*cell); err != nil {
			return w.Errorf("--cell-output-limit: %s", w.flagProblem(err))
		}
		if ex.Output.PerNotebook, err = sandbox.ParseSize(*nb); err != nil {
			return w.Errorf("--notebook-output-limit: %s", w.flagProblem(err))
		}
		if ex.Output.PerNotebook > 48<<20 {
			return w.Errorf("--notebook-output-limit %s: at most 48MiB (the server accepts executed notebooks of up to 64MiB)", *nb)
		}
		if *grace <= 0 {
			return w.Errorf("--interrupt-grace %s: must be positive", *grace)
		}
		ex.InterruptGrace = *grace
		// The executed notebook holds the rebuilt upload plus the outputs.
		ex.MaxNotebookBytes = max(execution.DefaultMaxNotebookBytes, ex.Output.PerNotebook+16<<20)
		return nil
	}
}

// executorFlags registers the isolation and output-limit flags that serve,
// runner and check share, and returns the function that applies them to an
// executor (its kernels in the grading environment envFor picks for its
// profile) and checks that the executor can run notebooks here.
func executorFlags(fs *command, envFor envChooser) func(ctx context.Context, ex *execution.Executor, stderr io.Writer) error {
	sandboxConfig := sandboxFlags(fs)
	applyOutputLimits := outputLimitFlags(fs)
	return func(ctx context.Context, ex *execution.Executor, stderr io.Writer) error {
		if err := applyOutputLimits(ex); err != nil {
			return err
		}
		profile := ex.Profile
		if profile == "" {
			profile = "cpu"
		}
		env, err := envFor(profile, stderr)
		if err != nil {
			return err
		}
		sb, err := sandboxConfig(stderr, env)
		if err != nil {
			return err
		}
		ex.Isolation = sb // ModeNone isolates with sandbox.None
		// A runner that was SIGKILLed never removed its job directories
		// (notebooks with hidden probe cells), sandboxed or not: remove
		// them before taking work, after the sandbox's Sweep (if any) stopped
		// what their kernels left running.
		if n, err := execution.SweepJobDirs(ex.WorkRoot); err != nil {
			fmt.Fprintln(stderr, "npugrade:", fs.words().T("WARNING: removing job directories left by dead runners:"), err)
		} else if n > 0 {
			fmt.Fprintln(stderr, "npugrade:", fs.words().F("removed %d job directories left by runners that died", n))
		}
		return ex.Check(ctx)
	}
}

// sandboxConfig is the sandbox configuration ex isolates its kernels with
// (nil when it uses another isolation backend).
func sandboxConfig(ex *execution.Executor) *sandbox.Config {
	sb, _ := ex.Isolation.(*sandbox.Config)
	return sb
}
