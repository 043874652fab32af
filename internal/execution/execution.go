// Package execution runs a notebook through an embedded Python driver
// (driver.py) built on nbconvert's ExecutePreprocessor (nbclient): cell by
// cell, writing the partial notebook after each cell, with a per-cell
// timeout that interrupts the kernel (and kills it when the cell ignores
// the interrupt), a deadline for the whole run that kills every process,
// errors recorded as outputs so later cells still run, output limits per
// cell and per notebook, and an environment built from an allow-list so
// the kernel never sees the runner's token or the server's configuration.
//
// When the kernel dies (the memory limit, os._exit, a signal) or the run
// is killed, the cells before keep their outputs, the cell that was running
// is annotated with why it stopped (metadata.npugrade, see domain.CellMeta), and
// the cells after it stay unexecuted; package scoring turns that into
// per-cell verdicts. The driver owns one kernel for one notebook; Pool
// keeps drivers started ahead of their jobs (warm.go).
//
// The seam for other backends (a Kubernetes pod, a remote host) is the
// runner's one interface, runner.Executor: Execute a notebook under
// Options and return a domain.ExecutionResult. Such a backend reports how
// its run ended as a Stop and lets Annotate, a pure function, write the
// stop reasons into the notebook, so the grader reads every backend's
// stops alike. Isolation is the other seam: the kernel runs under a
// domain.Isolation backend (package sandbox, wired in by cmd/npugrade),
// which prepares the kernel, says how to launch it, reports the limits hit
// and stops everything at the end; this package never names one. Files:
// execution.go (Executor, the run), driver.go (the driver protocol),
// annotate.go (stop annotation), warm.go (the pool), jobdir.go (job
// directories named for their runner, and the sweep of dead runners').
package execution

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
)

//go:embed driver.py
var driverPy []byte

// Default output limits: generous for the tutorial's notebooks (text and a
// few plots), small enough that a flood cannot fill the runner's memory,
// the runner protocol or the database.
const (
	DefaultMaxCellOutput     int64 = 2 << 20  // bytes of outputs per cell
	DefaultMaxNotebookOutput int64 = 16 << 20 // bytes of outputs per notebook
	DefaultMaxCellOutputs          = 1000     // output items per cell (notebook.DefaultLimits().MaxOutputs)
	DefaultInterruptGrace          = 5 * time.Second
	// DefaultMaxNotebookBytes bounds the executed notebook: the rebuilt
	// upload (at most 8 MiB) plus the output limit, with room to spare.
	DefaultMaxNotebookBytes int64 = 32 << 20
)

// OutputLimits bound what one run may write into its notebook. Outputs
// beyond them are dropped, a marker output says so, and the cell is
// graded incomplete-output.
type OutputLimits struct {
	PerCell     int64 // bytes per cell (0: DefaultMaxCellOutput)
	PerNotebook int64 // bytes per notebook (0: DefaultMaxNotebookOutput)
	Items       int   // output items per cell (0: DefaultMaxCellOutputs)
}

func (l OutputLimits) withDefaults() OutputLimits {
	if l.PerCell <= 0 {
		l.PerCell = DefaultMaxCellOutput
	}
	if l.PerNotebook <= 0 {
		l.PerNotebook = DefaultMaxNotebookOutput
	}
	if l.Items <= 0 {
		l.Items = DefaultMaxCellOutputs
	}
	return l
}

// Executor runs notebooks.
type Executor struct {
	// Python runs the driver; it needs nbconvert and nbclient (default:
	// the interpreter of Jupyter's script, else /usr/bin/python3, else
	// python3 on PATH).
	Python string
	// Jupyter is the jupyter command; only its interpreter is used, when
	// Python is empty (the --jupyter flag of serve, runner and check).
	Jupyter string
	// Profile is the runner profile the kernel sees as NPUGRADE_PROFILE.
	Profile string
	// Match decides which requirement-bearing cells run here.
	Match domain.Matcher
	// WorkRoot holds per-job directories (default: os.TempDir()).
	WorkRoot string
	// ExtraEnv is added to the kernel's allow-listed environment
	// (e.g. ASCEND_RT_VISIBLE_DEVICES on NPU hosts).
	ExtraEnv map[string]string
	// MaxNotebookBytes bounds the executed notebook read back
	// (default DefaultMaxNotebookBytes).
	MaxNotebookBytes int64
	// Output limits per cell and per notebook.
	Output OutputLimits
	// InterruptGrace is how long a cell may keep running after its timeout
	// interrupt before the kernel is killed (default 5s).
	InterruptGrace time.Duration
	// Isolation is the backend that isolates each job's kernel (package
	// sandbox: bubblewrap and cgroups, or its "none" backend). It is
	// required: running learner code unisolated is chosen, never a default.
	Isolation domain.Isolation
	// DriverZygote, when set, forks warm drivers instead of starting
	// Python for each (driverzygote.go).
	DriverZygote *DriverZygote `json:"-"`
	Log          *slog.Logger
}

// Options are per-job settings.
type Options struct {
	CellTimeout time.Duration
	JobTimeout  time.Duration
}

// Prepare marks the cells this runner must not run (requirements it lacks,
// compare "skip") so nbclient skips them, and records why.
func (e *Executor) Prepare(nb *notebook.Notebook) {
	match := e.Match
	if match == nil {
		match = domain.CPUMatcher
	}
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		// The runner alone writes these notes; anything the notebook
		// carried in is discarded.
		delete(c.Metadata, notebook.CellMetaKey)
		g := c.MustGrader()
		reason := ""
		if ok, why := match(g.Requires); !ok {
			reason = why
		} else if g.Compare == "skip" {
			reason = "the exercise marks this cell as not run"
		}
		if reason != "" {
			c.AddTag("skip-execution")
			notebook.WriteCellMeta(c, domain.CellMeta{Skipped: reason})
		}
	}
}

// python is the interpreter that runs the driver.
func (e *Executor) python() string {
	if e.Python != "" {
		return e.Python
	}
	if e.Jupyter != "" {
		if p := shebang(e.Jupyter); p != "" {
			return p
		}
	}
	if _, err := os.Stat(defaultPython); err == nil {
		return defaultPython
	}
	return "python3"
}

// defaultPython is the driver's interpreter when neither Python nor
// Jupyter names one (the kernel's is the isolation backend's business).
const defaultPython = "/usr/bin/python3"

// shebang returns the interpreter named on the first line of the script
// cmd (resolved on PATH), or "".
func shebang(cmd string) string {
	path, err := exec.LookPath(cmd)
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := bytes.Cut(buf[:n], []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) {
		return ""
	}
	fields := strings.Fields(string(line[2:]))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		return fields[1]
	}
	return fields[0]
}

// Execute runs nbBytes and returns the executed notebook. Learner faults
// (exceptions, timeouts, a dead kernel, a killed run, limits) are part of
// the result, not errors; err is only for infrastructure failures worth a
// retry. This is the cold path: a new driver process and kernel per job
// (see Pool and Prestart for the warm one).
func (e *Executor) Execute(ctx context.Context, nbBytes []byte, opt Options) (domain.ExecutionResult, error) {
	start := time.Now()
	res := domain.ExecutionResult{Profile: e.Profile}
	opt = opt.withDefaults()
	in, err := e.prepareNotebook(nbBytes)
	if err != nil {
		return res, err
	}
	j, err := e.newJob(ctx)
	if err != nil {
		return res, err
	}
	defer j.close()
	e.jobConfig(&j.dc, opt)
	cfgJSON, _ := json.Marshal(j.dc)
	for path, data := range map[string][]byte{j.dc.Notebook: in, j.configPath(): cfgJSON} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return res, fmt.Errorf("write job files: %w", err)
		}
	}
	p, err := e.startDriver(j, false)
	if err != nil {
		return res, err
	}
	return e.finish(ctx, j, p, opt, start)
}

func (o Options) withDefaults() Options {
	if o.CellTimeout <= 0 {
		o.CellTimeout = 60 * time.Second
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = 10 * time.Minute
	}
	return o
}

// prepareNotebook parses the job's notebook and marks the cells this
// runner must not run.
func (e *Executor) prepareNotebook(nbBytes []byte) ([]byte, error) {
	nb, err := notebook.Parse(nbBytes, notebook.Limits{MaxBytes: int64(len(nbBytes)) + 1})
	if err != nil {
		return nil, fmt.Errorf("parse job notebook: %w", err)
	}
	e.Prepare(nb)
	return notebook.Encode(nb)
}

// job is one job's private directory (outside the sandbox: the notebook,
// the driver and its files), its isolated kernel and the driver's
// configuration. It serves exactly one job; close destroys all of it.
type job struct {
	dir    string
	kernel domain.IsolatedKernel // nil until isolated
	env    []string              // the driver's environment
	dc     driverConfig
}

func (j *job) configPath() string { return filepath.Join(j.dir, "in", "config.json") }
func (j *job) driverPath() string { return filepath.Join(j.dir, "in", "driver.py") }

// close kills everything the job's kernel left running (the isolation's
// business: the sandbox's cgroup) and removes its directories. The job
// directory goes last: a runner killed before that leaves it to the next
// runner's SweepJobDirs, which finds its owner in its name (jobdir.go).
func (j *job) close() {
	if j.kernel != nil {
		_ = j.kernel.Close()
	}
	_ = os.RemoveAll(j.dir)
}

// newJob creates a job directory, prepares the sandboxed kernelspec in it
// and writes the driver; nothing runs yet.
func (e *Executor) newJob(ctx context.Context) (_ *job, err error) {
	root := e.WorkRoot
	if root == "" {
		root = os.TempDir()
	}
	dir, err := os.MkdirTemp(root, jobDirPattern())
	if err != nil {
		return nil, fmt.Errorf("create job directory: %w", err)
	}
	j := &job{dir: dir}
	defer func() {
		if err != nil {
			j.close()
		}
	}()
	for _, sub := range []string{"in", "out", "home", "work", "runtime"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("create job directory: %w", err)
		}
	}
	j.dc = driverConfig{
		Notebook: filepath.Join(dir, "in", "notebook.ipynb"), Output: filepath.Join(dir, "out", "executed.ipynb"),
		Progress: filepath.Join(dir, "out", "progress.json"), Cwd: filepath.Join(dir, "work"), StartupTimeout: 60,
	}
	j.env = e.env(dir)
	if e.Isolation == nil {
		return nil, errors.New("prepare sandbox: the executor has no isolation backend")
	}
	if j.kernel, err = e.Isolation.Isolate(ctx, dir, e.kernelEnv()); err != nil {
		return nil, fmt.Errorf("prepare sandbox: %w", err)
	}
	args, driverEnv := j.kernel.Launch()
	if j.dc.Config, err = traitletsConfig(args); err != nil {
		return nil, err
	}
	j.env = append(j.env, driverEnv...)
	if err := os.WriteFile(j.driverPath(), driverPy, 0o600); err != nil {
		return nil, fmt.Errorf("write job files: %w", err)
	}
	return j, nil
}

// jobConfig fills in the per-job settings: timeouts and output limits.
func (e *Executor) jobConfig(dc *driverConfig, opt Options) {
	lim := e.Output.withDefaults()
	grace := e.InterruptGrace
	if grace <= 0 {
		grace = DefaultInterruptGrace
	}
	dc.CellTimeout = int((opt.CellTimeout + time.Second - 1) / time.Second)
	dc.InterruptGrace = grace.Seconds()
	dc.MaxCellOutput, dc.MaxNotebookOutput, dc.MaxCellOutputs = lim.PerCell, lim.PerNotebook, lim.Items
}

// driverProc is a running driver.
type driverProc struct {
	pid    int
	forked bool // forked by the DriverZygote (not our child)
	log    *tailBuffer
	exited chan struct{} // closed when the driver has exited
	err    error         // its exit status, once exited
	// Warm drivers only: the private pipes (the driver's fds 3 and 4).
	req  *os.File
	resp *os.File
	rbuf []byte
}

// startDriver starts the driver on j's config: a warm one forked from
// the DriverZygote when there is one (falling back to exec, once logged).
func (e *Executor) startDriver(j *job, warm bool) (*driverProc, error) {
	if warm && e.DriverZygote != nil {
		p, err := e.forkDriver(j)
		if err == nil {
			return p, nil
		}
		e.DriverZygote.fallBack(err)
	}
	args := []string{"-I", j.driverPath()}
	if warm {
		args = append(args, "--warm")
	}
	cmd := exec.Command(e.python(), append(args, j.configPath())...)
	cmd.Dir = filepath.Join(j.dir, "work")
	cmd.Env = j.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A learner process that outlives the kernel keeps our pipes open; do
	// not wait for it longer than this.
	cmd.WaitDelay = 2 * time.Second
	p := &driverProc{log: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	cmd.Stdout = p.log
	cmd.Stderr = p.log
	var theirs []*os.File
	if warm {
		reqR, reqW, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("start execution driver: %w", err)
		}
		respR, respW, err := os.Pipe()
		if err != nil {
			reqR.Close()
			reqW.Close()
			return nil, fmt.Errorf("start execution driver: %w", err)
		}
		cmd.ExtraFiles = []*os.File{reqR, respW} // fds 3 and 4
		theirs = []*os.File{reqR, respW}
		p.req, p.resp = reqW, respR
	}
	err := cmd.Start()
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		p.closePipes()
		return nil, fmt.Errorf("start execution driver: %w", err)
	}
	p.pid = cmd.Process.Pid
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// kill SIGKILLs the driver's process group (the sandboxed kernel, in its
// own session, goes with the sandbox's cgroup in job.close). A forked
// driver, once it has exited, was reaped by the zygote: its pid may name
// another process by now, so it is left alone. A forked driver killed
// right after its fork may not lead its group yet (the zygote replies
// before the child's setsid): it is killed by its pid too, or it would
// live on waiting for a job that never comes.
func (p *driverProc) kill() {
	if p.forked {
		select {
		case <-p.exited:
			return
		default:
		}
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
}

func (p *driverProc) closePipes() {
	if p.req != nil {
		p.req.Close()
	}
	if p.resp != nil {
		p.resp.Close()
	}
}

// finish waits for the driver (at most opt.JobTimeout), stops everything
// the job left running and turns what the driver wrote into the result.
func (e *Executor) finish(ctx context.Context, j *job, p *driverProc, opt Options, start time.Time) (domain.ExecutionResult, error) {
	res := domain.ExecutionResult{Profile: e.Profile}
	defer p.closePipes()
	runCtx, cancel := context.WithTimeout(ctx, opt.JobTimeout)
	defer cancel()
	kernel, dc := j.kernel, j.dc
	jobKilled := false
	select {
	case <-p.exited:
	case <-runCtx.Done():
		// Kill the driver's process group; the kernel (its own session)
		// goes with its isolation in kernel.Close.
		p.kill()
		_ = kernel.Close()
		<-p.exited
		if ctx.Err() != nil {
			return res, fmt.Errorf("execution canceled: %w", ctx.Err())
		}
		jobKilled = true
	}
	waitErr := p.err
	p.kill() // stragglers
	// Stop everything now so that the counters are final.
	_ = kernel.Close()
	res.DurationMS = time.Since(start).Milliseconds()
	res.Log = p.log.String()
	stats := kernel.LimitHits()
	res.MemoryLimitHit = stats.MemoryLimitHit
	var prog progress
	if b, err := os.ReadFile(dc.Progress); err == nil {
		_ = json.Unmarshal(b, &prog)
	}
	out, readErr := readBounded(dc.Output, e.maxNotebook())
	switch {
	case errors.Is(readErr, errTooBig):
		res.Killed = true
		res.Reason = fmt.Sprintf("the executed notebook is larger than the %s limit", domain.FormatSize(e.maxNotebook()))
		return res, nil
	case readErr != nil && !jobKilled && !prog.KernelDied:
		if waitErr != nil && (prog.Cell == nil || looksLikeInfra(res.Log)) {
			// The driver failed before any cell ran: the runner is broken,
			// not the learner's notebook.
			return res, fmt.Errorf("execution driver failed (%v): %s", waitErr, lastLine(res.Log))
		}
		res.Killed = true
		res.Reason = "the kernel stopped before the notebook finished (" + lastLine(res.Log) + ")"
		return res, nil
	case readErr != nil:
		res.Killed = true
		res.Reason = stopReason(jobKilled, opt.JobTimeout, stats, -1)
		return res, nil
	}
	if !jobKilled && !prog.KernelDied && !prog.Done {
		if waitErr != nil && looksLikeInfra(res.Log) {
			return res, fmt.Errorf("execution driver failed (%v): %s", waitErr, lastLine(res.Log))
		}
	}
	annotated, killed, reason, err := Annotate(out, Stop{JobKilled: jobKilled, JobTimeout: opt.JobTimeout, Cell: prog.Cell, KernelDied: prog.KernelDied, Limits: stats})
	if err != nil {
		return res, err
	}
	if !prog.Done && !killed && !jobKilled && !prog.KernelDied {
		// The driver ended early without saying why (killed from outside).
		killed, reason = true, "the execution stopped before the notebook finished ("+lastLine(res.Log)+")"
	}
	res.Notebook, res.Killed, res.Reason = annotated, killed, reason
	if !killed {
		if v := stats.Violations(); len(v) > 0 {
			res.Reason = "the notebook " + strings.Join(v, " and ")
		}
	}
	return res, nil
}

func (e *Executor) maxNotebook() int64 {
	if e.MaxNotebookBytes > 0 {
		return e.MaxNotebookBytes
	}
	return DefaultMaxNotebookBytes
}

var errTooBig = errors.New("file too large")

// readBounded reads path, refusing files over max bytes without reading them.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, errTooBig
	}
	b := make([]byte, 0, fi.Size())
	buf := bytes.NewBuffer(b)
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return nil, errTooBig
	}
	return buf.Bytes(), nil
}

// Check verifies that the driver's Python has nbconvert, nbclient and a
// Python kernel.
func (e *Executor) Check(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, e.python(), "-I", "-c",
		"import nbconvert, nbclient, nbformat, ipykernel; print(nbconvert.__version__, nbclient.__version__)").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s: %v: %s", ErrUnavailable, e.python(), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ErrUnavailable means this machine cannot execute notebooks.
var ErrUnavailable = errors.New("execution: nbconvert/nbclient are not available")

// kernelEnv is what the isolated kernel sees beyond the backend's base
// environment: the profile and the runner's extra variables, nothing else.
func (e *Executor) kernelEnv() map[string]string {
	env := map[string]string{}
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
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf.Bytes()
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(b)
}
