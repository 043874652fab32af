package forkserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The servers under test are this test binary, run again with
// FORKSERVER_TEST_SERVER naming what it does (testServer): real
// processes, sockets and pipes, as the zygotes have.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FORKSERVER_TEST_SERVER"); mode != "" {
		os.Exit(testServer(mode))
	}
	os.Exit(m.Run())
}

// hello is what an "echo" server says after "ready ".
type hello struct {
	PID      int      `json:"pid"`
	Lifeline bool     `json:"lifeline"` // fd 4 is a pipe
	Env      []string `json:"env"`
	Files    []string `json:"files"` // its directory's, with their modes
}

// testServer: "echo" serves requests (each reply says what came; the
// message "exit" makes it exit 3) and exits 0 when its lifeline closes;
// "silent" never says ready; "bad" says something else; "die" writes to
// stderr and exits 1.
func testServer(mode string) int {
	switch mode {
	case "silent":
		time.Sleep(time.Hour)
		return 0
	case "bad":
		fmt.Println("hello")
		time.Sleep(time.Hour)
		return 0
	case "die":
		fmt.Fprintln(os.Stderr, "warming up")
		fmt.Fprintln(os.Stderr, "boom: no module named torch")
		return 1
	}
	fmt.Fprintln(os.Stderr, "warming up")
	h := hello{PID: os.Getpid(), Env: os.Environ()}
	var st syscall.Stat_t
	if syscall.Fstat(4, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO {
		h.Lifeline = true
		go func() {
			_, _ = io.Copy(io.Discard, os.NewFile(4, "lifeline"))
			os.Exit(0)
		}()
	}
	entries, _ := os.ReadDir(os.Args[1])
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.Type().IsRegular() {
			h.Files = append(h.Files, fmt.Sprintf("%s %o", e.Name(), info.Mode().Perm()))
		}
	}
	b, _ := json.Marshal(h)
	fmt.Printf("ready %s\n", b)
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return 2
		}
		serveOne(c.(*net.UnixConn))
	}
}

// serveOne writes the message into every file it came with, replies
// {"pid", "files"} and then "done".
func serveOne(c *net.UnixConn) {
	defer c.Close()
	msg, oob := make([]byte, 4096), make([]byte, 1024)
	n, oobn, _, _, err := c.ReadMsgUnix(msg, oob)
	if err != nil {
		return
	}
	if string(msg[:n]) == "exit" {
		os.Exit(3)
	}
	var fds []int
	if scms, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range scms {
			got, _ := syscall.ParseUnixRights(&m)
			fds = append(fds, got...)
		}
	}
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "passed")
		_, _ = f.Write(msg[:n])
		f.Close()
	}
	reply, _ := json.Marshal(map[string]int{"pid": os.Getpid(), "files": len(fds)})
	_, _ = c.Write(reply)
	_, _ = c.Write([]byte("done"))
}

// spec starts this binary as a server in mode.
func spec(t *testing.T, mode string) Spec {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		Name:      "test server",
		DirPrefix: "forkserver-test-",
		Files:     []File{{Name: "public", Data: []byte("x"), Mode: 0o644}, {Name: "private", Data: []byte("y")}},
		Command: func(dir string) (*exec.Cmd, error) {
			cmd := exec.Command(self, dir)
			cmd.Env = []string{"FORKSERVER_TEST_SERVER=" + mode}
			return cmd, nil
		},
		Ready: func(line string) (any, error) {
			var h hello
			rest, ok := strings.CutPrefix(line, "ready ")
			if !ok {
				return nil, errors.New("not ready")
			}
			err := json.Unmarshal([]byte(rest), &h)
			return h, err
		},
		ReadyTimeout: time.Minute,
		Log:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func getServer(t *testing.T, s *Server, key string, sp Spec) *Proc {
	t.Helper()
	p, err := s.Get(context.Background(), key, func() Spec { return sp })
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there (%v)", path, err)
	}
}

// TestServe: the server gets its socket, files, lifeline and nothing of
// the runner's environment, in its own process group; a request reaches
// it with its files, and both replies come back on the connection.
func TestServe(t *testing.T) {
	t.Parallel()
	var s Server
	defer s.Close()
	sp := spec(t, "echo")
	sp.Lifeline = true
	p := getServer(t, &s, "k", sp)
	h := p.Value().(hello)
	if h.PID != p.PID() || !h.Lifeline || strings.Join(h.Env, " ") != "FORKSERVER_TEST_SERVER=echo" {
		t.Errorf("the server says %+v (pid %d)", h, p.PID())
	}
	if got := strings.Join(h.Files, ", "); got != "private 600, public 644" {
		t.Errorf("its directory holds %s", got)
	}
	if info, err := os.Stat(p.Dir()); err != nil || info.Mode().Perm() != 0o700 || filepath.Dir(p.Socket()) != p.Dir() {
		t.Errorf("directory %s: %v, %v; socket %s", p.Dir(), info.Mode(), err, p.Socket())
	}
	if pgid, err := syscall.Getpgid(p.PID()); err != nil || pgid != p.PID() {
		t.Errorf("process group %d (%v), want its own", pgid, err)
	}
	if p.Memory() <= 0 || s.Memory() <= 0 {
		t.Errorf("memory %d, server's %d", p.Memory(), s.Memory())
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	conn, reply, err := p.Request([]byte("job 1"), []*os.File{w}, time.Minute)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if want := fmt.Sprintf(`{"files":1,"pid":%d}`, p.PID()); string(reply) != want {
		t.Errorf("reply %s, want %s", reply, want)
	}
	if got, err := io.ReadAll(r); err != nil || string(got) != "job 1" {
		t.Errorf("the passed pipe got %q (%v)", got, err)
	}
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "done" {
		t.Errorf("second reply %q (%v)", buf[:n], err)
	}
	if again := getServer(t, &s, "k", sp); again != p {
		t.Error("a second Get started another server")
	}
}

// TestRestartAfterDeath: a server that died is replaced on the next Get,
// and what it left (socket, directory) is removed.
func TestRestartAfterDeath(t *testing.T) {
	t.Parallel()
	var s Server
	defer s.Close()
	sp := spec(t, "echo")
	p := getServer(t, &s, "k", sp)
	if _, _, err := p.Request([]byte("exit"), nil, time.Minute); err == nil {
		t.Error("a server that exits replied")
	}
	<-p.Exited()
	if code := p.cmd.ProcessState.ExitCode(); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	q := getServer(t, &s, "k", sp)
	if q == p || q.PID() == p.PID() {
		t.Fatal("the dead server was returned")
	}
	gone(t, p.Dir())
	if conn, _, err := q.Request([]byte("x"), nil, time.Minute); err != nil {
		t.Errorf("the new server: %v", err)
	} else {
		conn.Close()
	}
}

// TestKeyChange: a Get for another key stops the running server (its
// process group is killed, its directory removed) and starts one anew.
func TestKeyChange(t *testing.T) {
	t.Parallel()
	var s Server
	defer s.Close()
	sp := spec(t, "echo")
	p := getServer(t, &s, "a", sp)
	q := getServer(t, &s, "b", sp)
	<-p.Exited()
	if ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the old server ended %v, want killed", p.cmd.ProcessState)
	}
	gone(t, p.Dir())
	if q == p || getServer(t, &s, "b", sp) != q {
		t.Error("not one server per key")
	}
}

// TestLifeline: closing the lifeline alone ends the server (as when the
// runner dies and its parent-death signal was cleared by a uid change).
func TestLifeline(t *testing.T) {
	t.Parallel()
	sp := spec(t, "echo")
	sp.Lifeline = true
	p, err := Start(sp)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.lifeline.Close()
	<-p.Exited()
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit %v, want 0 (it saw its lifeline close)", p.cmd.ProcessState)
	}
}

// TestStartFailures: a server that fails to start says why, with its last
// line on stderr, and is stopped and reaped.
func TestStartFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode, want string
		timeout    time.Duration
	}{
		{"die", "test server exited at start: exit status 1: boom: no module named torch", time.Minute},
		{"bad", `test server did not start: said "hello\n"`, time.Minute},
		{"silent", "test server did not start in 100ms", 100 * time.Millisecond},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			sp := spec(t, c.mode)
			sp.ReadyTimeout = c.timeout
			var s Server
			defer s.Close()
			_, err := s.Get(context.Background(), "k", func() Spec { return sp })
			if err == nil || err.Error() != c.want {
				t.Errorf("error %v, want %q", err, c.want)
			}
			p := s.proc
			<-p.Exited()
			gone(t, p.Dir())
		})
	}
	sp := spec(t, "echo")
	sp.Command = func(string) (*exec.Cmd, error) { return exec.Command("/nonexistent/python"), nil }
	var s Server
	if _, err := s.Get(context.Background(), "k", func() Spec { return sp }); err == nil || !strings.Contains(err.Error(), "start test server") {
		t.Errorf("a missing program: %v", err)
	}
}

// TestStarted: Started gives the server's pid, and its error stops it.
func TestStarted(t *testing.T) {
	t.Parallel()
	sp := spec(t, "echo")
	var started atomic.Int64
	sp.Started = func(err error) (int, error) {
		started.Add(1)
		return 0, errors.New("no info")
	}
	var s Server
	defer s.Close()
	if _, err := s.Get(context.Background(), "k", func() Spec { return sp }); err == nil || err.Error() != "test server: no info" {
		t.Errorf("error %v", err)
	}
	if started.Load() != 1 || s.Memory() != 0 {
		t.Errorf("Started ran %d times; memory %d", started.Load(), s.Memory())
	}
}

// TestStderrLogged: with LogStderr each line is logged.
func TestStderrLogged(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logged bytes.Buffer
	sp := spec(t, "die")
	sp.LogStderr = true
	sp.Log = slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logged}, nil))
	p, err := Start(sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(context.Background()); err == nil {
		t.Fatal("a dying server started")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{`line="warming up"`, `line="boom: no module named torch"`} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logged.String())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestConcurrentGets: Gets at once share one server.
func TestConcurrentGets(t *testing.T) {
	t.Parallel()
	var s Server
	defer s.Close()
	sp := spec(t, "echo")
	var starts atomic.Int64
	procs := make([]*Proc, 8)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := s.Get(context.Background(), "k", func() Spec { starts.Add(1); return sp })
			if err != nil {
				t.Error(err)
			}
			procs[i] = p
		}()
	}
	wg.Wait()
	for _, p := range procs {
		if p != procs[0] {
			t.Fatal("Gets at once got different servers")
		}
	}
	if starts.Load() != 1 {
		t.Errorf("%d starts", starts.Load())
	}
}

// TestCloseAndContext: a Get gives up with its context, Close stops the
// server and reaps it, and later Gets fail.
func TestCloseAndContext(t *testing.T) {
	t.Parallel()
	var s Server
	sp := spec(t, "silent")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, "k", func() Spec { return sp }); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled Get: %v", err)
	}
	p := s.proc
	s.Close()
	<-p.Exited()
	gone(t, p.Dir())
	if _, err := s.Get(context.Background(), "k", func() Spec { return sp }); !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if s.Memory() != 0 {
		t.Error("a closed server has memory")
	}
}
