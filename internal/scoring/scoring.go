// Package scoring turns an executed notebook into per-cell verdicts and a
// score: integrity findings first (tampered, missing), then what the
// runner could not run, then timeouts and errors, and only then the
// comparison of outputs with the reference. Verdicts are learner results;
// nothing here retries.
package scoring

import (
	"fmt"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
)

// Version identifies the grading rules; scores record it so that a change
// in the rules can be told from a change in the learner's work.
const Version = "npugrade-scoring/1"

// GraderVersion is what a score records as its grader version: the
// scoring rules and the exercise version they were applied to.
func GraderVersion(ex *exercise.Exercise) string { return Version + "+" + ex.Version }

// Input is everything one grading needs.
type Input struct {
	Exercise  *exercise.Exercise
	Reference *exercise.Reference
	Integrity notebook.Integrity
	// Executed is the runner's notebook; nil when the run produced none.
	Executed *notebook.Notebook
	Result   domain.ExecutionResult
	// SubmittedAt decides the late penalty; zero means on time.
	SubmittedAt time.Time
	// Extension is the learner's own deadline for the exercise; nil: none.
	Extension *exercise.Extension
}

// Output is the graded result.
type Output struct {
	Cells    []domain.CellResult
	Score    float64
	MaxScore float64
	Message  string
	// Multiplier is the late-penalty factor applied to Score (1 on time).
	Multiplier float64
}

// Score grades every graded cell of the exercise, in answer order.
func Score(in Input) Output {
	var out Output
	defaults := in.Exercise.Answer.NotebookDefaults()
	executed := map[string]*notebook.Cell{}
	if in.Executed != nil {
		for _, c := range in.Executed.Cells {
			if id := c.MustGrader().ID; id != "" {
				executed[id] = c
			}
		}
	}
	for _, gc := range in.Exercise.Graded {
		answerCell := in.Exercise.Answer.CellByGraderID(gc.ID)
		cr := domain.CellResult{CellID: gc.ID, MaxPoints: gc.Points, Counted: true}
		rule, ruleErr := compare.ParseRule(defaults, answerCell.MustGrader().Raw)
		ec := executed[gc.ID]
		var meta domain.CellMeta
		if ec != nil {
			meta = notebook.ReadCellMeta(ec)
		}
		switch {
		case meta.Skipped != "":
			cr.Verdict, cr.Counted = domain.VerdictNotRun, false
			cr.Message = "not run on this runner: " + meta.Skipped + "; not counted"
		case gc.Probe:
			if ruleErr != nil {
				cr.Verdict = domain.VerdictError
				cr.Message = "the exercise's grading rule for this hidden test is invalid; please tell your instructor"
				break
			}
			probeCell(&cr, gc, rule, in, ec)
		case in.Integrity.Verdicts[gc.ID] != "":
			cr.Verdict = in.Integrity.Verdicts[gc.ID]
			cr.Message = in.Integrity.Messages[gc.ID]
		case ruleErr != nil:
			// The exercise itself is broken; say so rather than blame the learner.
			cr.Verdict = domain.VerdictError
			cr.Message = "the exercise's grading rule for this cell is invalid; please tell your instructor"
		case in.Executed == nil && in.Result.Killed:
			cr.Verdict = domain.VerdictTimeout
			if in.Result.MemoryLimitHit {
				cr.Verdict = domain.VerdictMemoryLimit
			}
			cr.Message = in.Result.Reason
		case ec == nil:
			cr.Verdict = domain.VerdictNotRun
			cr.Message = "the cell was not found in the executed notebook"
		case meta.Stopped != "" || meta.TimedOut || meta.KernelGone || meta.Truncated != "" || meta.PidsLimit > 0:
			cr.Verdict, cr.Message, _ = limitVerdict(meta, ec, cellPosition(in.Executed, ec))
		case ec.ExecutionCount == nil && len(ec.Outputs) == 0:
			cr.Verdict = domain.VerdictNotRun
			cr.Message = "the cell was not run"
			if in.Result.Reason != "" {
				cr.Message += ": " + in.Result.Reason
			}
		default:
			compareCell(&cr, rule, in.Reference, ec, meta, answerCell.MustGrader().Feedback)
		}
		if cr.Verdict == domain.VerdictPass {
			cr.Points = gc.Points
		}
		out.Cells = append(out.Cells, cr)
	}
	applyProbes(in.Exercise, out.Cells)
	applyGroups(in.Exercise, out.Cells)
	auto := len(out.Cells)
	// Manual cells count in the maximum and wait for a person (package
	// grade applies their grades).
	for _, m := range in.Exercise.Manual {
		out.Cells = append(out.Cells, domain.CellResult{CellID: m.ID, Verdict: domain.VerdictNeedsManual, MaxPoints: m.Points,
			Counted: true, Message: ManualPending})
	}
	for _, cr := range out.Cells {
		if cr.Counted {
			out.MaxScore += cr.MaxPoints
		}
	}
	out.Score = Points(out.Cells)
	out.Multiplier = 1
	if !in.SubmittedAt.IsZero() {
		out.Multiplier = in.Exercise.Policy.Extended(in.Extension).LateMultiplier(in.SubmittedAt)
	}
	switch {
	case in.Result.Killed:
		out.Message = in.Result.Reason
	default:
		out.Message = Summary(out.Cells[:auto])
	}
	if out.Multiplier != 1 {
		out.Score *= out.Multiplier
	}
	out.Message = LateNote(out.Message, out.Multiplier)
	return out
}

// Points is the sum of the counted cells' points: the one place a score
// is added up (before the late multiplier).
func Points(cells []domain.CellResult) float64 {
	var p float64
	for _, c := range cells {
		if c.Counted {
			p += c.Points
		}
	}
	return p
}

// Status is a scored submission's status: it waits for a person while any
// manual cell is ungraded. The store writes it; it does not decide it.
func Status(cells []domain.CellResult) string {
	for _, c := range cells {
		if c.Verdict == domain.VerdictNeedsManual {
			return domain.StatusNeedsManual
		}
	}
	return domain.StatusGraded
}

// Total is a submission's score (once its cells are known, after a manual
// grade, an override or an extension) and message from its cells: the counted
// points times the late multiplier (the exercise's policy with the
// learner's extension, as scoring applies it). A killed run keeps its
// reason as the message.
func Total(cells []domain.CellResult, multiplier float64, killedReason string) (float64, string) {
	var auto []domain.CellResult
	waiting := 0
	for _, c := range cells {
		switch c.Verdict {
		case domain.VerdictNeedsManual:
			waiting++
		case domain.VerdictManual:
		default:
			auto = append(auto, c)
		}
	}
	msg := killedReason
	if msg == "" {
		msg = Summary(auto)
	}
	if waiting > 0 {
		if waiting == 1 {
			msg += "; 1 question waits for manual grading"
		} else {
			msg += fmt.Sprintf("; %d questions wait for manual grading", waiting)
		}
	}
	return Points(cells) * multiplier, LateNote(msg, multiplier)
}

const lateNote = "; submitted after the deadline: score multiplied by "

// LateNote is message with the late-penalty note for multiplier m (none
// when m is 1) in place of any earlier one: rescoring after an extension
// changes the note with the score.
func LateNote(message string, m float64) string {
	if i := strings.Index(message, lateNote); i >= 0 {
		message = message[:i]
	}
	if m != 1 {
		message += lateNote + fmt.Sprintf("%g", m)
	}
	return message
}

// ManualPending is the message of a manual cell no person has graded yet.
const ManualPending = "this question is graded by an instructor"

// Summary is the message of the automatically graded cells.
func Summary(cells []domain.CellResult) string {
	passed, all := 0, true
	for _, c := range cells {
		if c.Verdict == domain.VerdictPass {
			passed++
		}
		all = all && (c.Points == c.MaxPoints || !c.Counted)
	}
	if all {
		return "all graded cells pass"
	}
	return fmt.Sprintf("%d of %d graded cells pass", passed, len(cells))
}

// probeCell grades a hidden test. Its feedback never carries the observed
// or expected output, the probe's inputs or the exception's value: the
// learner's code runs inside the probe and could echo them.
func probeCell(cr *domain.CellResult, gc exercise.GradedCell, rule compare.Rule, in Input, ec *notebook.Cell) {
	switch {
	case in.Executed == nil && in.Result.Killed:
		cr.Verdict = domain.VerdictTimeout
		if in.Result.MemoryLimitHit {
			cr.Verdict = domain.VerdictMemoryLimit
		}
		cr.Message = "a hidden test of " + gc.For + " did not run: " + in.Result.Reason
		return
	case ec == nil:
		cr.Verdict, cr.Message = domain.VerdictNotRun, "a hidden test of "+gc.For+" was not run"
		return
	}
	meta := notebook.ReadCellMeta(ec)
	if meta.TimedOut {
		cr.Verdict, cr.Message = domain.VerdictTimeout, "a hidden test of "+gc.For+" did not finish in time"
		return
	}
	if ec.ExecutionCount == nil && len(ec.Outputs) == 0 {
		cr.Verdict, cr.Message = domain.VerdictNotRun, "a hidden test of "+gc.For+" was not run"
		return
	}
	seed, ok := in.Executed.ProbeSeed()
	expected, found := in.Reference.ProbeOutputs(seed, gc.ID)
	if !ok || !found {
		// Not the learner's fault: the exercise lacks reference outputs for this seed.
		cr.Verdict = domain.VerdictError
		cr.Message = "the hidden test of " + gc.For + " has no reference outputs for this run; please tell your instructor"
		return
	}
	if v, _, ok := kernelVerdict(meta, rule); ok {
		cr.Verdict, cr.Message = v, "a hidden test of "+gc.For+" raised an exception"
		if meta.Tampered != "" {
			cr.Message = "a hidden test of " + gc.For + " cannot be trusted: " + meta.Tampered
		}
		return
	}
	if rule.Compare != "error" && rule.Compare != "no-error" && compare.FirstError(ec.Outputs) != nil {
		cr.Verdict, cr.Message = domain.VerdictError, "a hidden test of "+gc.For+" raised an exception"
		return
	}
	if compare.Outputs(rule, expected, ec.Outputs).Pass {
		cr.Verdict, cr.Message = domain.VerdictPass, "hidden test passes"
		return
	}
	cr.Verdict, cr.Message = domain.VerdictMismatch, "a hidden test of "+gc.For+" gave a different result than the reference answer"
}

// applyProbes scales the points of each probed question by the share of its
// hidden tests that pass: a cell that passes only for the visible inputs
// (hard-coded or printed) earns nothing.
func applyProbes(ex *exercise.Exercise, cells []domain.CellResult) {
	total, passed := map[string]int{}, map[string]int{}
	for i, gc := range ex.Graded {
		if !gc.Probe || !cells[i].Counted {
			continue
		}
		total[gc.For]++
		if cells[i].Verdict == domain.VerdictPass {
			passed[gc.For]++
		}
	}
	for i := range cells {
		cr := &cells[i]
		n := total[cr.CellID]
		if n == 0 || cr.Points == 0 {
			continue
		}
		if passed[cr.CellID] < n {
			cr.Points = cr.MaxPoints * float64(passed[cr.CellID]) / float64(n)
			cr.Message += fmt.Sprintf("; %d of %d hidden tests of this question pass, so it earns %g of %g points", passed[cr.CellID], n, cr.Points, cr.MaxPoints)
		}
	}
}

// applyGroups zeroes every cell of an all-or-nothing group in which a
// counted cell earned less than its maximum.
func applyGroups(ex *exercise.Exercise, cells []domain.CellResult) {
	failed := map[string]bool{}
	for i, gc := range ex.Graded {
		if gc.Group != "" && cells[i].Counted && cells[i].Points < cells[i].MaxPoints {
			failed[gc.Group] = true
		}
	}
	for i, gc := range ex.Graded {
		if failed[gc.Group] && cells[i].Points > 0 {
			cells[i].Points = 0
			cells[i].Message += "; all-or-nothing group " + gc.Group + " is not complete, so this cell earns no points"
		}
	}
}

// compareCell grades an executed cell against the reference; feedback (a
// quiz item's explanation) follows the message, and is redacted with the
// other details until the learner may see them.
func compareCell(cr *domain.CellResult, rule compare.Rule, ref *exercise.Reference, ec *notebook.Cell, meta domain.CellMeta, feedback string) {
	if feedback != "" {
		defer func() { cr.Message += "\n" + feedback }()
	}
	if v, msg, ok := kernelVerdict(meta, rule); ok {
		cr.Verdict, cr.Message = v, msg
		return
	}
	actual := ec.Outputs
	if rule.Compare != "error" && rule.Compare != "no-error" {
		if e := compare.FirstError(actual); e != nil {
			cr.Verdict = domain.VerdictError
			cr.Message = "the cell raised " + e.Ename
			if v := firstLine(e.Evalue); v != "" {
				cr.Message += ": " + v
			}
			return
		}
	}
	var expected []*notebook.Output
	if ref != nil {
		expected = ref.Cells[cr.CellID]
	}
	r := compare.Outputs(rule, expected, actual)
	if r.Pass {
		cr.Verdict = domain.VerdictPass
		cr.Message = "output matches"
	} else {
		cr.Verdict = domain.VerdictMismatch
		cr.Message = r.Message
	}
	cr.Observed, cr.Expected, cr.Diff = r.Observed, r.Expected, r.Diff
}

// kernelVerdict is the verdict the kernel's own report decides, whatever
// the cell's outputs show (a notebook can hide a traceback, print a fake
// one or patch what a test calls): a test cell the driver's guard could
// not vouch for fails, and a cell whose execute_reply is an error fails
// unless the rule expects one; a cell that must raise and did not is a
// mismatch. ok false: the outputs decide. Notebooks executed before the
// driver reported replies have none, and their outputs decide.
func kernelVerdict(meta domain.CellMeta, rule compare.Rule) (verdict, msg string, ok bool) {
	mode := rule.Mode()
	switch {
	case mode == compare.ModeIgnore || mode == compare.ModeSkip:
		return "", "", false
	case meta.Tampered != "":
		return domain.VerdictError, "this test cannot be trusted: " + meta.Tampered, true
	case mode == compare.ModeError:
		if meta.Reply == "ok" {
			return domain.VerdictMismatch, "expected an exception, but the cell raised none", true
		}
		return "", "", false
	case meta.Raised():
		msg = "the cell raised " + meta.Ename
		if meta.Ename == "" {
			msg = "the cell raised an exception"
		}
		if v := firstLine(meta.Evalue); v != "" {
			msg += ": " + v
		}
		if mode == compare.ModeNoError {
			// As the comparison judges a no-error cell that raised.
			return domain.VerdictMismatch, msg, true
		}
		return domain.VerdictError, msg, true
	}
	return "", "", false
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
