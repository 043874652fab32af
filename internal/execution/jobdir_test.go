package execution_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// jobDirHelperEnv makes TestJobDirHelperProcess a runner that stops at a
// crash point: "MODE POINT WORKROOT BASEDIR".
const jobDirHelperEnv = "NPUGRADE_JOBDIR_HELPER"

// The crash points of a job's life, in order: the job directory made and
// nothing isolated yet; the kernel isolated (the sandbox records its job
// directory); the kernel closed after the run (the sandbox and its record
// gone, the executed notebook still in the job directory).
const (
	atIsolate  = "isolate"
	atPrepared = "prepared"
	atClosed   = "closed"
)

// TestJobDirHelperProcess is the runner that TestSweepJobDirsAfterSIGKILL
// kills: it executes a notebook, stops at the crash point jobDirHelperEnv
// names, says so on stdout and waits there to be SIGKILLed.
func TestJobDirHelperProcess(t *testing.T) {
	spec := strings.Fields(os.Getenv(jobDirHelperEnv))
	if len(spec) != 4 {
		t.Skip("the helper process of TestSweepJobDirsAfterSIGKILL")
	}
	var iso domain.Isolation = sandbox.None{}
	if spec[0] == "sandbox" {
		cfg := sandbox.DefaultConfig()
		cfg.BaseDir = spec[3]
		iso = &cfg
	}
	e := &execution.Executor{Profile: "cpu", WorkRoot: spec[2], Isolation: crashAt{iso, spec[1]}}
	res, err := e.Execute(context.Background(), codeNotebook(t, "print('hidden probe')"), execution.Options{CellTimeout: time.Minute})
	t.Fatalf("the helper got past its crash point %s: %v\n%s", spec[1], err, res.Log)
}

// crashAt is an isolation backend that stops its process at point.
type crashAt struct {
	domain.Isolation
	point string
}

func (c crashAt) Isolate(ctx context.Context, jobDir string, env map[string]string) (domain.IsolatedKernel, error) {
	if c.point == atIsolate {
		stopHere(c.point, jobDir)
	}
	k, err := c.Isolation.Isolate(ctx, jobDir, env)
	if err != nil {
		return nil, err
	}
	if c.point == atPrepared {
		stopHere(c.point, jobDir)
	}
	return crashKernel{k, c.point, jobDir}, nil
}

type crashKernel struct {
	domain.IsolatedKernel
	point, jobDir string
}

func (k crashKernel) Close() error {
	err := k.IsolatedKernel.Close()
	if k.point == atClosed {
		stopHere(k.point, k.jobDir)
	}
	return err
}

// stopHere reports the crash point and waits for SIGKILL (or for its
// stdin to close: the test is gone).
func stopHere(point, jobDir string) {
	fmt.Printf("crash point %s %s\n", point, jobDir)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(3)
}

// jobDirHelper is a TestJobDirHelperProcess process stopped at its point.
type jobDirHelper struct {
	cmd   *exec.Cmd
	dir   string // its job directory
	stdin io.Closer
}

func startJobDirHelper(t *testing.T, mode, point, root, base string) *jobDirHelper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestJobDirHelperProcess$")
	cmd.Env = append(os.Environ(), jobDirHelperEnv+"="+strings.Join([]string{mode, point, root, base}, " "))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	h := &jobDirHelper{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.kill(t) })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "crash point "+point+" "); ok {
			h.dir = rest
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return h
		}
	}
	_ = cmd.Wait()
	t.Fatalf("%s helper at %s: exited before its crash point:\n%s", mode, point, stderr.String())
	return nil
}

// kill SIGKILLs the helper and waits for it.
func (h *jobDirHelper) kill(t *testing.T) {
	if h.cmd.ProcessState != nil {
		return
	}
	_ = h.cmd.Process.Kill()
	_ = h.cmd.Wait()
	h.stdin.Close()
}

// ownerTag is the "PID.START.HOST" a job directory's name carries.
func ownerTag(t *testing.T, dir string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(filepath.Base(dir), "npugrade-job-")
	tag, _, _ := strings.Cut(rest, "-")
	if !ok || strings.Count(tag, ".") != 2 {
		t.Fatalf("job directory %s: its name carries no owner", dir)
	}
	return tag
}

// TestSweepJobDirsAfterSIGKILL SIGKILLs a runner (a helper process that
// executes a notebook) at each crash point of a job, sandboxed and on the
// host (--sandbox=none), and runs what the next runner runs at start (the
// sandbox's Sweep, then SweepJobDirs): the dead runner's job directory is
// gone, the job directories of live runners (stopped at crash points of
// their own) stay until they die, and nothing whose name, type, owner or
// mode does not prove it a dead runner's job directory is touched.
func TestSweepJobDirsAfterSIGKILL(t *testing.T) {
	requireExecution(t)
	root, base := shortTemp(t), filepath.Join(shortTemp(t), "b")
	cfg := sandbox.DefaultConfig()
	cfg.BaseDir = base
	sweep := func(t *testing.T) int {
		t.Helper()
		if _, err := sandbox.Sweep(cfg); err != nil {
			t.Fatal(err)
		}
		n, err := execution.SweepJobDirs(root)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	live := []*jobDirHelper{startJobDirHelper(t, "host", atClosed, root, base), startJobDirHelper(t, "sandbox", atPrepared, root, base)}
	var dead string
	for _, mode := range []string{"host", "sandbox"} {
		for _, point := range []string{atIsolate, atPrepared, atClosed} {
			victim := startJobDirHelper(t, mode, point, root, base)
			victim.kill(t)
			if _, err := os.Stat(victim.dir); err != nil {
				t.Fatalf("%s at %s: the killed runner left no job directory to sweep: %v", mode, point, err)
			}
			if _, err := os.Stat(filepath.Join(victim.dir, "out", "executed.ipynb")); point == atClosed && err != nil {
				t.Fatalf("%s at %s: no executed notebook in the job directory: %v", mode, point, err)
			}
			// The sandbox's own record removes it at "prepared"; nothing
			// but its name is left at the other points.
			want := 1
			if mode == "sandbox" && point == atPrepared {
				want = 0
			}
			if n := sweep(t); n != want {
				t.Errorf("%s at %s: SweepJobDirs removed %d, want %d", mode, point, n, want)
			}
			if _, err := os.Lstat(victim.dir); !os.IsNotExist(err) {
				t.Fatalf("%s at %s: the dead runner's job directory is still there (%v)", mode, point, err)
			}
			for _, h := range live {
				if _, err := os.Stat(filepath.Join(h.dir, "in")); err != nil {
					t.Fatalf("%s at %s: a live runner's job directory was swept: %v", mode, point, err)
				}
			}
			dead = ownerTag(t, victim.dir)
		}
	}
	kept := plantLookalikes(t, root, dead)
	if n := sweep(t); n != 0 {
		t.Errorf("swept %d of the look-alikes", n)
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("look-alike %s was touched: %v", p, err)
		}
	}
	for _, h := range live {
		h.kill(t)
	}
	// The sandbox's Sweep takes the one it recorded.
	if n := sweep(t); n != 1 {
		t.Errorf("after the live runners died: SweepJobDirs removed %d, want 1", n)
	}
	for _, h := range live {
		if _, err := os.Lstat(h.dir); !os.IsNotExist(err) {
			t.Errorf("%s: still there after its runner died (%v)", h.dir, err)
		}
	}
}

// plantLookalikes makes entries in root that a sweep must leave alone and
// returns the paths that show they are intact (a file "keep" in each
// directory and in the one a link points to; the file itself): names with no owner, or a mangled one, or another host's
// key; a dead runner's name (dead, its "PID.START.HOST") on a link to
// another directory, on a file, on a directory of another mode or (as
// root) of another uid.
func plantLookalikes(t *testing.T, root, dead string) []string {
	t.Helper()
	f := strings.Split(dead, ".")
	otherHost := "00000000"
	if f[2] == otherHost {
		otherHost = "ffffffff"
	}
	var kept []string
	mkdir := func(name string, mode os.FileMode) string {
		p := filepath.Join(root, name)
		must(t, os.Mkdir(p, 0o700))
		must(t, os.WriteFile(filepath.Join(p, "keep"), nil, 0o600))
		must(t, os.Chmod(p, mode))
		kept = append(kept, filepath.Join(p, "keep"))
		return p
	}
	mkdir("npugrade-job-other", 0o700)
	mkdir("npugrade-job-1234567890", 0o700)
	mkdir("npugrade-job-"+f[0]+"."+f[1]+"-1", 0o700)
	mkdir("npugrade-job-0"+dead+"-1", 0o700)
	mkdir("npugrade-job-"+f[0]+"."+f[1]+"."+otherHost+"-1", 0o700)
	mkdir("npugrade-job-"+dead+"-mode", 0o755)
	if os.Geteuid() == 0 {
		must(t, os.Chown(mkdir("npugrade-job-"+dead+"-uid", 0o700), 65534, 65534))
	}
	target := t.TempDir()
	must(t, os.WriteFile(filepath.Join(target, "keep"), nil, 0o600))
	link := filepath.Join(root, "npugrade-job-"+dead+"-link")
	must(t, os.Symlink(target, link))
	file := filepath.Join(root, "npugrade-job-"+dead+"-file")
	must(t, os.WriteFile(file, nil, 0o600))
	return append(kept, filepath.Join(link, "keep"), file)
}
