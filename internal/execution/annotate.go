package execution

import (
	"fmt"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/notebook"
)

// Stop is how a run ended, as its backend saw it.
type Stop struct {
	// JobKilled: the whole-run deadline (JobTimeout) killed the run.
	JobKilled  bool
	JobTimeout time.Duration
	// Cell is the 0-based notebook position of the cell the driver last
	// started (nil when none ran); KernelDied says the kernel died.
	Cell       *int
	KernelDied bool
	// Limits are the isolation's counters (memory and process limits hit).
	Limits domain.LimitHits
}

// stopReason is the run-level message for a run that stopped early;
// cell is the 1-based notebook position of the cell that was running, or -1.
func stopReason(jobKilled bool, jobTimeout time.Duration, st domain.LimitHits, cell int) string {
	where := ""
	if cell > 0 {
		where = fmt.Sprintf("cell %d ", cell)
	}
	switch {
	case jobKilled:
		if cell > 0 {
			return fmt.Sprintf("the notebook did not finish within the %s limit for the whole run (cell %d was running); the cells after it were not run", jobTimeout, cell)
		}
		return fmt.Sprintf("the notebook did not finish within the %s limit for the whole run", jobTimeout)
	case st.MemoryLimitHit:
		return fmt.Sprintf("%sexceeded the %s memory limit; the kernel was stopped and the cells after it were not run", nonEmpty(where, "the notebook "), domain.FormatSize(st.MemoryLimit))
	default:
		return fmt.Sprintf("the kernel died while %s ran; the cells after it were not run", nonEmpty(strings.TrimSpace(where), "the notebook"))
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Annotate notes on the cell where a run stopped why it stopped (what only
// the runner knows: the isolation's counters, the whole-run deadline) and
// returns the run-level verdict: whether the run was cut short, and why.
// It is a pure function of the executed notebook and how the run ended, so
// that every backend (this host's nbconvert driver, or another) reports
// stops the same way and the grader reads them the same way.
func Annotate(executed []byte, stop Stop) (annotated []byte, killed bool, reason string, err error) {
	prog, jobKilled, jobTimeout, st := progress{Cell: stop.Cell, KernelDied: stop.KernelDied}, stop.JobKilled, stop.JobTimeout, stop.Limits
	nb, err := notebook.Parse(executed, notebook.Limits{MaxBytes: int64(len(executed)) + 1, MaxOutputs: 1 << 20})
	if err != nil {
		return nil, false, "", fmt.Errorf("parse executed notebook: %w", err)
	}
	stopAt := -1
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		m := notebook.ReadCellMeta(c)
		if m.KernelDied || m.InterruptIgnored {
			stopAt = i
			break
		}
	}
	if stopAt < 0 && (jobKilled || prog.KernelDied) && prog.Cell != nil && *prog.Cell < len(nb.Cells) {
		stopAt = *prog.Cell
	}
	if st.PidsLimitHit {
		// Which cell forked too much is not known; its error output says
		// it. Note the limit on every cell that raised.
		for _, c := range nb.Cells {
			for _, o := range c.Outputs {
				if o.OutputType == notebook.OutputError {
					m := notebook.ReadCellMeta(c)
					m.PidsLimit = st.PidsLimit
					notebook.WriteCellMeta(c, m)
					break
				}
			}
		}
	}
	if stopAt >= 0 {
		c := nb.Cells[stopAt]
		m := notebook.ReadCellMeta(c)
		switch {
		case jobKilled:
			m.JobTimeout = jobTimeout.Seconds()
			reason = stopReason(true, jobTimeout, st, stopAt+1)
		case m.InterruptIgnored:
			reason = fmt.Sprintf("cell %d did not stop when interrupted at its %gs time limit; the kernel was stopped and the cells after it were not run", stopAt+1, m.Timeout)
		default:
			m.KernelDied = true
			if st.MemoryLimitHit {
				m.MemoryLimit = st.MemoryLimit
			}
			reason = stopReason(false, jobTimeout, st, stopAt+1)
		}
		m.Stopped = reason
		notebook.WriteCellMeta(c, m)
		killed = true
	} else if jobKilled || prog.KernelDied {
		killed, reason = true, stopReason(jobKilled, jobTimeout, st, -1)
	}
	b, err := notebook.Encode(nb)
	if err != nil {
		return nil, false, "", err
	}
	return b, killed, reason, nil
}
