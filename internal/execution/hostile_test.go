package execution_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/envs/envtest"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/sandbox"
	"github.com/npugrade/npugrade/internal/scoring"
)

// The hostile corpus runs against the small exercise in testdata/hostile:
// three solution cells q1, q2, q3 whose reference outputs are "before",
// "ok" and "after". Each case puts hostile code into q2 and states the
// verdict of every cell: q1 always passes (it ran before), q3 passes where
// the kernel survives and is not-run where it is gone.
const (
	hostileExercises = "testdata/hostile/exercises"
	hostileAnswers   = "testdata/hostile/answers"
	runnerSecretEnv  = "NPUGRADE_RUNNER_TOKEN_FOR_TEST"
	runnerSecret     = "npg_RUNNER-SECRET-must-not-leak"
	otherJobSecret   = "OTHER-SUBMISSION-SECRET"
	testMemoryLimit  = 256 << 20
)

// hostileMemoryLimit is the corpus's memory limit: 256 MiB on the host, and
// 1 GiB in the cpu environment, whose kernels import torch and Dynamo at
// start (the npugraph_ex stand-in registers its backend there), so that the
// cases about other limits are not cut short by memory. The memory bomb
// (1 GiB on top of the kernel) exceeds both.
// envTimingCases are left out of the corpus run in the cpu environment.
var envTimingCases = map[string]bool{"process-bomb": true, "sleep-past-job-deadline": true, "memory-bomb": true}

func hostileMemoryLimit(rootfs string) int64 {
	if rootfs != "" {
		return 1 << 30
	}
	return testMemoryLimit
}

// hostileCase is one notebook of the corpus.
type hostileCase struct {
	name string
	// q2 is the hostile cell's source; %[1]s is replaced by the loopback
	// listener's port, %[2]s by the host directory no write may reach,
	// %[3]s by the runner's work root (other jobs live there).
	q2 string
	// q2Verdict and q3Verdict are the expected verdicts; msg is a
	// substring of q2's message.
	q2Verdict, q3Verdict, msg string
	// opts overrides the job's timeouts (unset: a 2 s cell limit for
	// the timeout cases, 30 s for the others, a 1 minute run).
	opts execution.Options
	// output sets tighter output limits.
	output execution.OutputLimits
	// check runs extra assertions on the executed notebook.
	check func(t *testing.T, res domain.ExecutionResult, q2 *notebook.Cell)
}

func hostileCorpus() []hostileCase {
	bigPNG := base64.StdEncoding.EncodeToString(make([]byte, 3<<20))
	return []hostileCase{
		{name: "busy-loop", q2: "while True:\n    pass",
			q2Verdict: domain.VerdictTimeout, q3Verdict: domain.VerdictPass, msg: "did not finish within its 2s time limit and was interrupted"},
		{name: "ignores-sigint", q2: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
			q2Verdict: domain.VerdictTimeout, q3Verdict: domain.VerdictNotRun, msg: "did not stop when interrupted, so the kernel was stopped"},
		// An interrupt lost once (as one that reaches the kernel before
		// the cell's code runs): the driver sends it again within the
		// grace, so the cell stops and the kernel lives on.
		{name: "interrupt-lost-once", q2: "import signal, time\nseen = []\ndef once(signum, frame):\n    seen.append(signum)\n    if len(seen) > 1:\n        raise KeyboardInterrupt\nsignal.signal(signal.SIGINT, once)\ntime.sleep(3600)",
			q2Verdict: domain.VerdictTimeout, q3Verdict: domain.VerdictPass, msg: "did not finish within its 2s time limit and was interrupted"},
		{name: "swallows-keyboardinterrupt", q2: "import time\nwhile True:\n    try:\n        time.sleep(10)\n    except KeyboardInterrupt:\n        pass",
			q2Verdict: domain.VerdictTimeout, q3Verdict: domain.VerdictNotRun, msg: "did not stop when interrupted"},
		{name: "sleep-past-cell-timeout", q2: "import time\ntime.sleep(3600)",
			q2Verdict: domain.VerdictTimeout, q3Verdict: domain.VerdictPass, msg: "2s time limit"},
		{name: "sleep-past-job-deadline", q2: "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(3600)",
			// 20 s, not less: the whole-run limit also covers a cold kernel's
			// start, which took over 6 s on a loaded 2-core machine.
			opts:      execution.Options{CellTimeout: time.Minute, JobTimeout: 20 * time.Second},
			q2Verdict: domain.VerdictTimeout, q3Verdict: domain.VerdictNotRun, msg: "was still running when the whole notebook hit its 20s limit"},
		{name: "memory-bomb", q2: "x = b'x' * (1 << 30)\nprint('ok')",
			q2Verdict: domain.VerdictMemoryLimit, q3Verdict: domain.VerdictNotRun, msg: "cell 3 exceeded the 256 MiB memory limit"},
		{name: "process-bomb", q2: "import os, time\nfor i in range(100000):\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)",
			q2Verdict: domain.VerdictError, q3Verdict: domain.VerdictPass, msg: "limit of 64 processes/threads",
			// The pids limit is under test, not the cell timeout: 64 forks of a
			// warm kernel that preloaded torch take seconds on a loaded 2-core
			// CI machine (CI once saw the 2 s limit fire mid-bomb).
			opts: execution.Options{CellTimeout: 30 * time.Second, JobTimeout: 2 * time.Minute}},
		{name: "output-flood", q2: "for i in range(300000):\n    print('flood', i)",
			q2Verdict: domain.VerdictIncompleteOutput, q3Verdict: domain.VerdictPass, msg: "per-cell output limit",
			// Not a timeout case: give the flood time to finish on a loaded CI machine.
			opts:   execution.Options{CellTimeout: 45 * time.Second, JobTimeout: 2 * time.Minute},
			output: execution.OutputLimits{PerCell: 256 << 10, PerNotebook: 1 << 20},
			check: func(t *testing.T, res domain.ExecutionResult, q2 *notebook.Cell) {
				if len(res.Notebook) > 2<<20 {
					t.Errorf("executed notebook is %d bytes despite the 1 MiB output limit", len(res.Notebook))
				}
				if !hasMarker(q2) {
					t.Error("no truncation marker in the flooding cell")
				}
			}},
		{name: "huge-image", q2: "from IPython.display import display\ndisplay({'image/png': '" + bigPNG + "'}, raw=True)\nprint('ok')",
			q2Verdict: domain.VerdictIncompleteOutput, q3Verdict: domain.VerdictPass, msg: "per-cell output limit",
			opts:   execution.Options{CellTimeout: 45 * time.Second, JobTimeout: 2 * time.Minute},
			output: execution.OutputLimits{PerCell: 1 << 20},
			check: func(t *testing.T, res domain.ExecutionResult, q2 *notebook.Cell) {
				for _, o := range q2.Outputs {
					if _, ok := o.Data["image/png"]; ok {
						t.Error("the oversized image was kept")
					}
				}
				if !hasMarker(q2) {
					t.Error("no truncation marker")
				}
			}},
		{name: "late-printing-thread", q2: "import threading, time\ndef spam():\n    while True:\n        print('late', flush=True)\n        time.sleep(0.01)\nthreading.Thread(target=spam, daemon=True).start()\nprint('ok')",
			// The thread's lines land wherever the kernel is printing
			// next: never a hang, and the cell that printed them cannot pass.
			// Whether a line lands in q3 depends on timing; either way the
			// run ends and q3 keeps its own output.
			q2Verdict: domain.VerdictMismatch, q3Verdict: domain.VerdictPass + "|" + domain.VerdictMismatch},
		{name: "network-loopback", q2: "import socket\ns = socket.create_connection(('127.0.0.1', %[1]s), timeout=3)\ns.sendall(b'LEAK')\nprint('ok')",
			// Past the socket's 3 s: a connection that hangs must raise
			// (socket.timeout), not be cut off by the cell limit.
			opts:      execution.Options{CellTimeout: 30 * time.Second, JobTimeout: 2 * time.Minute},
			q2Verdict: domain.VerdictError, q3Verdict: domain.VerdictPass, msg: "the cell raised"},
		{name: "read-secrets", q2: "import os, glob\nfound = [k for k, v in os.environ.items() if 'SECRET' in v or 'TOKEN' in k]\n" +
			"for p in glob.glob('%[3]s/**', recursive=True) + glob.glob('/tmp/**', recursive=True) + ['/proc/1/environ', '%[4]s']:\n" +
			"    try:\n        found.append(open(p).read(200))\n    except Exception:\n        pass\nprint('found', found)",
			q2Verdict: domain.VerdictMismatch, q3Verdict: domain.VerdictPass,
			check: func(t *testing.T, res domain.ExecutionResult, q2 *notebook.Cell) {
				text := outputsText(q2)
				if !strings.Contains(text, "found") {
					t.Fatalf("the probe did not run: %q", text)
				}
				for _, s := range []string{runnerSecret, otherJobSecret, "hostile_answer", `"answer_sha256"`} {
					if strings.Contains(text, s) {
						t.Errorf("the kernel read %q: %s", s, text)
					}
				}
			}},
		{name: "write-outside-workdir", q2: "import os\nopen('%[2]s/pwned', 'w').write('x')",
			q2Verdict: domain.VerdictError, q3Verdict: domain.VerdictPass, msg: "the cell raised"},
		{name: "kill-parent-and-group", q2: "import os, signal\nfor f in (lambda: os.kill(os.getppid(), signal.SIGKILL), lambda: os.kill(-1, signal.SIGKILL), lambda: os.killpg(0, signal.SIGKILL)):\n    try:\n        f()\n    except Exception as e:\n        print(type(e).__name__, flush=True)",
			q2Verdict: domain.VerdictError, q3Verdict: domain.VerdictNotRun, msg: "the kernel died while cell 3 ran"},
		{name: "os-exit", q2: "import os\nos._exit(3)",
			q2Verdict: domain.VerdictError, q3Verdict: domain.VerdictNotRun, msg: "the kernel died while cell 3 ran"},
		{name: "sys-exit", q2: "import sys\nsys.exit()",
			q2Verdict: domain.VerdictError, q3Verdict: domain.VerdictPass, msg: "SystemExit"},
		{name: "input", q2: "name = input('name? ')",
			q2Verdict: domain.VerdictError, q3Verdict: domain.VerdictPass, msg: "StdinNotImplementedError"},
	}
}

func TestMain(m *testing.M) {
	// A secret in the runner's own environment: no kernel may see it.
	os.Setenv(runnerSecretEnv, runnerSecret)
	code := m.Run()
	if testKZ != nil { // their directories stay unless they are closed
		testKZ.Close()
		testDZ.Close()
	}
	os.Exit(code)
}

// requireExecution skips where the sandbox or the driver's Python is
// missing (CI installs both); anything else failing is a test failure.
func requireExecution(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("executes notebooks")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed")
	}
	if err := (&execution.Executor{}).Check(context.Background()); err != nil {
		t.Skip(err)
	}
}

// TestHostileCorpus executes every hostile notebook through the real
// executor in the real sandbox and grades it with the real scorer.
func TestHostileCorpus(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	runHostileCorpus(t, "")
}

// TestHostileCorpusInEnvironment runs the corpus with the kernels in the
// cpu grading environment (its root filesystem as their system): every
// limit and isolation property holds there too.
func TestHostileCorpusInEnvironment(t *testing.T) {
	requireExecution(t)
	rootfs := filepath.Join(envtest.RequireCPU(t), "rootfs")
	t.Parallel()
	runHostileCorpus(t, rootfs)
}

func runHostileCorpus(t *testing.T, rootfs string) {
	cat, err := exercise.Load(hostileExercises, hostileAnswers)
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := cat.Get("hostile")
	ans, _ := filepath.Abs(filepath.Join(hostileAnswers, "hostile", "references", "cpu.json"))

	// A listener the network case must not reach.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var reached atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)

	// The runner's work root holds another job's submission.
	workRoot := shortTemp(t)
	other := filepath.Join(workRoot, "npugrade-job-other", "in")
	must(t, os.MkdirAll(other, 0o755))
	must(t, os.WriteFile(filepath.Join(other, "notebook.ipynb"), []byte(otherJobSecret), 0o644))
	forbidden := filepath.Join(shortTemp(t), "forbidden")
	must(t, os.MkdirAll(forbidden, 0o777))
	must(t, os.Chmod(forbidden, 0o777)) // writable by anyone: only the sandbox stops the write

	// Every case runs on the cold path (a driver started for the job) and
	// on the warm one (a driver and kernel pre-started, the job handed over).
	var cases []struct {
		hostileCase
		warm bool
	}
	for _, tc := range hostileCorpus() {
		for _, warm := range []bool{false, true} {
			cases = append(cases, struct {
				hostileCase
				warm bool
			}{tc, warm})
		}
	}
	// Four kernels at a time: all 34 at once on a 2-core CI machine turn
	// the 2 s timeout cases into a test of the scheduler.
	slots := make(chan struct{}, 4)
	// In the environment, warm kernels and drivers take the fork path
	// (forked from the zygotes) where it is supported (root).
	fork := rootfs != "" && os.Geteuid() == 0
	var forked atomic.Int64
	kz, dz := forkZygotes()
	k0, d0 := kz.Kernels(), dz.Drivers()
	for _, tc := range cases {
		name := "cold/" + tc.name
		if tc.warm {
			name = "warm/" + tc.name
			if fork {
				name = "fork/" + tc.name
			}
		}
		t.Run(name, func(t *testing.T) {
			// (On the fork path the pids and memory limits are tested by
			// internal/sandbox's TestForkMode.)
			if rootfs != "" && envTimingCases[tc.name] {
				// A kernel in the environment imports torch and Dynamo at
				// start (the npugraph_ex stand-in), seconds on a busy 2-core
				// machine: a whole-run limit, 64 forks or filling 1 GiB within a 2 s cell
				// limit then measure start-up, not the limit. Both limits are
				// tested in the host corpus, and the pids and memory limits in env mode by
				// the sandbox's own tests.
				t.Skip("timing-bound case, covered in host mode and by internal/sandbox env-mode tests")
			}
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			start := time.Now()
			src := tc.q2
			if strings.Contains(src, "%[") {
				src = fmt.Sprintf(src, port, forbidden, workRoot, ans)
			}
			opts := tc.opts
			switch {
			case opts.CellTimeout != 0:
			case tc.q2Verdict == domain.VerdictTimeout:
				opts.CellTimeout = 2 * time.Second
			default:
				// The cell limit is not under test: on a loaded 2-core
				// host a kernel's first traceback once took over 2 s.
				opts.CellTimeout = 30 * time.Second
			}
			var zs *zygotes
			if fork && tc.warm {
				zs = &zygotes{kz, dz}
				forked.Add(1)
			}
			out, res := gradeHostile(t, ex, src, workRoot, rootfs, opts, tc.output, tc.warm, zs)
			byID := map[string]domain.CellResult{}
			for _, c := range out.Cells {
				byID[c.CellID] = c
			}
			if v := byID["q1"].Verdict; v != domain.VerdictPass {
				t.Errorf("q1 (before the hostile cell): %s %q, want pass", v, byID["q1"].Message)
			}
			q2 := byID["q2"]
			if tc.q2Verdict != "" && q2.Verdict != tc.q2Verdict {
				t.Errorf("q2: verdict %s (%q), want %s", q2.Verdict, q2.Message, tc.q2Verdict)
			}
			if q2.Verdict == domain.VerdictPass && tc.q2Verdict != domain.VerdictPass {
				t.Errorf("q2 passed: %q", q2.Message)
			}
			want := strings.ReplaceAll(tc.msg, "256 MiB", sandbox.FormatSize(hostileMemoryLimit(rootfs)))
			if want != "" && !strings.Contains(q2.Message, want) {
				t.Errorf("q2 message %q lacks %q", q2.Message, want)
			}
			if v := byID["q3"].Verdict; !slices.Contains(strings.Split(tc.q3Verdict, "|"), v) {
				t.Errorf("q3 (after): %s %q, want %s", v, byID["q3"].Message, tc.q3Verdict)
			}
			if tc.q3Verdict == domain.VerdictNotRun && !strings.Contains(byID["q3"].Message, "not run") {
				t.Errorf("q3 message %q does not say it was not run", byID["q3"].Message)
			}
			if _, err := os.Stat(filepath.Join(forbidden, "pwned")); err == nil {
				t.Error("the kernel wrote outside its sandbox")
			}
			if tc.check != nil {
				nb, err := notebook.Parse(res.Notebook, notebook.Limits{MaxBytes: 64 << 20, MaxOutputs: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, res, cellByGrader(nb, "q2"))
			}
			t.Logf("%s: q2 %s %q; q3 %s; run %s; %s", tc.name, q2.Verdict, q2.Message, byID["q3"].Verdict, time.Since(start).Round(time.Millisecond), out.Message)
		})
	}
	t.Cleanup(func() {
		if n := forked.Load(); n > 0 && (kz.Kernels()-k0 < n || dz.Drivers()-d0 < n) {
			t.Errorf("%d cases on the fork path, but %d kernels and %d drivers forked: it fell back to exec", n, kz.Kernels()-k0, dz.Drivers()-d0)
		}
		if n := reached.Load(); n > 0 {
			t.Errorf("%d connections reached the loopback listener", n)
		}
		if entries, _ := os.ReadDir(workRoot); len(entries) != 1 {
			t.Errorf("job directories left in the work root: %v", entries)
		}
	})
}

// gradeHostile puts q2 into the starter, rebuilds, executes in the sandbox
// and scores, as the server does.
// zygotes are the fork path's servers, shared by the package's tests
// (they die with the test binary).
type zygotes struct {
	kernel *sandbox.Zygote
	driver *execution.DriverZygote
}

var (
	zygotesOnce sync.Once
	testKZ      *sandbox.Zygote
	testDZ      *execution.DriverZygote
)

func forkZygotes() (*sandbox.Zygote, *execution.DriverZygote) {
	zygotesOnce.Do(func() { testKZ, testDZ = &sandbox.Zygote{}, &execution.DriverZygote{} })
	return testKZ, testDZ
}

func gradeHostile(t *testing.T, ex *exercise.Exercise, q2, workRoot, rootfs string, opt execution.Options, lim execution.OutputLimits, warm bool, zs *zygotes) (scoring.Output, domain.ExecutionResult) {
	t.Helper()
	up := ex.StarterNB.Clone()
	for _, c := range up.Cells {
		switch c.MustGrader().ID {
		case "q1":
			c.Source = `print("before")`
		case "q2":
			c.Source = notebook.MultilineString(q2)
		case "q3":
			c.Source = `print("after")`
		}
	}
	cfg := sandbox.DefaultConfig()
	cfg.MemoryLimit = hostileMemoryLimit(rootfs)
	cfg.PidsLimit = 64
	cfg.DiskLimit = 64 << 20
	cfg.BaseDir = filepath.Join(shortTemp(t), "b")
	cfg.RootFS = rootfs
	e := &execution.Executor{Profile: "cpu", WorkRoot: workRoot, Isolation: &cfg, Output: lim, InterruptGrace: hostileGrace}
	if zs != nil {
		cfg.Zygote, e.DriverZygote = zs.kernel, zs.driver
	}
	if opt.JobTimeout == 0 {
		opt.JobTimeout = time.Minute
	}
	return executeAndScore(t, ex, up, e, opt, warm, zs)
}

// executeAndScore rebuilds the upload up from ex's answer, executes it
// with e (warm: on a pre-started driver; zs: forked from the zygotes) and
// scores it, as the server does.
func executeAndScore(t *testing.T, ex *exercise.Exercise, up *notebook.Notebook, e *execution.Executor, opt execution.Options, warm bool, zs *zygotes) (scoring.Output, domain.ExecutionResult) {
	t.Helper()
	rebuilt, integ, err := notebook.Rebuild(ex.Answer, up)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := notebook.Encode(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	var res domain.ExecutionResult
	if warm {
		// No preload (the hostile corpus's 256 MiB would not hold torch).
		w, perr := e.Prestart(context.Background(), nil, nil)
		if perr != nil {
			t.Fatalf("prestart: %v", perr)
		}
		res, err = w.Execute(context.Background(), payload, opt)
	} else {
		res, err = e.Execute(context.Background(), payload, opt)
	}
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, res.Log)
	}
	var executed *notebook.Notebook
	if res.Notebook != nil {
		if executed, err = notebook.Parse(res.Notebook, notebook.Limits{MaxBytes: 64 << 20, MaxOutputs: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := ex.Reference("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return scoring.Score(scoring.Input{Exercise: ex, Reference: ref, Integrity: integ, Executed: executed, Result: res}), res
}

func cellByGrader(nb *notebook.Notebook, id string) *notebook.Cell {
	for _, c := range nb.Cells {
		if c.MustGrader().ID == id {
			return c
		}
	}
	return nil
}

func outputsText(c *notebook.Cell) string {
	var b strings.Builder
	for _, o := range c.Outputs {
		b.WriteString(string(o.Text))
		b.WriteString(o.Evalue)
		for _, v := range o.Data {
			b.WriteString(string(v))
		}
	}
	return b.String()
}

func hasMarker(c *notebook.Cell) bool {
	return strings.Contains(outputsText(c), "[npugrade: output truncated")
}

// shortTemp is a short 0711 temp dir: the sandbox's socket paths must stay
// under 108 bytes, and the unprivileged bwrap must traverse it.
func shortTemp(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "npx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	must(t, os.Chmod(d, 0o711))
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hostileGrace is how long the corpora give an interrupted cell to stop.
// 2 s was missed under a loaded CI host: interrupt-lost-once's handler
// had not seen both interrupts by then, and its kernel was stopped.
const hostileGrace = 5 * time.Second
