package execution_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/notebook"
)

// TestLateInterruptStaysInItsCell: a timed-out cell's interrupts are
// handled by the kernel's control thread, which a loaded host can starve
// until after the cell ended. Such an interrupt, sent again by the
// driver during the grace, used to land in the next cell (CI saw q3 get
// the busy loop's KeyboardInterrupt). The starved thread is simulated by
// delaying its interrupt handler; the next cell must run untouched.
func TestLateInterruptStaysInItsCell(t *testing.T) {
	requireExecution(t)
	t.Parallel()
	e := sandboxedExecutor(t)
	nb := codeNotebook(t,
		"import time\n"+
			"k = get_ipython().kernel\n"+
			"handle = k.control_handlers['interrupt_request']\n"+
			"def starved(*a, **kw):\n"+
			"    time.sleep(1.5)\n"+
			"    return handle(*a, **kw)\n"+
			"k.control_handlers['interrupt_request'] = starved\n"+
			"while True:\n"+
			"    pass",
		"import time\ntime.sleep(2)\nprint('next cell ran')",
	)
	opt := execution.Options{CellTimeout: 3 * time.Second, JobTimeout: 2 * time.Minute}
	res, err := e.Execute(context.Background(), nb, opt)
	if err != nil {
		t.Fatalf("execute: %v\n%s", err, res.Log)
	}
	nbk, err := notebook.Parse(res.Notebook, notebook.Limits{MaxBytes: 64 << 20, MaxOutputs: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range nbk.Cells {
		s := outputsText(c)
		for _, o := range c.Outputs {
			s += o.Ename
		}
		texts = append(texts, strings.TrimSpace(s))
	}
	if len(texts) != 2 {
		t.Fatalf("cells: %q", texts)
	}
	if !strings.Contains(texts[0], "KeyboardInterrupt") {
		t.Errorf("the busy cell was not interrupted: %q", texts[0])
	}
	if texts[1] != "next cell ran" {
		t.Errorf("next cell: %q, want it to run untouched", texts[1])
	}
}
