package forkserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultReadyTimeout bounds a server's start when Spec.ReadyTimeout is 0.
const DefaultReadyTimeout = time.Minute

// stderrGrace: how long a server's exit waits for the rest of its stderr
// when children it forked (the kernel zygote's helpers) hold the pipe.
const stderrGrace = 500 * time.Millisecond

// ErrClosed: the Server was closed.
var ErrClosed = errors.New("fork server closed")

// Spec says how to start one server.
type Spec struct {
	// Name is the server's in errors and logs ("kernel zygote").
	Name string
	// DirPrefix names its directory under the temporary one
	// ("npugrade-zygote-"): the socket (s) and Files.
	DirPrefix string
	Files     []File
	// Lifeline gives the server fd 4 (see the package comment): for a
	// server that changes its uid, which clears the parent-death signal.
	Lifeline bool
	// Command returns the server's command, given its directory. Its
	// Path, Args, Env and Dir are the caller's; its ExtraFiles follow
	// fds 3 and 4 and are closed once it started (the server has its
	// copies); Stdout, Stderr and SysProcAttr are this package's.
	Command func(dir string) (*exec.Cmd, error)
	// Started, when set, runs once the command started, or failed to
	// (startErr; then only to release what Command made). It returns the
	// server's pid when that is not the command's own (bwrap's child).
	Started func(startErr error) (pid int, err error)
	// Ready checks the server's first line (without its newline) and
	// returns what Proc.Value gives; nil: the line must be "ready".
	Ready        func(line string) (any, error)
	ReadyTimeout time.Duration
	// LogStderr logs each line the server writes to stderr as a warning
	// (a server that should be silent); otherwise its last line goes
	// only into errors and the log line of an unexpected exit.
	LogStderr bool
	Log       *slog.Logger
}

// File is one file written into the server's directory.
type File struct {
	Name string
	Data []byte
	Mode os.FileMode // 0: 0600 (root only)
}

// Proc is one started server.
type Proc struct {
	name     string
	log      *slog.Logger
	dir      string
	sock     string
	ln       *net.UnixListener
	cmd      *exec.Cmd
	pid      int
	lifeline *os.File
	stderr   *lineLog
	value    any
	ready    chan struct{}
	err      error // why it is not ready, once ready is closed
	exited   chan struct{}
	stopped  atomic.Bool // Stop was called: its exit is expected
}

// Start starts a server; Wait waits for it to be ready.
func Start(spec Spec) (*Proc, error) {
	log := spec.Log
	if log == nil {
		log = slog.Default()
	}
	// Root-only (0700): only root may connect to the socket.
	dir, err := os.MkdirTemp("", spec.DirPrefix)
	if err != nil {
		return nil, fmt.Errorf("%s dir: %w", spec.Name, err)
	}
	p := &Proc{name: spec.Name, log: log, dir: dir, sock: filepath.Join(dir, "s"), stderr: &lineLog{name: spec.Name},
		ready: make(chan struct{}), exited: make(chan struct{})}
	if spec.LogStderr {
		p.stderr.log = log
	}
	ok := false
	defer func() {
		if !ok {
			p.Stop()
		}
	}()
	for _, f := range spec.Files {
		if err := writeFile(filepath.Join(dir, f.Name), f.Data, f.Mode); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
	}
	if p.ln, err = net.ListenUnix("unixpacket", &net.UnixAddr{Name: p.sock, Net: "unixpacket"}); err != nil {
		return nil, fmt.Errorf("%s socket: %w", spec.Name, err)
	}
	lf, err := p.ln.File()
	if err != nil {
		return nil, fmt.Errorf("%s socket: %w", spec.Name, err)
	}
	defer lf.Close()
	files := []*os.File{lf}
	if spec.Lifeline {
		// The server exits when this pipe's write end (ours) closes: when
		// Stop closes it or this process dies.
		lifeR, lifeW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		defer lifeR.Close()
		p.lifeline = lifeW
		files = append(files, lifeR)
	}
	out, err := p.start(spec, files)
	if err != nil {
		return nil, err
	}
	go p.waitReady(out, spec)
	ok = true
	return p, nil
}

// start runs the command with files as fds 3 and on, and returns the read
// end of its stdout.
func (p *Proc) start(spec Spec, files []*os.File) (*os.File, error) {
	cmd, err := spec.Command(p.dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	out, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// Its stderr through a pipe of ours, not exec's copy: Wait then
	// returns when the server exits, even while children it forked still
	// hold the pipe, so that a dead server is seen as dead at once.
	errR, errW, err := os.Pipe()
	if err != nil {
		out.Close()
		outW.Close()
		return nil, err
	}
	theirs := cmd.ExtraFiles
	cmd.ExtraFiles = append(files, theirs...)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.cmd = cmd
	err = cmd.Start()
	for _, f := range append(theirs, outW, errW) {
		f.Close()
	}
	if err != nil {
		if spec.Started != nil {
			_, _ = spec.Started(err)
		}
		out.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(p.stderr, errR)
		errR.Close()
		close(copied)
	}()
	go func() {
		err := cmd.Wait()
		// Its last words for the errors, unless children hold the pipe.
		select {
		case <-copied:
		case <-time.After(stderrGrace):
		}
		if !p.stopped.Load() {
			p.log.Warn("forkserver: server exited", "server", p.name, "err", err, "stderr", p.stderr.last())
		}
		close(p.exited)
	}()
	p.pid = cmd.Process.Pid
	if spec.Started != nil {
		pid, err := spec.Started(nil)
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
		p.pid = pid
	}
	return out, nil
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	if mode == 0 {
		mode = 0o600
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		return err
	}
	return os.Chmod(path, mode) // what the umask took away
}

// waitReady closes p.ready when the server has said it is ready, or has
// failed to (then p.err says why and the server is stopped).
func (p *Proc) waitReady(out *os.File, spec Spec) {
	defer out.Close()
	type said struct {
		value any
		err   error
	}
	line := make(chan said, 1)
	go func() {
		s, err := bufio.NewReader(out).ReadString('\n')
		var v any
		if err == nil {
			if v, err = checkReady(spec.Ready, strings.TrimSuffix(s, "\n")); err != nil {
				err = fmt.Errorf("said %q", s)
			}
		}
		line <- said{v, err}
	}()
	timeout := spec.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	exited := func() error { return fmt.Errorf("%s exited at start: %v%s", p.name, p.cmd.ProcessState, p.detail()) }
	select {
	case l := <-line:
		p.value = l.value
		switch {
		case errors.Is(l.err, io.EOF):
			// Its stdout closed: it is exiting. Say how, with its last words.
			select {
			case <-p.exited:
				p.err = exited()
			case <-t.C:
				p.err = fmt.Errorf("%s did not start: %w%s", p.name, l.err, p.detail())
			}
		case l.err != nil:
			p.err = fmt.Errorf("%s did not start: %w%s", p.name, l.err, p.detail())
		}
	case <-t.C:
		p.err = fmt.Errorf("%s did not start in %v%s", p.name, timeout, p.detail())
	case <-p.exited:
		p.err = exited()
	}
	if p.err != nil {
		p.Stop()
	} else {
		p.log.Info("forkserver: ready", "server", p.name, "pid", p.pid, "memory_bytes", p.Memory())
	}
	close(p.ready)
}

func checkReady(check func(string) (any, error), line string) (any, error) {
	if check != nil {
		return check(line)
	}
	if line != "ready" {
		return nil, errors.New("not ready")
	}
	return nil, nil
}

// detail is the server's last line on stderr, for an error.
func (p *Proc) detail() string {
	if l := p.stderr.last(); l != "" {
		return ": " + l
	}
	return ""
}

// Wait waits until the server is ready (nil) or failed to start.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.ready:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dir is the server's root-only directory (its Files).
func (p *Proc) Dir() string { return p.dir }

// Socket is the path of the server's socket.
func (p *Proc) Socket() string { return p.sock }

// PID is the server's process id.
func (p *Proc) PID() int { return p.pid }

// Value is what Spec.Ready returned (once ready).
func (p *Proc) Value() any { return p.value }

// Exited is closed once the server has exited and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Stop kills the server's process group (unless it has exited already:
// its id may be another's by now), closes its lifeline and socket and
// removes its directory. Processes that left its group are unaffected.
func (p *Proc) Stop() {
	p.stopped.Store(true)
	if p.lifeline != nil {
		p.lifeline.Close()
	}
	if p.cmd != nil && p.cmd.Process != nil {
		select {
		case <-p.exited:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	if p.ln != nil {
		p.ln.Close()
	}
	_ = os.RemoveAll(p.dir)
}

// Memory is the server's resident memory in bytes (0 once it is gone).
func (p *Proc) Memory() int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		return 0
	}
	return res * int64(os.Getpagesize())
}

// Request opens a connection to the server, sends msg with files (by
// SCM_RIGHTS: the server gets its own copies) and reads the first reply,
// all within timeout. The connection stays open for later replies; the
// caller closes it.
func (p *Proc) Request(msg []byte, files []*os.File, timeout time.Duration) (*net.UnixConn, []byte, error) {
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: p.sock, Net: "unixpacket"})
	if err != nil {
		return nil, nil, err
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	var rights []byte
	if len(fds) > 0 {
		rights = syscall.UnixRights(fds...)
	}
	buf := make([]byte, 4096)
	_, _, err = conn.WriteMsgUnix(msg, rights, nil)
	var n int
	if err == nil {
		n, err = conn.Read(buf)
	}
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, buf[:n], nil
}

// Server keeps one server running per key: Get starts it, and starts it
// again when it died or the key changed. The zero value is ready to use.
type Server struct {
	mu     sync.Mutex
	key    string
	proc   *Proc
	closed bool
}

// Get returns the ready server for key, starting it with spec() when none
// runs, the last one died or it was started for another key (then it is
// stopped), and waiting for it to be ready, or for ctx.
func (s *Server) Get(ctx context.Context, key string, spec func() Spec) (*Proc, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	p := s.proc
	if p != nil {
		select {
		case <-p.exited:
			p.Stop() // its socket and directory
			p = nil
		default:
			if s.key != key {
				p.Stop()
				p = nil
			}
		}
	}
	if p == nil {
		var err error
		if p, err = Start(spec()); err != nil {
			s.proc = nil
			s.mu.Unlock()
			return nil, err
		}
		s.proc, s.key = p, key
	}
	s.mu.Unlock()
	if err := p.Wait(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Memory is the running server's resident memory (0 when none runs).
func (s *Server) Memory() int64 {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.pid == 0 {
		return 0
	}
	return p.Memory()
}

// Close stops the server; later Gets fail with ErrClosed.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.proc != nil {
		s.proc.Stop()
		s.proc = nil
	}
}

// lineLog keeps the last line a server wrote to stderr and, with log,
// logs every line.
type lineLog struct {
	name string
	log  *slog.Logger
	mu   sync.Mutex
	buf  []byte // the line being written
	tail string // the last complete line that was not blank
}

func (w *lineLog) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if w.log != nil {
			w.log.Warn("forkserver: stderr", "server", w.name, "line", line)
		}
		if strings.TrimSpace(line) != "" {
			w.tail = clip(line)
		}
	}
	if len(w.buf) > 4096 {
		w.tail, w.buf = clip(string(w.buf)), w.buf[:0]
	}
	return len(b), nil
}

// last is the last line written (an unfinished one included).
func (w *lineLog) last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := strings.TrimSpace(string(w.buf)); s != "" {
		return clip(s)
	}
	return strings.TrimSpace(w.tail)
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300]
	}
	return s
}
