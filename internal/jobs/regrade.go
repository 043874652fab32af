package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/store"
)

// completeRegrade scores a regrade job's run of a submission against the
// exercise's current version and records it in the staged regrade, not in
// the submission: the instructor applies or discards it (package regrade).
func (d *Dispatcher) completeRegrade(ctx context.Context, job domain.Job, token, runnerID string, res domain.ExecutionResult) error {
	subID, err := d.DB.RegradeJobSubmission(ctx, job.ID)
	if err != nil {
		return d.Fail(ctx, job.ID, token, err.Error())
	}
	g, err := d.grade(ctx, subID, res)
	if err != nil {
		d.Log.Error("grade regrade job", "job", job.ID, "submission", subID, "err", err)
		// Without usable references another attempt fails the same way.
		fail := d.Fail
		if errors.Is(err, exercise.ErrNoReference) {
			fail = d.failNow
		}
		if ferr := fail(ctx, job.ID, token, err.Error()); ferr != nil {
			return fmt.Errorf("grade regrade job %d: %w (and failing it: %v)", job.ID, err, ferr)
		}
		return nil
	}
	g.RunnerID = runnerID
	if err := d.store(ctx, job.ID, token, func(tx *store.Tx) error { return tx.SaveRegradeResult(job.ID, g) }); err != nil {
		return err
	}
	d.Log.Info("regrade run scored", "job", job.ID, "submission", subID, "score", g.Score, "max", g.MaxScore)
	return nil
}
