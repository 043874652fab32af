// Package execution runs a notebook with `jupyter nbconvert --execute`:
// a per-cell timeout that interrupts the kernel, a deadline for the whole
// run that kills the process group, errors recorded as outputs so later
// cells still run, and an environment built from an allow-list so the
// kernel never sees the runner's token or the server's configuration.
package execution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/npugrade/npugrade/internal/grading"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// Matcher says whether this runner satisfies a requirement, and if not, why.
type Matcher func(grading.Requirement) (bool, string)

// CPUMatcher is the capability of a runner with no accelerator.
func CPUMatcher(req grading.Requirement) (bool, string) {
	if req.Accelerator == "" || req.Accelerator == "cpu" {
		return true, ""
	}
	what := "an NPU runner"
	if req.Product != "" {
		what = "an NPU runner (Atlas " + req.Product + ")"
	}
	return false, "needs " + what + "; this runner has the cpu profile"
}

// Executor runs notebooks.
type Executor struct {
	// Jupyter is the jupyter command (default: /usr/bin/jupyter if present, else jupyter on PATH).
	Jupyter string
	// Profile is the runner profile the kernel sees as NPUGRADE_PROFILE.
	Profile string
	// Match decides which requirement-bearing cells run here.
	Match Matcher
	// WorkRoot holds per-job directories (default: os.TempDir()).
	WorkRoot string
	// ExtraEnv is added to the kernel's allow-listed environment
	// (e.g. ASCEND_RT_VISIBLE_DEVICES on NPU hosts).
	ExtraEnv map[string]string
	// MaxNotebookBytes bounds the executed notebook read back.
	MaxNotebookBytes int64
	// Sandbox isolates the kernel (bubblewrap, cgroups). nil or Mode
	// "none" runs the kernel with the runner's rights: development only,
	// and every job logs a warning.
	Sandbox *sandbox.Config
	Log     *slog.Logger
}

// Options are per-job settings.
type Options struct {
	CellTimeout time.Duration
	JobTimeout  time.Duration
}

// Metadata keys the executor writes into cells under metadata.npugrade.
const (
	MetaKey = "npugrade"
)

// CellMeta is what the executor notes about a cell for the grader.
type CellMeta struct {
	Skipped  string  `json:"skipped,omitempty"`   // why the cell was not run here
	TimedOut bool    `json:"timed_out,omitempty"` // the cell hit its timeout and was interrupted
	Timeout  float64 `json:"timeout,omitempty"`
}

// ReadCellMeta returns the executor's notes on c.
func ReadCellMeta(c *notebook.Cell) CellMeta {
	var m CellMeta
	if raw, ok := c.Metadata[MetaKey]; ok {
		_ = json.Unmarshal(raw, &m)
	}
	return m
}

func writeCellMeta(c *notebook.Cell, m CellMeta) {
	b, _ := json.Marshal(m)
	if c.Metadata == nil {
		c.Metadata = map[string]json.RawMessage{}
	}
	c.Metadata[MetaKey] = b
}

// grader_cfg.py: nbclient asks timeout_func for each cell's timeout, so a
// cell's metadata.grader.timeout beats the job's default.
const configPy = `c = get_config()
_default = %d
def _timeout(cell):
    g = cell.get("metadata", {}).get("grader", {}) or {}
    t = g.get("timeout")
    try:
        return int(t) if t else _default
    except Exception:
        return _default
c.ExecutePreprocessor.timeout_func = _timeout
c.ExecutePreprocessor.timeout = _default
c.ExecutePreprocessor.interrupt_on_timeout = True
c.ExecutePreprocessor.allow_errors = True
c.ExecutePreprocessor.store_widget_state = False
c.ExecutePreprocessor.raise_on_iopub_timeout = False
c.ExecutePreprocessor.record_timing = True
`

func (e *Executor) jupyter() string {
	if e.Jupyter != "" {
		return e.Jupyter
	}
	if _, err := os.Stat("/usr/bin/jupyter"); err == nil {
		return "/usr/bin/jupyter"
	}
	return "jupyter"
}

// Prepare marks the cells this runner must not run (requirements it lacks,
// compare "skip") so nbclient skips them, and records why.
func (e *Executor) Prepare(nb *notebook.Notebook) {
	match := e.Match
	if match == nil {
		match = CPUMatcher
	}
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		g := c.MustGrader()
		reason := ""
		if ok, why := match(g.Requires); !ok {
			reason = why
		} else if g.Compare == "skip" {
			reason = "the exercise marks this cell as not run"
		}
		if reason != "" {
			c.AddTag("skip-execution")
			writeCellMeta(c, CellMeta{Skipped: reason})
		}
	}
}

// Execute runs nbBytes and returns the executed notebook. Learner faults
// (exceptions, cell timeouts, a killed run) are part of the result, not
// errors; err is only for infrastructure failures worth a retry.
func (e *Executor) Execute(ctx context.Context, nbBytes []byte, opt Options) (grading.ExecutionResult, error) {
	start := time.Now()
	res := grading.ExecutionResult{Profile: e.Profile}
	if opt.CellTimeout <= 0 {
		opt.CellTimeout = 60 * time.Second
	}
	if opt.JobTimeout <= 0 {
		opt.JobTimeout = 10 * time.Minute
	}
	nb, err := notebook.Parse(nbBytes, notebook.Limits{})
	if err != nil {
		return res, fmt.Errorf("parse job notebook: %w", err)
	}
	e.Prepare(nb)
	in, err := notebook.Encode(nb)
	if err != nil {
		return res, err
	}
	root := e.WorkRoot
	if root == "" {
		root = os.TempDir()
	}
	dir, err := os.MkdirTemp(root, "npugrade-job-")
	if err != nil {
		return res, fmt.Errorf("create job directory: %w", err)
	}
	defer os.RemoveAll(dir)
	for _, sub := range []string{"in", "out", "home", "work", "runtime"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return res, fmt.Errorf("create job directory: %w", err)
		}
	}
	inPath := filepath.Join(dir, "in", "notebook.ipynb")
	if err := os.WriteFile(inPath, in, 0o600); err != nil {
		return res, fmt.Errorf("write job notebook: %w", err)
	}
	cfgPath := filepath.Join(dir, "in", "grader_cfg.py")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(configPy, int(opt.CellTimeout.Seconds()))), 0o600); err != nil {
		return res, fmt.Errorf("write nbconvert config: %w", err)
	}
	runCtx, cancel := context.WithTimeout(ctx, opt.JobTimeout)
	defer cancel()
	args := []string{"nbconvert", "--to", "notebook", "--execute", "--allow-errors",
		"--config", cfgPath, "--output-dir", filepath.Join(dir, "out"), "--output", "executed"}
	env := e.env(dir)
	var kernel *sandbox.Kernel
	if e.Sandbox != nil && e.Sandbox.Mode != sandbox.ModeNone {
		cfg := *e.Sandbox
		cfg.Env = e.kernelEnv(cfg.Env)
		kernel, err = cfg.PrepareKernel(ctx, dir)
		if err != nil {
			return res, fmt.Errorf("prepare sandbox: %w", err)
		}
		// Close kills everything the learner's code left running in the
		// sandbox's cgroup, whatever happened to nbconvert.
		defer kernel.Close()
		args = append(args, kernel.Args...)
		env = append(env, kernel.Env...)
	} else {
		if e.Log != nil {
			e.Log.Warn("executing WITHOUT a sandbox: learner code runs with the runner's rights (--sandbox=none)")
		}
		args = append(args, "--ExecutePreprocessor.kernel_name=python3")
	}
	cmd := exec.Command(e.jupyter(), append(args, inPath)...)
	cmd.Dir = filepath.Join(dir, "work")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A learner process that outlives the kernel keeps our pipes open; do
	// not wait for it longer than this.
	cmd.WaitDelay = 2 * time.Second
	var stderr tailBuffer
	stderr.max = 64 << 10
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start nbconvert: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-runCtx.Done():
		// Kill the whole process group: nbconvert, the kernel, and anything
		// the learner's code started.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-done
		if ctx.Err() != nil {
			return res, fmt.Errorf("execution canceled: %w", ctx.Err())
		}
		res.Killed = true
		res.Reason = fmt.Sprintf("the notebook did not finish within the %s limit for the whole run", opt.JobTimeout)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stragglers left by the kernel
	res.DurationMS = time.Since(start).Milliseconds()
	res.Log = stderr.String()
	if kernel != nil {
		st := kernel.Stats()
		if v := st.Violations(); len(v) > 0 {
			res.MemoryLimitHit = st.MemoryLimitHit
			if !res.Killed {
				res.Reason = "the notebook " + strings.Join(v, " and ")
			}
		}
	}
	outPath := filepath.Join(dir, "out", "executed.ipynb")
	if res.Killed {
		return res, nil
	}
	fi, statErr := os.Stat(outPath)
	if statErr != nil {
		if waitErr != nil && looksLikeInfra(res.Log) {
			return res, fmt.Errorf("nbconvert failed (%v): %s", waitErr, lastLine(res.Log))
		}
		res.Killed = true
		if res.Reason == "" {
			res.Reason = "the kernel stopped before the notebook finished (" + lastLine(res.Log) + ")"
		}
		return res, nil
	}
	max := e.MaxNotebookBytes
	if max <= 0 {
		max = 64 << 20
	}
	if fi.Size() > max {
		res.Killed = true
		res.Reason = fmt.Sprintf("the executed notebook is %d bytes, over the %d byte limit", fi.Size(), max)
		return res, nil
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		return res, fmt.Errorf("read executed notebook: %w", err)
	}
	marked, err := markTimeouts(out, opt.CellTimeout)
	if err != nil {
		return res, err
	}
	res.Notebook = marked
	return res, nil
}

// kernelEnv is what the sandboxed kernel sees beyond the sandbox's base
// environment: the profile and the runner's extra variables, nothing else.
func (e *Executor) kernelEnv(base map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	env["NPUGRADE_PROFILE"] = e.Profile
	if env["NPUGRADE_PROFILE"] == "" {
		env["NPUGRADE_PROFILE"] = "cpu"
	}
	env["PYTHONHASHSEED"] = "0"
	env["TZ"] = "UTC"
	env["MPLBACKEND"] = "Agg"
	env["SOURCE_DATE_EPOCH"] = "0"
	for k, v := range e.ExtraEnv {
		env[k] = v
	}
	return env
}

// env is the nbconvert process's whole environment (and, without a
// sandbox, the kernel's): an allow-list, never inherited.
func (e *Executor) env(dir string) []string {
	env := map[string]string{
		"PATH":                    "/usr/local/bin:/usr/bin:/bin",
		"HOME":                    filepath.Join(dir, "home"),
		"LANG":                    "C.UTF-8",
		"TZ":                      "UTC",
		"PYTHONHASHSEED":          "0",
		"PYTHONDONTWRITEBYTECODE": "1",
		"MPLBACKEND":              "Agg",
		"OMP_NUM_THREADS":         "1",
		"SOURCE_DATE_EPOCH":       "0",
		"JUPYTER_RUNTIME_DIR":     filepath.Join(dir, "runtime"),
		"JUPYTER_DATA_DIR":        filepath.Join(dir, "home", ".jupyter-data"),
		"IPYTHONDIR":              filepath.Join(dir, "home", ".ipython"),
		"NPUGRADE_PROFILE":        e.Profile,
	}
	if env["NPUGRADE_PROFILE"] == "" {
		env["NPUGRADE_PROFILE"] = "cpu"
	}
	for k, v := range e.ExtraEnv {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// markTimeouts notes cells that nbclient interrupted at their timeout: the
// kernel then reports KeyboardInterrupt, which by itself could also be the
// learner's own raise.
func markTimeouts(executed []byte, def time.Duration) ([]byte, error) {
	nb, err := notebook.Parse(executed, notebook.Limits{MaxBytes: int64(len(executed)) + 1, MaxOutputs: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("parse executed notebook: %w", err)
	}
	changed := false
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		interrupted := false
		for _, o := range c.Outputs {
			if o.OutputType == notebook.OutputError && o.Ename == "KeyboardInterrupt" {
				interrupted = true
			}
		}
		if !interrupted {
			continue
		}
		limit := def.Seconds()
		if g := c.MustGrader(); g.Timeout > 0 {
			limit = g.Timeout
		}
		if elapsed, ok := cellElapsed(c); ok && elapsed >= limit-0.5 {
			m := ReadCellMeta(c)
			m.TimedOut, m.Timeout = true, limit
			writeCellMeta(c, m)
			changed = true
		}
	}
	if !changed {
		return executed, nil
	}
	return notebook.Encode(nb)
}

// cellElapsed reads nbclient's record_timing metadata.
func cellElapsed(c *notebook.Cell) (float64, bool) {
	raw, ok := c.Metadata["execution"]
	if !ok {
		return 0, false
	}
	var t map[string]string
	if json.Unmarshal(raw, &t) != nil {
		return 0, false
	}
	start, err1 := time.Parse(time.RFC3339Nano, t["iopub.execute_input"])
	end, err2 := time.Parse(time.RFC3339Nano, t["shell.execute_reply"])
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return end.Sub(start).Seconds(), true
}

// looksLikeInfra tells a broken runner (no jupyter, no kernel) from a
// learner's notebook that killed its kernel.
func looksLikeInfra(log string) bool {
	for _, s := range []string{"NoSuchKernel", "No such file or directory: 'jupyter", "command not found", "ModuleNotFoundError: No module named 'nbconvert'", "Kernel didn't respond"} {
		if strings.Contains(log, s) {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if t.buf.Len() > 2*t.max {
		b := t.buf.Bytes()
		keep := append([]byte(nil), b[len(b)-t.max:]...)
		t.buf.Reset()
		t.buf.Write(keep)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	b := t.buf.Bytes()
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}

// ErrUnavailable means this machine cannot execute notebooks.
var ErrUnavailable = errors.New("execution: jupyter nbconvert is not available")

// Check verifies that nbconvert and a Python kernel are installed.
func (e *Executor) Check(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, e.jupyter(), "nbconvert", "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %v: %s", ErrUnavailable, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ProfileMatcher is the capability of a runner known only by its profile
// name (npu-a2, npu-a3, npu-950); a runner with an environment report
// uses the report's own matcher instead, which also knows its TorchAir
// release and features.
func ProfileMatcher(profile string) Matcher {
	product := strings.ToUpper(strings.TrimPrefix(profile, "npu-"))
	return func(req grading.Requirement) (bool, string) {
		if !strings.HasPrefix(profile, "npu") {
			return CPUMatcher(req)
		}
		if req.Product != "" && req.Product != product {
			return false, "needs Atlas " + req.Product + "; this runner has the " + profile + " profile"
		}
		return true, ""
	}
}
