package execution

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DriverZygote forks warm drivers from one driver.py --zygote process that
// imported nbformat, nbclient, nbconvert and jupyter_client once: a warm
// driver then starts in milliseconds instead of the ~0.6 s of CPU that
// Python takes to import them. The driver runs outside the sandbox, as
// the runner, exactly as an exec'd one: only its start moved. Set
// Executor.DriverZygote to use it; it starts with the first warm driver
// and is restarted when it dies. Close it when the runner stops.
type DriverZygote struct {
	Log *slog.Logger

	mu       sync.Mutex
	python   string
	proc     *driverZygoteProc
	closed   bool
	fellBack sync.Once
	forks    atomic.Int64
}

type driverZygoteProc struct {
	dir     string // root-only: the socket and driver.py
	sock    string
	ln      *net.UnixListener
	cmd     *exec.Cmd
	ready   chan struct{}
	err     error
	exited  chan struct{}
	stopped atomic.Bool // stop was called: its exit is expected
}

// driverZygoteTimeout bounds the zygote's start and each fork's reply.
const driverZygoteTimeout = time.Minute

func (z *DriverZygote) log() *slog.Logger {
	if z.Log != nil {
		return z.Log
	}
	return slog.Default()
}

// get returns a ready zygote running python, starting one when needed.
func (z *DriverZygote) get(python string) (*driverZygoteProc, error) {
	z.mu.Lock()
	if z.closed {
		z.mu.Unlock()
		return nil, errors.New("driver zygote closed")
	}
	p := z.proc
	if p != nil {
		select {
		case <-p.exited:
			p = nil
		default:
			if z.python != python {
				p.stop()
				p = nil
			}
		}
	}
	if p == nil {
		var err error
		if p, err = z.start(python); err != nil {
			z.mu.Unlock()
			return nil, err
		}
		z.proc, z.python = p, python
	}
	z.mu.Unlock()
	<-p.ready
	return p, p.err
}

func (z *DriverZygote) start(python string) (*driverZygoteProc, error) {
	dir, err := os.MkdirTemp("", "npugrade-driver-") // 0700: only root may connect
	if err != nil {
		return nil, fmt.Errorf("driver zygote: %w", err)
	}
	p := &driverZygoteProc{dir: dir, sock: filepath.Join(dir, "s"), ready: make(chan struct{}), exited: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			p.stop()
		}
	}()
	script := filepath.Join(dir, "driver.py")
	if err := os.WriteFile(script, driverPy, 0o600); err != nil {
		return nil, fmt.Errorf("driver zygote: %w", err)
	}
	if p.ln, err = net.ListenUnix("unixpacket", &net.UnixAddr{Name: p.sock, Net: "unixpacket"}); err != nil {
		return nil, fmt.Errorf("driver zygote socket: %w", err)
	}
	lf, err := p.ln.File()
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	out, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(python, "-I", script, "--zygote")
	p.cmd.Dir = "/"
	// PYDEVD_DISABLE_FILE_VALIDATION: ipykernel's spec imports debugpy,
	// which warns about frozen modules otherwise.
	p.cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "PYDEVD_DISABLE_FILE_VALIDATION=1"}
	p.cmd.ExtraFiles = []*os.File{lf} // fd 3
	p.cmd.Stdout = outW
	tail := &tailBuffer{max: 8 << 10}
	p.cmd.Stderr = tail
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = p.cmd.Start()
	outW.Close()
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("start driver zygote: %w", err)
	}
	go func() {
		err := p.cmd.Wait()
		if !p.stopped.Load() {
			z.log().Warn("driver zygote exited", "err", err, "log", lastLine(tail.String()))
		}
		close(p.exited)
	}()
	go func() {
		defer out.Close()
		line := make(chan error, 1)
		go func() {
			s, err := bufio.NewReader(out).ReadString('\n')
			if err == nil && s != "ready\n" {
				err = fmt.Errorf("said %q", s)
			}
			line <- err
		}()
		select {
		case err := <-line:
			if err != nil {
				p.err = fmt.Errorf("driver zygote did not start: %w: %s", err, lastLine(tail.String()))
			}
		case <-time.After(driverZygoteTimeout):
			p.err = errors.New("driver zygote did not start in time")
		case <-p.exited:
			p.err = fmt.Errorf("driver zygote exited at start: %s", lastLine(tail.String()))
		}
		if p.err != nil {
			p.stop()
		}
		close(p.ready)
	}()
	ok = true
	return p, nil
}

func (p *driverZygoteProc) stop() {
	p.stopped.Store(true)
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	if p.ln != nil {
		p.ln.Close()
	}
	_ = os.RemoveAll(p.dir)
}

// Drivers is how many drivers were forked.
func (z *DriverZygote) Drivers() int64 { return z.forks.Load() }

// Close stops the zygote and, with it, the drivers forked from it that
// are still running (they die with it).
func (z *DriverZygote) Close() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.closed = true
	if z.proc != nil {
		z.proc.stop()
		z.proc = nil
	}
}

// Memory is the zygote's resident memory (shared with the drivers forked
// from it), 0 when none runs.
func (z *DriverZygote) Memory() int64 {
	if z == nil {
		return 0
	}
	z.mu.Lock()
	p := z.proc
	z.mu.Unlock()
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return rss(p.cmd.Process.Pid)
}

// forkDriver starts j's warm driver as a fork of the zygote: the same
// argv, working directory, environment, fds 3 and 4 and log as the exec
// path's.
func (e *Executor) forkDriver(j *job) (*driverProc, error) {
	z := e.DriverZygote
	zp, err := z.get(e.python())
	if err != nil {
		return nil, err
	}
	var mine, theirs []*os.File
	defer func() {
		for _, f := range theirs {
			f.Close()
		}
	}()
	for i := 0; i < 3; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range mine {
				f.Close()
			}
			return nil, err
		}
		if i == 0 { // fd 3: the driver reads the job request
			mine, theirs = append(mine, w), append(theirs, r)
		} else { // fd 4 (replies) and the log
			mine, theirs = append(mine, r), append(theirs, w)
		}
	}
	closeMine := func() {
		for _, f := range mine {
			f.Close()
		}
	}
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: zp.sock, Net: "unixpacket"})
	if err != nil {
		closeMine()
		return nil, fmt.Errorf("driver zygote: %w", err)
	}
	msg, _ := json.Marshal(map[string]any{"argv": []string{"--warm", j.configPath()}, "cwd": filepath.Join(j.dir, "work"), "env": envMap(j.env)})
	rights := syscall.UnixRights(int(theirs[0].Fd()), int(theirs[1].Fd()), int(theirs[2].Fd()))
	var reply struct {
		Pid    int  `json:"pid"`
		Status *int `json:"status"`
	}
	buf := make([]byte, 4096)
	_ = conn.SetDeadline(time.Now().Add(driverZygoteTimeout))
	_, _, err = conn.WriteMsgUnix(msg, rights, nil)
	var n int
	if err == nil {
		n, err = conn.Read(buf)
	}
	if err == nil {
		err = json.Unmarshal(buf[:n], &reply)
	}
	if err == nil && reply.Pid <= 0 {
		err = errors.New("no pid in the reply")
	}
	if err != nil {
		conn.Close()
		closeMine()
		return nil, fmt.Errorf("driver zygote: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	z.forks.Add(1)
	p := &driverProc{pid: reply.Pid, forked: true, log: &tailBuffer{max: 64 << 10}, exited: make(chan struct{}), req: mine[0], resp: mine[1]}
	go p.awaitForked(conn, mine[2])
	return p, nil
}

// awaitForked copies a forked driver's log and closes p.exited once the
// zygote has reported its exit status (or died).
func (p *driverProc) awaitForked(conn *net.UnixConn, logR *os.File) {
	defer conn.Close()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(p.log, logR)
		close(copied)
	}()
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	var st struct {
		Status *int `json:"status"`
	}
	if err == nil {
		err = json.Unmarshal(buf[:n], &st)
	}
	switch ws := syscall.WaitStatus(0); {
	case err != nil || st.Status == nil:
		p.err = fmt.Errorf("driver zygote: lost the driver's exit status: %v", err)
	default:
		ws = syscall.WaitStatus(*st.Status)
		if ws.Signaled() {
			p.err = fmt.Errorf("signal: %v", ws.Signal())
		} else if ws.ExitStatus() != 0 {
			p.err = fmt.Errorf("exit status %d", ws.ExitStatus())
		}
	}
	// As exec.Cmd's WaitDelay: a learner process holding the log open
	// does not keep the job waiting.
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
	}
	logR.Close()
	close(p.exited)
}

// envMap turns KEY=VALUE entries into a map (later entries win, as in
// exec's environment).
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				m[kv[:i]] = kv[i+1:]
				break
			}
		}
	}
	return m
}

// fallBack logs once why warm drivers are exec'd, not forked.
func (z *DriverZygote) fallBack(err error) {
	z.fellBack.Do(func() { z.log().Warn("warm drivers start on the exec path, not forked", "reason", err) })
}
