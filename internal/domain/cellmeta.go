package domain

// CellMeta is what the executor notes about a cell for the grader
// (metadata.npugrade). The driver writes the fields it observes; Execute
// adds what only the runner knows (the sandbox's limit counters, the
// whole-run deadline).
type CellMeta struct {
	Skipped  string  `json:"skipped,omitempty"`   // why the cell was not run here
	TimedOut bool    `json:"timed_out,omitempty"` // the cell hit its timeout and was interrupted
	Timeout  float64 `json:"timeout,omitempty"`
	// InterruptIgnored: the cell was still running InterruptGrace after
	// its timeout interrupt, so the kernel was killed.
	InterruptIgnored bool `json:"interrupt_ignored,omitempty"`
	// KernelDied: the kernel died while this cell ran.
	KernelDied bool `json:"kernel_died,omitempty"`
	// KernelGone: the kernel had died before this cell could run.
	KernelGone bool `json:"kernel_gone,omitempty"`
	// MemoryLimit is the limit in bytes when the kernel was killed for
	// exceeding it while this cell ran.
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	// PidsLimit is the process/thread limit when it refused a fork during the run.
	PidsLimit int `json:"pids_limit,omitempty"`
	// JobTimeout is the whole run's limit in seconds when the run was
	// killed at it while this cell ran.
	JobTimeout float64 `json:"job_timeout,omitempty"`
	// Truncated is "cell" or "notebook" when outputs were cut at a limit.
	Truncated string `json:"truncated,omitempty"`
	// Stopped is the human-readable reason the run stopped at this cell.
	Stopped string `json:"stopped,omitempty"`
	// Reply is the status of the kernel's execute_reply ("error" when the
	// cell raised, whatever its outputs show), with the exception's name
	// and value.
	Reply  string `json:"reply,omitempty"`
	Ename  string `json:"ename,omitempty"`
	Evalue string `json:"evalue,omitempty"`
	// Tampered says why the driver's kernel guard could not vouch for a
	// test cell: the notebook changed how the kernel runs or checks code.
	Tampered string `json:"tampered,omitempty"`
}

// Raised reports whether the kernel said the cell raised (an "error" or
// "aborted" execute_reply), whatever its outputs show.
func (m CellMeta) Raised() bool { return m.Reply == "error" || m.Reply == "aborted" }
