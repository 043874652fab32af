// Package scoring turns an executed notebook into per-cell verdicts and a
// score: integrity findings first (tampered, missing), then what the
// runner could not run, then timeouts and errors, and only then the
// comparison of outputs with the reference. Verdicts are learner results;
// nothing here retries.
package scoring

import (
	"fmt"
	"strings"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/grading"
	"github.com/npugrade/npugrade/internal/notebook"
)

// Version identifies the grading rules; scores record it so that a change
// in the rules can be told from a change in the learner's work.
const Version = "npugrade-scoring/1"

// Input is everything one grading needs.
type Input struct {
	Exercise  *exercise.Exercise
	Reference *exercise.Reference
	Integrity notebook.Integrity
	// Executed is the runner's notebook; nil when the run produced none.
	Executed *notebook.Notebook
	Result   grading.ExecutionResult
}

// Output is the graded result.
type Output struct {
	Cells    []grading.CellResult
	Score    float64
	MaxScore float64
	Message  string
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
		cr := grading.CellResult{CellID: gc.ID, MaxPoints: gc.Points, Counted: true}
		rule, ruleErr := compare.ParseRule(defaults, answerCell.MustGrader().Raw)
		ec := executed[gc.ID]
		var meta execution.CellMeta
		if ec != nil {
			meta = execution.ReadCellMeta(ec)
		}
		switch {
		case meta.Skipped != "":
			cr.Verdict, cr.Counted = grading.VerdictNotRun, false
			cr.Message = "not run on this runner: " + meta.Skipped + "; not counted"
		case in.Integrity.Verdicts[gc.ID] != "":
			cr.Verdict = in.Integrity.Verdicts[gc.ID]
			cr.Message = in.Integrity.Messages[gc.ID]
		case ruleErr != nil:
			// The exercise itself is broken; say so rather than blame the learner.
			cr.Verdict = grading.VerdictError
			cr.Message = "the exercise's grading rule for this cell is invalid; please tell your instructor"
		case in.Executed == nil && in.Result.Killed:
			cr.Verdict = grading.VerdictTimeout
			if in.Result.MemoryLimitHit {
				cr.Verdict = grading.VerdictMemoryLimit
			}
			cr.Message = in.Result.Reason
		case ec == nil:
			cr.Verdict = grading.VerdictNotRun
			cr.Message = "the cell was not found in the executed notebook"
		case meta.TimedOut:
			cr.Verdict = grading.VerdictTimeout
			cr.Message = fmt.Sprintf("the cell did not finish within its %gs time limit and was interrupted", meta.Timeout)
		case ec.ExecutionCount == nil && len(ec.Outputs) == 0:
			cr.Verdict = grading.VerdictNotRun
			cr.Message = "the cell was not run"
			if in.Result.Reason != "" {
				cr.Message += ": " + in.Result.Reason
			}
		default:
			compareCell(&cr, rule, in.Reference, ec)
		}
		if cr.Verdict == grading.VerdictPass {
			cr.Points = gc.Points
		}
		if cr.Counted {
			out.MaxScore += gc.Points
			out.Score += cr.Points
		}
		out.Cells = append(out.Cells, cr)
	}
	switch {
	case in.Result.Killed:
		out.Message = in.Result.Reason
	case out.Score == out.MaxScore:
		out.Message = "all graded cells pass"
	default:
		passed := 0
		for _, c := range out.Cells {
			if c.Verdict == grading.VerdictPass {
				passed++
			}
		}
		out.Message = fmt.Sprintf("%d of %d graded cells pass", passed, len(out.Cells))
	}
	return out
}

func compareCell(cr *grading.CellResult, rule compare.Rule, ref *exercise.Reference, ec *notebook.Cell) {
	actual := ec.Outputs
	if rule.Compare != "error" && rule.Compare != "no-error" {
		if e := compare.FirstError(actual); e != nil {
			cr.Verdict = grading.VerdictError
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
		cr.Verdict = grading.VerdictPass
		cr.Message = "output matches"
	} else {
		cr.Verdict = grading.VerdictMismatch
		cr.Message = r.Message
	}
	cr.Observed, cr.Expected, cr.Diff = r.Observed, r.Expected, r.Diff
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
