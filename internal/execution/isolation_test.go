package execution_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// TestIsolationBackends: the executor runs a notebook under whichever
// backend it is given — the sandbox's, or the unisolated "none" (the
// host's python3 kernel, which sees the allow-listed environment and not
// the runner's) — and refuses to run without one.
func TestIsolationBackends(t *testing.T) {
	requireExecution(t)
	t.Setenv("NPUGRADE_RUNNER_TOKEN", "secret-of-the-runner")
	nb := codeNotebook(t, "import os; print(os.environ.get('NPUGRADE_PROFILE'), os.environ.get('NPUGRADE_RUNNER_TOKEN'))")
	opt := execution.Options{CellTimeout: 30 * time.Second}
	for name, e := range map[string]*execution.Executor{
		"sandbox": sandboxedExecutor(t),
		"none":    {Profile: "cpu", WorkRoot: shortTemp(t), Isolation: sandbox.None{}},
	} {
		res, err := e.Execute(context.Background(), nb, opt)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, res.Log)
		}
		if got := cellTexts(t, res.Notebook); len(got) != 1 || got[0] != "cpu None" {
			t.Errorf("%s: outputs %q", name, got)
		}
		if entries, _ := os.ReadDir(e.WorkRoot); len(entries) != 0 {
			t.Errorf("%s: left behind %v", name, entries)
		}
	}
	e := &execution.Executor{Profile: "cpu", WorkRoot: shortTemp(t)}
	if _, err := e.Execute(context.Background(), nb, opt); err == nil || !strings.Contains(err.Error(), "isolation") {
		t.Errorf("no backend: %v", err)
	}
	if entries, _ := os.ReadDir(e.WorkRoot); len(entries) != 0 {
		t.Errorf("no backend: left behind %v", entries)
	}
}
