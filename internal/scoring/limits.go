package scoring

import (
	"fmt"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/sandbox"
)

// limitVerdict grades a cell the runner stopped or cut short: the kernel
// died in it (memory-limit or error), it ignored its timeout interrupt or
// the whole run's deadline passed while it ran (timeout), a cell after the
// kernel was gone (not-run), or its outputs were truncated at a limit
// (incomplete-output). ok is false for a cell that ran normally; it is
// then graded on its outputs. pos is the cell's 1-based notebook position.
func limitVerdict(meta domain.CellMeta, ec *notebook.Cell, pos int) (verdict, msg string, ok bool) {
	switch {
	case meta.JobTimeout > 0:
		return domain.VerdictTimeout, fmt.Sprintf("cell %d was still running when the whole notebook hit its %gs limit; it was stopped", pos, meta.JobTimeout), true
	case meta.InterruptIgnored:
		return domain.VerdictTimeout, fmt.Sprintf("cell %d did not finish within its %gs time limit and did not stop when interrupted, so the kernel was stopped", pos, meta.Timeout), true
	case meta.MemoryLimit > 0:
		return domain.VerdictMemoryLimit, fmt.Sprintf("cell %d exceeded the %s memory limit; the kernel was stopped", pos, sandbox.FormatSize(meta.MemoryLimit)), true
	case meta.KernelDied:
		return domain.VerdictError, fmt.Sprintf("the kernel died while cell %d ran (os._exit(), a signal, or a crash); the cells after it were not run", pos), true
	case meta.KernelGone:
		return domain.VerdictNotRun, "the cell was not run: the kernel had already stopped", true
	case meta.TimedOut:
		return domain.VerdictTimeout, fmt.Sprintf("the cell did not finish within its %gs time limit and was interrupted", meta.Timeout), true
	case meta.PidsLimit > 0:
		return domain.VerdictError, fmt.Sprintf("cell %d raised an error after the notebook hit the limit of %d processes/threads", pos, meta.PidsLimit), true
	case meta.Truncated == "cell":
		return domain.VerdictIncompleteOutput, "the cell's output exceeded the per-cell output limit and was truncated", true
	case meta.Truncated == "notebook":
		return domain.VerdictIncompleteOutput, "the notebook's output exceeded the limit for the whole notebook; this cell's output was truncated", true
	}
	return "", "", false
}

// cellPosition is c's 1-based position in nb, or 0.
func cellPosition(nb *notebook.Notebook, c *notebook.Cell) int {
	if nb == nil {
		return 0
	}
	for i, x := range nb.Cells {
		if x == c {
			return i + 1
		}
	}
	return 0
}
