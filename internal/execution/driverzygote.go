package execution

import (
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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/npugrade/npugrade/internal/forkserver"
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

	srv      forkserver.Server
	fellBack sync.Once
	forks    atomic.Int64
}

// driverZygoteTimeout bounds the zygote's start and each fork's reply.
const driverZygoteTimeout = time.Minute

func (z *DriverZygote) log() *slog.Logger {
	if z.Log != nil {
		return z.Log
	}
	return slog.Default()
}

// get returns a ready zygote running python, starting one when none
// runs, the last one died or python changed.
func (z *DriverZygote) get(python string) (*forkserver.Proc, error) {
	return z.srv.Get(context.Background(), python, func() forkserver.Spec {
		return forkserver.Spec{
			Name:      "driver zygote",
			DirPrefix: "npugrade-driver-",
			Files:     []forkserver.File{{Name: "driver.py", Data: driverPy}},
			Command: func(dir string) (*exec.Cmd, error) {
				cmd := exec.Command(python, "-I", filepath.Join(dir, "driver.py"), "--zygote")
				cmd.Dir = "/"
				// PYDEVD_DISABLE_FILE_VALIDATION: ipykernel's spec imports debugpy,
				// which warns about frozen modules otherwise.
				cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "PYDEVD_DISABLE_FILE_VALIDATION=1"}
				return cmd, nil
			},
			ReadyTimeout: driverZygoteTimeout,
			Log:          z.log(),
		}
	})
}

// prestart starts the zygote in the background, so that a pool's first
// spare does not start it only after its kernel zygote is ready (both
// start at once, each on a core); a failure shows on the first warm
// driver, which starts it again.
func (z *DriverZygote) prestart(python string) {
	go func() { _, _ = z.get(python) }()
}

// Drivers is how many drivers were forked.
func (z *DriverZygote) Drivers() int64 { return z.forks.Load() }

// Close stops the zygote and, with it, the drivers forked from it that
// are still running (they die with it).
func (z *DriverZygote) Close() { z.srv.Close() }

// Memory is the zygote's resident memory (shared with the drivers forked
// from it), 0 when none runs.
func (z *DriverZygote) Memory() int64 {
	if z == nil {
		return 0
	}
	return z.srv.Memory()
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
	msg, _ := json.Marshal(map[string]any{"argv": []string{"--warm", j.configPath()}, "cwd": filepath.Join(j.dir, "work"), "env": envMap(j.env)})
	conn, b, err := zp.Request(msg, theirs, driverZygoteTimeout)
	var reply struct {
		Pid    int  `json:"pid"`
		Status *int `json:"status"`
	}
	if err == nil {
		err = json.Unmarshal(b, &reply)
	}
	if err == nil && reply.Pid <= 0 {
		err = errors.New("no pid in the reply")
	}
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		closeMine()
		return nil, fmt.Errorf("driver zygote: %w", err)
	}
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
