package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/npugrade/npugrade/internal/compare"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/notebook"
	"github.com/npugrade/npugrade/internal/store"
)

// ProfileRequirement is what a runner must satisfy to record references
// for profile: exactly that profile, so that the outputs are the ones a
// learner's notebook will be compared with on it.
func ProfileRequirement(profile string) (domain.Requirement, error) {
	switch profile {
	case "cpu":
		return domain.Requirement{Accelerator: "cpu"}, nil
	case "npu-a2":
		return domain.Requirement{Accelerator: "npu", Product: "A2"}, nil
	case "npu-a3":
		return domain.Requirement{Accelerator: "npu", Product: "A3"}, nil
	case "npu-950":
		return domain.Requirement{Accelerator: "npu", Product: "950"}, nil
	}
	return domain.Requirement{}, domain.Errorf(domain.EINVALID, "unknown profile %q (want cpu, npu-a2, npu-a3 or npu-950)", profile)
}

// referenceRequirement merges the exercise's own requirement (a TorchAir
// release, a feature) with the profile's.
func referenceRequirement(ex *exercise.Exercise, profile string) (domain.Requirement, error) {
	req, err := ProfileRequirement(profile)
	if err != nil {
		return req, err
	}
	own := ex.Requires
	if req.Accelerator == "cpu" {
		if own.NeedsNPU() {
			return req, domain.Errorf(domain.EINVALID, "exercise %s needs an NPU runner; it has no cpu reference", ex.ID)
		}
		return req.WithEnvironment(own), nil
	}
	if own.Accelerator == "cpu" {
		return req, domain.Errorf(domain.EINVALID, "exercise %s runs on cpu runners only", ex.ID)
	}
	if own.Product != "" && own.Product != req.Product {
		return req, domain.Errorf(domain.EINVALID, "exercise %s needs Atlas %s; profile %s is another product", ex.ID, own.Product, profile)
	}
	req.TorchAir, req.Feature = own.TorchAir, own.Feature
	return req.WithEnvironment(own), nil
}

// EnqueueReference queues a reference job: the exercise's answer executed
// on a runner of profile, whose graded outputs are staged as that
// profile's reference when it completes, for an instructor to accept. It
// returns the job id.
func (d *Dispatcher) EnqueueReference(ctx context.Context, exerciseID, profile string) (int64, error) {
	ex, err := d.Catalog.Get(exerciseID)
	if err != nil {
		return 0, err
	}
	req, err := referenceRequirement(ex, profile)
	if err != nil {
		return 0, err
	}
	if ex.HasProbes() {
		// Probe references are per seed of the pool; a server-side run
		// records only the visible cells, which would leave probed
		// questions ungradable. Say so instead of storing half a reference.
		return 0, domain.Errorf(domain.EINVALID, "exercise %s has hidden probes; record its %s references with `npugrade check --profile %s --update-reference` on a host of that profile and commit them", ex.ID, profile, profile)
	}
	job := &domain.Job{Kind: domain.JobReference, ExerciseID: ex.ID, Requires: req,
		MaxAttempts: ex.MaxAttempts, Profile: profile}
	err = d.DB.InTx(ctx, func(tx *store.Tx) error {
		sha, err := tx.PutBlob(ex.AnswerBytes)
		if err != nil {
			return err
		}
		job.PayloadSHA256 = sha
		return d.Queue.Enqueue(tx, job)
	})
	if err != nil {
		return 0, fmt.Errorf("enqueue reference run of %s on %s: %w", ex.ID, profile, err)
	}
	d.Queue.Notify()
	d.Log.Info("reference run queued", "job", job.ID, "exercise", ex.ID, "profile", profile)
	return job.ID, nil
}

// completeReference stages a reference job's executed answer as a
// candidate reference of the profile, in the transaction that completes
// the job. It is not used for grading until an instructor accepts it
// (package reference): the runner that recorded it may have made it up.
func (d *Dispatcher) completeReference(ctx context.Context, job domain.Job, token, runnerID string, res domain.ExecutionResult) error {
	ref, err := d.referenceFrom(job, res)
	if err != nil {
		d.Log.Warn("reference run unusable", "job", job.ID, "exercise", job.ExerciseID, "profile", job.Profile, "err", err)
		return d.Fail(ctx, job.ID, token, err.Error())
	}
	cells, err := json.Marshal(ref.Cells)
	if err != nil {
		return fmt.Errorf("encode reference of job %d: %w", job.ID, err)
	}
	var staged int64
	err = d.store(ctx, job.ID, token, func(tx *store.Tx) error {
		staged, err = tx.StageReference(store.StoredReference{ExerciseID: ref.Exercise, Profile: ref.Profile,
			AnswerSHA256: ref.AnswerSHA256, Cells: cells, JobID: job.ID, RunnerID: runnerID, EnvFingerprint: res.EnvFingerprint})
		return err
	})
	if err != nil {
		return err
	}
	d.Log.Info("reference staged for review", "job", job.ID, "staged_reference", staged, "exercise", ref.Exercise,
		"profile", ref.Profile, "cells", len(ref.Cells), "runner", runnerID)
	return nil
}

func (d *Dispatcher) referenceFrom(job domain.Job, res domain.ExecutionResult) (*exercise.Reference, error) {
	ex, err := d.Catalog.Get(job.ExerciseID)
	if err != nil {
		return nil, err
	}
	if job.Profile != "" && res.Profile != job.Profile {
		return nil, fmt.Errorf("a %s reference was asked for, but the runner has the %s profile", job.Profile, res.Profile)
	}
	if res.Notebook == nil {
		return nil, fmt.Errorf("the answer did not run to the end: %s", res.Reason)
	}
	executed, err := notebook.ParseExecuted(res.Notebook)
	if err != nil {
		return nil, fmt.Errorf("parse executed answer: %w", err)
	}
	ref := &exercise.Reference{Exercise: ex.ID, Profile: res.Profile, AnswerSHA256: ex.AnswerSHA256(), Cells: map[string][]*notebook.Output{}}
	var raised []string
	for _, g := range ex.Graded {
		c := executed.CellByGraderID(g.ID)
		if c == nil || notebook.ReadCellMeta(c).Skipped != "" {
			continue // not runnable on this profile: no reference, graded not-run there
		}
		outs := notebook.StripVolatile(c.Outputs)
		if e := compare.FirstError(outs); e != nil && ex.Answer.CellByGraderID(g.ID).MustGrader().Compare != "error" {
			raised = append(raised, fmt.Sprintf("%s raised %s: %s", g.ID, e.Ename, e.Evalue))
		}
		ref.Cells[g.ID] = outs
	}
	if len(raised) > 0 {
		return nil, errors.New("the answer's cells " + strings.Join(raised, "; "))
	}
	return ref, nil
}
