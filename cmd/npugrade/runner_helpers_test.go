package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
	"github.com/npugrade/npugrade/internal/store"
)

// The runner tests' own small exercises (testdata/runners/README.md).
var (
	runnerExercises = filepath.Join("testdata", "runners", "exercises")
	runnerAnswers   = filepath.Join("testdata", "runners", "answers")
)

// runnerServer starts `npugrade serve` with no in-process runner on the
// runner tests' exercises.
func runnerServer(t *testing.T, dbURL string, extra ...string) *server {
	t.Helper()
	args := append([]string{"--local-runner", "0", "--exercises", runnerExercises, "--answers", runnerAnswers}, extra...)
	return startServer(t, dbURL, args...)
}

// buildBinary builds npugrade into a temporary directory, so that runners
// run as real processes that a test can SIGKILL.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "npugrade")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer collects a process's output for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runnerProc is one `npugrade runner` process.
type runnerProc struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

func startRunnerProc(t *testing.T, bin, url, token, name string, extra ...string) *runnerProc {
	t.Helper()
	args := append([]string{"runner", "--server", url, "--token", token, "--name", name, "--log-level", "info"}, extra...)
	p := &runnerProc{name: name, cmd: exec.Command(bin, args...), log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start runner %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		// Its kernels die with it (Pdeathsig); give them a moment.
		time.Sleep(200 * time.Millisecond)
		// What the next runner's start would remove: a test's last
		// runners have no next one.
		if _, err := sandbox.Sweep(sandbox.DefaultConfig()); err != nil {
			t.Logf("sweep the sandboxes of dead runners: %v", err)
		}
		if _, err := execution.SweepJobDirs(""); err != nil {
			t.Logf("sweep the job directories of dead runners: %v", err)
		}
	})
	return p
}

// jobDirsOf is the glob pattern of the job directories of runner p (their
// names carry its pid, start time and host key), once it has at least one.
func jobDirsOf(t *testing.T, p *runnerProc) string {
	t.Helper()
	var m []string
	waitFor(t, 30*time.Second, "a job directory of "+p.name, func() bool {
		m, _ = filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("npugrade-job-%d.*", p.cmd.Process.Pid)))
		return len(m) > 0
	})
	tag, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(m[0]), "npugrade-job-"), "-")
	return filepath.Join(os.TempDir(), "npugrade-job-"+tag+"-*")
}

// wait waits for the process to exit and returns its exit code (-1 on a signal).
func (p *runnerProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("runner %s did not exit within %s; log:\n%s", p.name, d, p.log.String())
	}
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// openDB opens the test database directly, to check the jobs table.
func openDB(t *testing.T, dbURL string) *store.DB {
	t.Helper()
	db, err := store.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// jobRow is what the tests read of the jobs table.
type jobRow struct {
	ID           int64
	SubmissionID *string
	Kind         string
	State        string
	Attempt      int
	MaxAttempts  int
	LeaseToken   string
	RunnerID     string
	LastError    string
}

func jobRows(t *testing.T, db *store.DB) []jobRow {
	t.Helper()
	var rows []jobRow
	if err := db.RawScan(context.Background(), &rows, "SELECT id, submission_id, kind, state, attempt, max_attempts, lease_token, runner_id, last_error FROM jobs ORDER BY id"); err != nil {
		t.Fatal(err)
	}
	return rows
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", d, what)
}

// answerWith is the rx answer notebook with the solution cell replaced.
func answerWith(t *testing.T, solution string) []byte {
	t.Helper()
	var nb map[string]any
	if err := json.Unmarshal(readFile(t, filepath.Join(runnerAnswers, "rx", "answer.ipynb")), &nb); err != nil {
		t.Fatal(err)
	}
	for _, c := range nb["cells"].([]any) {
		cell := c.(map[string]any)
		if cell["id"] == "q1-impl" {
			cell["source"] = solution
		}
	}
	b, _ := json.Marshal(nb)
	return b
}

// slowAnswer is a correct answer whose solution cell sleeps first.
func slowAnswer(t *testing.T, seconds int) []byte {
	return answerWith(t, fmt.Sprintf("import time\ntime.sleep(%d)\ndef double(x):\n    return 2 * x\n", seconds))
}

// a2Report is the environment report of an Atlas A2 host, built from the
// recorded npu-smi table and toolkit install info of one A2 host (envprobe
// testdata/recordings) and the torch_npu release the version table pairs
// with its CANN 8.5.0.
func a2Report(t *testing.T) envprobe.Report {
	t.Helper()
	rec := filepath.Join("..", "..", "internal", "envprobe", "testdata", "recordings")
	smi, err := envprobe.ParseNPUSMI(string(readFile(t, filepath.Join(rec, "npu-smi-info.a2-910b3-8npu.txt"))))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := envprobe.ParseToolkitInstallInfo(string(readFile(t, filepath.Join(rec, "ascend_toolkit_install.cann-8.5.0.info"))))
	if err != nil {
		t.Fatal(err)
	}
	r := envprobe.Validate(envprobe.Report{
		Arch: tk.Arch, Python: "3.11.6", Torch: "2.9.0+cpu", TorchNPU: "2.9.0", CANN: tk.Version,
		DeviceName: "Ascend" + smi.Chips[0].Name, DeviceCount: len(smi.Chips), Driver: smi.Driver, NPUGraphExBackend: true,
	})
	if r.Profile != envprobe.ProfileNPUA2 || r.Verdict == envprobe.VerdictUnsupported {
		t.Fatalf("recorded A2 data gives profile %q verdict %q: %v", r.Profile, r.Verdict, r.Warnings)
	}
	return r
}

// cpuReport is a plain CPU runner's report.
func cpuReport() envprobe.Report {
	return envprobe.Validate(envprobe.Report{Arch: "x86_64", Python: "3.11.2", Torch: "1.13.1"})
}

// postJSON sends v as JSON and decodes a JSON reply into out (when not nil).
func postJSON(t *testing.T, url, token string, v, out any) int {
	t.Helper()
	b, _ := json.Marshal(v)
	resp, body := request(t, "POST", url, token, bytes.NewReader(b), "application/json", nil)
	if out != nil && len(body) > 0 && resp.StatusCode < 300 {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("decode %s: %v: %s", url, err, body)
		}
	}
	return resp.StatusCode
}

func getJSON(t *testing.T, url, token string, out any) {
	t.Helper()
	resp, body := request(t, "GET", url, token, nil, "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("decode %s: %v: %s", url, err, body)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
