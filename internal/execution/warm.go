package execution

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/npugrade/npugrade/internal/domain"
)

// The warm path. Most of a short grading run is start-up: Python,
// nbconvert, the kernel and PyTorch take seconds, the learner's cells
// milliseconds. A Warm environment is a job directory, a sandboxed kernel
// and a driver (driver.py --warm) started before its job exists, with the
// profile's modules already imported in the kernel; the job is handed to
// it over a private pipe. It serves exactly one job and is destroyed after
// it, like a cold one: the sandbox, the limits and the driver's per-cell
// logic are the same code, only the start moved earlier.

// ErrStale means a pre-started environment cannot take a job: its driver
// or kernel died, it was started for another configuration, or it failed
// the health check at hand-over. It has been destroyed; use another.
var ErrStale = errors.New("pre-started execution environment unusable")

// Default warm-pool settings.
const (
	// DefaultMaxAge: an environment unused for this long is replaced (its
	// kernel may have drifted from the host: package updates, clock...).
	DefaultMaxAge = 10 * time.Minute
	// warmStartTimeout bounds the start of a warm driver, kernel and preload.
	warmStartTimeout = 2 * time.Minute
	// backgroundLimit is how long a start stays at the lowest CPU
	// priority: on a host busy with other work it would never finish.
	backgroundLimit = 15 * time.Second
	// handoverTimeout bounds the health check at hand-over (normally
	// milliseconds: a kernel_info round trip).
	handoverTimeout = 15 * time.Second
)

// Warm is one execution environment started ahead of its job.
type Warm struct {
	e       *Executor
	key     string
	preload []string // what it was started with (key)
	j       *job
	p       *driverProc
	started time.Time
	used    atomic.Bool
	once    sync.Once
}

// key identifies everything a pre-started environment bakes in: an
// environment started under another key is stale. Per-job settings
// (timeouts, output limits) travel with the job and are not part of it.
func (e *Executor) key(preload []string) string {
	b, _ := json.Marshal(struct {
		Python, Profile, WorkRoot string
		ExtraEnv                  map[string]string
		Isolation                 any
		Preload                   []string
	}{e.python(), e.Profile, e.WorkRoot, e.ExtraEnv, e.Isolation, preload})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// AutoPreload is what a pre-started kernel imports before its job
// (--preload auto) for a profile, inEnv when it runs in a grading
// environment (PyTorch 2.x). Imports only: no compile runs, so Dynamo's
// counters stay untouched, and a job finds in sys.modules what it would
// have imported itself.
func AutoPreload(profile string, inEnv bool) []string {
	// The guard's snapshot imports numpy.testing and torch.testing in
	// every job (about 0.1 s of CPU).
	auto := []string{"torch", "numpy.testing", "torch.testing"}
	if strings.HasPrefix(profile, "npu") {
		auto = append(auto, "torch_npu")
	}
	if inEnv {
		// What a first torch.compile imports (Dynamo, AOTAutograd,
		// Inductor's compile_fx that backends call into): 2.9 s of a
		// learner's first compile, 0.2 s once they are loaded; then what
		// the first compile through AOTAutograd still imported in each
		// ch1 job (functionalization's view-copy pass, the symbolic
		// shapes' validator, the compiler bisector).
		auto = append(auto, "torch._dynamo", "torch._functorch.aot_autograd", "torch._inductor.compile_fx",
			"functorch.experimental.control_flow", "torch._export.passes.replace_view_ops_with_view_copy_ops_pass",
			"torch._inductor.compiler_bisector", "torch._subclasses.schema_check_mode", "torch.fx.experimental.validator")
	}
	return auto
}

// Prestart starts an environment for one future job: a fresh job
// directory and sandbox, a driver with its kernel started and the preload
// modules imported (modules that are not installed are skipped). It
// returns once the kernel answers; ctx bounds only the start. It starts
// at the lowest CPU priority (see background) until it is ready, or until
// promote is closed (a job waits for it; nil: never) or it has taken
// backgroundLimit: a start that someone waits for, or that other work
// on the host starves, gets its full share. A start forked from the
// zygotes (DriverZygote and a sandbox on the fork path) is cheap and runs
// at normal priority throughout.
func (e *Executor) Prestart(ctx context.Context, preload []string, promote <-chan struct{}) (*Warm, error) {
	return e.prestart(ctx, preload, promote, nil)
}

// prestart is Prestart; while holdBack (if not nil) says so, a start that
// reached backgroundLimit stays in the background (it is asked again
// every second): the pool holds its starts back while every slot
// executes a job, as the CPU they would take is those jobs'.
func (e *Executor) prestart(ctx context.Context, preload []string, promote <-chan struct{}, holdBack func() bool) (_ *Warm, err error) {
	key := e.key(preload)
	j, err := e.newJob(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			j.close()
		}
	}()
	j.dc.Preload = preload
	if pk, ok := j.kernel.(preloader); ok && len(preload) > 0 && covers(pk.Preloaded(), preload) {
		// Forked from a zygote that imported them: nothing to do but
		// check that the kernel answers.
		j.dc.Preload = nil
	}
	cfgJSON, _ := json.Marshal(j.dc)
	if err := os.WriteFile(j.configPath(), cfgJSON, 0o600); err != nil {
		return nil, fmt.Errorf("write job files: %w", err)
	}
	// A start forked from the zygotes costs a few tens of milliseconds of
	// CPU: it runs at normal priority, so that the spare is ready when
	// its slot's job ends. In the background it would wait for CPU that
	// the jobs of the other slots leave idle, and a slot would wait for it.
	quick := e.DriverZygote != nil && isForked(j.kernel)
	if !quick {
		background(j, nil, true, e.Log)
	}
	p, err := e.startDriver(j, true)
	if err != nil {
		return nil, err
	}
	if !quick {
		background(j, p, true, e.Log)
	}
	ready := make(chan struct{})
	promoted := make(chan struct{})
	go func() {
		defer close(promoted)
		limit := time.NewTimer(backgroundLimit)
		defer limit.Stop()
	wait:
		select {
		case <-ready:
			return // stays in the background until its hand-over
		case <-promote:
		case <-limit.C:
			if holdBack != nil && holdBack() {
				limit.Reset(time.Second)
				goto wait
			}
		case <-p.exited:
			return
		}
		background(j, p, false, e.Log)
	}()
	var msg struct {
		Ready bool `json:"ready"`
	}
	err = p.recv(ctx, warmStartTimeout, &msg)
	close(ready)
	<-promoted
	if err != nil || !msg.Ready {
		p.kill()
		<-p.exited
		p.closePipes()
		return nil, fmt.Errorf("start warm execution environment: %v: %s", err, lastLine(p.log.String()))
	}
	return &Warm{e: e, key: key, preload: preload, j: j, p: p, started: time.Now()}, nil
}

// isForked tells whether the isolated kernel starts forked from a
// zygote (sandbox.Kernel on the fork path).
func isForked(k domain.IsolatedKernel) bool {
	f, ok := k.(interface{ Forked() bool })
	return ok && f.Forked()
}

// preloader is an isolated kernel that starts with modules imported
// (sandbox.Kernel on the fork path).
type preloader interface{ Preloaded() []string }

// covers tells whether have holds every module of want.
func covers(have, want []string) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

// backgrounder is an isolated kernel whose CPU priority can be lowered
// while it waits (sandbox.Kernel).
type backgrounder interface{ Background(on bool) error }

// background lowers (on) or restores the CPU priority of a pre-started
// environment: its sandboxed kernel (the job's cpu cgroup weight and idle
// class, its threads' scheduling class and nice) and, with p, its driver
// (scheduling class and nice). A spare then starts on the CPU
// that running jobs leave idle instead of slowing them down. Best effort:
// where it cannot (not root, no cpu cgroup) the spare starts at normal
// priority, as before; it never leaves a handed-over job in the
// background (without root nothing is lowered in the first place).
func background(j *job, p *driverProc, on bool, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	if p == nil {
		if b, ok := j.kernel.(backgrounder); ok {
			if err := b.Background(on); err != nil {
				log.Debug("warm kernel: CPU priority of the sandbox", "background", on, "err", err)
			}
		}
		return
	}
	if err := renice(p.pid, on); err != nil {
		log.Debug("warm kernel: CPU priority of the driver", "background", on, "err", err)
	}
	if !on {
		background(j, nil, false, log)
	}
}

// backgroundNice is a waiting driver's nice value.
const backgroundNice = 19

// Scheduling policies (sched.h).
const (
	schedOther = 0
	schedIdle  = 5
)

// renice moves every thread of process pid (policy and nice are per
// thread on Linux) to the idle scheduling class at backgroundNice (on),
// or back to the normal class at nice 0. In the idle class any other task
// that wakes preempts it at once: a job's driver and kernel, which wake
// dozens of times a cell, never wait behind a spare's start. Raising a
// priority again needs root (CAP_SYS_NICE): without root it changes
// nothing, so nothing stays in the background.
func renice(pid int, on bool) error {
	if os.Geteuid() != 0 {
		return errors.New("not root: priority unchanged")
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("renice %d: %w", pid, err)
	}
	policy, nice := schedOther, 0
	if on {
		policy, nice = schedIdle, backgroundNice
	}
	var errs []error
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// sched_setscheduler(2); SCHED_IDLE and SCHED_OTHER take priority 0.
		var param struct{ priority int32 }
		if _, _, e := syscall.Syscall(syscall.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&param))); e != 0 && e != syscall.ESRCH {
			errs = append(errs, fmt.Errorf("scheduling class of thread %d: %w", tid, e))
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("renice thread %d: %w", tid, err))
		}
	}
	return errors.Join(errs...)
}

// Age is how long ago the environment became ready.
func (w *Warm) Age() time.Duration { return time.Since(w.started) }

// Memory is what the waiting environment holds now, in bytes: its
// driver's resident memory plus its isolated kernel's (as the isolation
// backend counts it; 0 where it cannot tell).
func (w *Warm) Memory() int64 {
	return rss(w.p.pid) + w.j.kernel.MemoryInUse()
}

// rss is a process's resident memory in bytes (0 once it is gone).
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// Exited is closed when the environment's driver has exited (it died
// while waiting: the environment is stale).
func (w *Warm) Exited() <-chan struct{} { return w.p.exited }

// Close destroys the environment: the driver, the kernel and every process
// in its sandbox, and its directories. It is idempotent.
func (w *Warm) Close() {
	w.once.Do(func() {
		w.p.kill()
		w.j.close()
		<-w.p.exited
		w.p.closePipes()
	})
}

// Execute hands the job to the environment and runs it exactly as the cold
// Executor.Execute does, then destroys the environment. It returns an
// error wrapping ErrStale, without running anything, when the environment
// cannot take the job; the caller may retry with another environment.
func (w *Warm) Execute(ctx context.Context, nbBytes []byte, opt Options) (domain.ExecutionResult, error) {
	res := domain.ExecutionResult{Profile: w.e.Profile}
	if w.used.Swap(true) {
		return res, fmt.Errorf("%w: it already ran a job", ErrStale)
	}
	defer w.Close()
	select {
	case <-w.p.exited:
		return res, fmt.Errorf("%w: its driver exited while waiting: %s", ErrStale, lastLine(w.p.log.String()))
	default:
	}
	if w.key != w.e.key(w.preload) {
		return res, fmt.Errorf("%w: the runner's configuration changed since it was started", ErrStale)
	}
	opt = opt.withDefaults()
	in, err := w.e.prepareNotebook(nbBytes)
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(w.j.dc.Notebook, in, 0o600); err != nil {
		return res, fmt.Errorf("write job files: %w", err)
	}
	dc := w.j.dc
	w.e.jobConfig(&dc, opt)
	req, _ := json.Marshal(dc)
	// The job runs at full priority from its first instruction.
	background(w.j, w.p, false, w.e.Log)
	start := time.Now()
	if _, err := w.p.req.Write(append(req, '\n')); err != nil {
		return res, fmt.Errorf("%w: hand-over: %v", ErrStale, err)
	}
	var reply struct {
		Accepted bool   `json:"accepted"`
		Error    string `json:"error"`
	}
	if err := w.p.recv(ctx, handoverTimeout, &reply); err != nil || !reply.Accepted {
		if ctx.Err() != nil {
			return res, fmt.Errorf("execution canceled: %w", ctx.Err())
		}
		return res, fmt.Errorf("%w: hand-over: %v%s: %s", ErrStale, err, reply.Error, lastLine(w.p.log.String()))
	}
	w.j.dc = dc
	return w.e.finish(ctx, w.j, w.p, opt, start)
}

// recv reads one JSON line from the driver's fd 4 within timeout.
func (p *driverProc) recv(ctx context.Context, timeout time.Duration, v any) error {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := p.resp.SetReadDeadline(deadline); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = p.resp.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 4096)
	for {
		if i := bytes.IndexByte(p.rbuf, '\n'); i >= 0 {
			line := p.rbuf[:i]
			p.rbuf = p.rbuf[i+1:]
			return json.Unmarshal(line, v)
		}
		if len(p.rbuf) > 64<<10 {
			return errors.New("driver message too long")
		}
		n, err := p.resp.Read(buf)
		p.rbuf = append(p.rbuf, buf[:n]...)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("driver: %w", err)
		}
	}
}

// Pool keeps Size environments pre-started (the warm spares: runner slots
// times --warm-spares) and runs each job in one of them; a new one is
// started as soon as one is handed out, so the next kernel starts while
// the current job executes. A spare serves one job and is destroyed after
// it. An environment that dies, outlives MaxAge or fails its hand-over
// check is replaced, never used. When none can be started the job runs on
// the cold path. Pool implements the runner's Executor.
type Pool struct {
	Exec *Executor
	// Size is the number of environments kept ready (default 1).
	Size int
	// PerSlot is --warm-spares (Size / the runner's slots), for reports.
	PerSlot int
	// Preload names modules imported in each kernel before it is handed
	// out (e.g. torch), so that the learner's own import is instant.
	Preload []string
	// MaxAge replaces environments unused for longer (default DefaultMaxAge).
	MaxAge time.Duration
	// Starts bounds the environments starting at once (default: the
	// CPUs). Starting more at once than there are cores only makes every
	// one of them late: in turn, the first is ready soonest. Fewer than
	// the cores would leave a core idle while slots wait for spares.
	Starts int
	// Zygotes are the fork servers the spares start from (their memory
	// is the spares' too; see SpareMemory).
	Zygotes []Zygote
	Log     *slog.Logger

	mu        sync.Mutex
	started   bool
	ctx       context.Context
	cancel    context.CancelFunc
	offers    chan offer
	wg        sync.WaitGroup
	noPreload atomic.Bool
	ready     atomic.Int64
	promote   chan struct{}  // closed when a job waits and no spare is ready
	starting  chan struct{}  // a token per start under way (Starts)
	failed    atomic.Int64   // starts that failed
	executing atomic.Int64   // jobs running in a spare now
	spares    map[*Warm]bool // the environments waiting for a job
	reported  bool           // the first full set of spares was logged
}

type offer struct {
	w   *Warm
	err error
}

// Start begins filling the pool; it runs until Close (or ctx ends).
func (p *Pool) Start(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return
	}
	p.started = true
	if p.Log == nil {
		p.Log = slog.Default()
	}
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.offers = make(chan offer)
	starts := p.Starts
	if starts <= 0 {
		starts = max(1, runtime.NumCPU())
	}
	p.starting = make(chan struct{}, starts)
	if z := p.Exec.DriverZygote; z != nil {
		z.prestart(p.Exec.python())
	}
	n := max(p.Size, 1)
	p.wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer p.wg.Done()
			p.fill(p.ctx)
		}()
	}
}

// Close stops filling and destroys the environments not handed out; jobs
// already running in one finish normally.
func (p *Pool) Close() {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		return
	}
	p.cancel()
	p.wg.Wait()
}

// Ready is the number of environments waiting for a job now.
func (p *Pool) Ready() int { return int(p.ready.Load()) }

// WaitReady waits until every environment of a started pool is ready. It
// reports false when one failed to start or ctx ended first (the pool
// keeps filling).
func (p *Pool) WaitReady(ctx context.Context) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for p.Ready() < max(p.Size, 1) {
		if p.failed.Load() > 0 {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// Zygote is a fork server whose memory the spares share
// (sandbox.Zygote, DriverZygote).
type Zygote interface {
	Memory() int64
	Close()
}

// ZygoteMemory is the resident memory of the pool's zygotes, in bytes:
// pages every spare forked from them shares.
func (p *Pool) ZygoteMemory() int64 {
	var n int64
	for _, z := range p.Zygotes {
		n += z.Memory()
	}
	return n
}

// SpareMemory is the memory the environments waiting for a job hold now,
// in bytes (see Warm.Memory), plus the zygotes they were forked from.
func (p *Pool) SpareMemory() int64 {
	return p.spareMemory() + p.ZygoteMemory()
}

func (p *Pool) spareMemory() int64 {
	p.mu.Lock()
	ws := make([]*Warm, 0, len(p.spares))
	for w := range p.spares {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	var n int64
	for _, w := range ws {
		n += w.Memory()
	}
	return n
}

// waiting records w as a spare waiting for a job (or, with on false, no
// longer); the first time every spare is ready, it logs their memory.
func (p *Pool) waiting(w *Warm, on bool) {
	p.mu.Lock()
	if p.spares == nil {
		p.spares = map[*Warm]bool{}
	}
	if !on {
		delete(p.spares, w)
		p.ready.Add(-1)
		p.mu.Unlock()
		return
	}
	p.spares[w] = true
	p.ready.Add(1)
	report := !p.reported && len(p.spares) >= max(p.Size, 1)
	p.reported = p.reported || report
	p.mu.Unlock()
	if report {
		mem, zmem := p.spareMemory(), p.ZygoteMemory()
		p.Log.Info("warm spares ready", "spares", max(p.Size, 1), "memory", domain.FormatSize(mem+zmem),
			"memory_per_spare", domain.FormatSize(mem/int64(max(p.Size, 1))), "zygote_memory", domain.FormatSize(zmem), "memory_bytes", mem+zmem)
	}
}

func (p *Pool) maxAge() time.Duration {
	if p.MaxAge > 0 {
		return p.MaxAge
	}
	return DefaultMaxAge
}

// fill keeps one environment ready: start it, offer it until a job takes
// it, and start the next at once. A failed start is offered as an error
// (a job that takes it runs cold, so a broken host never makes jobs wait)
// until the next attempt, after a growing pause.
func (p *Pool) fill(ctx context.Context) {
	backoff := time.Second
	for ctx.Err() == nil {
		preload := p.Preload
		if p.noPreload.Load() {
			preload = nil
		}
		select {
		case p.starting <- struct{}{}:
		case <-ctx.Done():
			return
		}
		w, err := p.Exec.prestart(ctx, preload, p.promotion(), p.allBusy)
		<-p.starting
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.failed.Add(1)
			if len(preload) > 0 && strings.Contains(err.Error(), "preload") && !p.noPreload.Swap(true) {
				p.Log.Warn("warm kernels: preloading failed; starting them without it", "preload", preload, "err", err)
			}
			retry := time.NewTimer(backoff)
			select {
			case p.offers <- offer{err: err}:
			case <-retry.C:
			case <-ctx.Done():
				retry.Stop()
				return
			}
			retry.Stop()
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		p.waiting(w, true)
		expire := time.NewTimer(p.maxAge())
		select {
		case p.offers <- offer{w: w}:
			p.waiting(w, false)
		case <-w.Exited():
			p.waiting(w, false)
			p.Log.Warn("warm kernel died while waiting for a job; replacing it", "log", lastLine(w.p.log.String()))
			w.Close()
		case <-expire.C:
			p.waiting(w, false)
			p.Log.Info("warm kernel unused for too long; replacing it", "max_age", p.maxAge())
			w.Close()
		case <-ctx.Done():
			p.waiting(w, false)
			w.Close()
		}
		expire.Stop()
	}
}

// allBusy says whether every slot is executing a job: then a start that
// reached backgroundLimit stays in the background, as what it would take
// is those jobs' CPU (a slot that waits for a spare promotes the starts).
func (p *Pool) allBusy() bool {
	slots := max(p.Size, 1)
	if p.PerSlot > 0 {
		slots = max(slots/p.PerSlot, 1)
	}
	return p.executing.Load() >= int64(slots)
}

// promotion is the channel a start begun now watches: closed when a job
// waits for a spare.
func (p *Pool) promotion() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.promote == nil {
		p.promote = make(chan struct{})
	}
	return p.promote
}

// promoteStarts moves the starts under way to normal CPU priority; starts
// begun later watch a new channel.
func (p *Pool) promoteStarts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.promote != nil {
		close(p.promote)
	}
	p.promote = make(chan struct{})
}

// Execute runs the job in a pre-started environment (see Pool).
func (p *Pool) Execute(ctx context.Context, nb []byte, opt Options) (domain.ExecutionResult, error) {
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if !started {
		p.Start(context.WithoutCancel(ctx))
	}
	for try := 0; try < 3; try++ {
		var o offer
		if p.Ready() == 0 {
			// Nobody is ready: the starts under way are what this job
			// waits for, so they leave the background.
			p.promoteStarts()
		}
		select {
		case o = <-p.offers:
		case <-ctx.Done():
			return domain.ExecutionResult{Profile: p.Exec.Profile}, fmt.Errorf("execution canceled: %w", ctx.Err())
		case <-p.ctx.Done():
			return p.Exec.Execute(ctx, nb, opt)
		}
		if o.err != nil {
			p.Log.Warn("no warm kernel could be started; running this job cold", "err", o.err)
			return p.Exec.Execute(ctx, nb, opt)
		}
		p.executing.Add(1)
		res, err := o.w.Execute(ctx, nb, opt)
		p.executing.Add(-1)
		if errors.Is(err, ErrStale) {
			p.Log.Warn("warm kernel refused at hand-over; replacing it", "err", err)
			continue
		}
		return res, err
	}
	p.Log.Warn("warm kernels keep failing their hand-over check; running this job cold")
	return p.Exec.Execute(ctx, nb, opt)
}
