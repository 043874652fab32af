// Package runner is the runner loop: each slot long-polls a Source for a
// job, executes it, heartbeats while it runs, and sends the result back.
// The same loop serves the in-process runner of `npugrade serve` and the
// remote `npugrade runner` daemon; only the Source differs.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/execution"
)

// Source is where jobs come from. Implementations: dispatch (in-process)
// and runnerclient (HTTP).
type Source interface {
	// Claim waits for a job (a long poll); it returns nil, nil when none came.
	Claim(ctx context.Context) (*domain.Lease, error)
	// Heartbeat extends the lease; cancel asks the runner to stop the job.
	Heartbeat(ctx context.Context, l *domain.Lease) (cancel bool, err error)
	Complete(ctx context.Context, l *domain.Lease, res domain.ExecutionResult) error
	Fail(ctx context.Context, l *domain.Lease, reason string) error
	Release(ctx context.Context, l *domain.Lease) error
}

// Executor runs one notebook.
type Executor interface {
	Execute(ctx context.Context, nb []byte, opt execution.Options) (domain.ExecutionResult, error)
}

// Drainer is a Source that can tell the server that this runner stopped
// claiming (runnerclient does; the in-process source needs not).
type Drainer interface {
	Drain(ctx context.Context) error
}

// Runner runs Slots jobs at a time.
type Runner struct {
	Source   Source
	Executor Executor
	// SlotExecutors, when set, gives slot i its own executor (an NPU
	// runner pins slot i to device i: its own ASCEND_RT_VISIBLE_DEVICES
	// and device node); Executor is then unused.
	SlotExecutors []Executor
	Slots         int
	// HeartbeatEvery should be a third of the lease TTL.
	HeartbeatEvery time.Duration
	// Fingerprint tags every result with the runner's environment.
	Fingerprint string
	Log         *slog.Logger
	// DrainTimeout bounds how long a stopping runner lets in-flight jobs
	// finish before handing them back.
	DrainTimeout time.Duration
	// MaxCellTimeout and MaxJobTimeout cap what a lease asks for, so a
	// runner's owner bounds how long learner code may hold the host
	// whatever the server says. Zero: the lease's values.
	MaxCellTimeout, MaxJobTimeout time.Duration
}

// Run works until ctx is canceled, then drains: jobs in flight get
// DrainTimeout to finish, after which they are released to the queue.
func (r *Runner) Run(ctx context.Context) error {
	if r.Slots <= 0 {
		return nil
	}
	if r.Log == nil {
		r.Log = slog.Default()
	}
	if d, ok := r.Source.(Drainer); ok {
		stop := context.AfterFunc(ctx, func() {
			// Tell the server first, so that instructors see the runner
			// draining while its jobs finish.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := d.Drain(dctx); err != nil {
				r.Log.Warn("announce drain", "err", err)
			}
		})
		defer stop()
	}
	var wg sync.WaitGroup
	for i := 0; i < r.Slots; i++ {
		wg.Add(1)
		go func(slot int) {
			defer wg.Done()
			r.slot(ctx, slot)
		}(i)
	}
	wg.Wait()
	return nil
}

func (r *Runner) slot(ctx context.Context, slot int) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		l, err := r.Source.Claim(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.Log.Warn("claim failed", "slot", slot, "err", err, "retry_in", backoff)
			sleep(ctx, backoff+time.Duration(rand.Int64N(int64(backoff/2)+1)))
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if l == nil {
			continue
		}
		r.run(ctx, slot, l)
	}
}

// run executes one leased job. The job keeps running when ctx is canceled
// (the runner is draining) until DrainTimeout.
func (r *Runner) run(ctx context.Context, slot int, l *domain.Lease) {
	log := r.Log.With("slot", slot, "job", l.JobID, "submission", l.SubmissionID)
	jobCtx, cancelJob := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJob()
	drain := r.DrainTimeout
	if drain <= 0 {
		drain = 30 * time.Second
	}
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(drain, cancelJob)
		context.AfterFunc(jobCtx, func() { t.Stop() })
	})
	defer stopDrain()

	lost := make(chan struct{})
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		every := r.HeartbeatEvery
		if every <= 0 {
			every = 10 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-jobCtx.Done():
				return
			case <-t.C:
				cancel, err := r.Source.Heartbeat(jobCtx, l)
				if cancel || (err != nil && isLeaseLost(err)) {
					log.Warn("stopping job", "canceled", cancel, "err", err)
					close(lost)
					cancelJob()
					return
				}
				if err != nil {
					log.Warn("heartbeat failed", "err", err)
				}
			}
		}
	}()

	log.Info("executing", "exercise", l.ExerciseID, "attempt", l.Attempt)
	ex := r.Executor
	if slot < len(r.SlotExecutors) {
		ex = r.SlotExecutors[slot]
	}
	res, err := ex.Execute(jobCtx, l.Notebook, execution.Options{
		CellTimeout: capDuration(time.Duration(l.CellTimeout*float64(time.Second)), r.MaxCellTimeout),
		JobTimeout:  capDuration(time.Duration(l.JobTimeout*float64(time.Second)), r.MaxJobTimeout),
	})
	cancelJob()
	<-hbDone
	res.EnvFingerprint = r.Fingerprint
	// Results are sent even while draining: use a fresh context.
	sendCtx, cancelSend := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancelSend()
	select {
	case <-lost:
		log.Warn("lease lost or job canceled; result discarded")
		return
	default:
	}
	if err != nil {
		if ctx.Err() != nil {
			log.Info("releasing job on shutdown")
			if rerr := r.Source.Release(sendCtx, l); rerr != nil {
				log.Warn("release failed", "err", rerr)
			}
			return
		}
		log.Error("execution failed", "err", err)
		if ferr := r.Source.Fail(sendCtx, l, err.Error()); ferr != nil {
			log.Warn("report failure", "err", ferr)
		}
		return
	}
	if err := r.complete(sendCtx, l, res, log); err != nil {
		log.Error("complete failed", "err", err)
		return
	}
	log.Info("job done", "duration_s", float64(res.DurationMS)/1000, "killed", res.Killed)
}

// completeTries is how often a result is sent when the server fails to
// take it (a 5xx, a dropped connection); the waits between double.
var completeTries, completeBackoff = 4, time.Second

// complete sends the result, trying again while the server fails. A
// result it never takes fails the job with the reason, so the submission
// says what went wrong instead of "lost its lease".
func (r *Runner) complete(ctx context.Context, l *domain.Lease, res domain.ExecutionResult, log *slog.Logger) error {
	var err error
	for i := 0; i < completeTries; i++ {
		if i > 0 {
			sleep(ctx, completeBackoff<<(i-1))
		}
		if err = r.Source.Complete(ctx, l, res); err == nil || isLeaseLost(err) || ctx.Err() != nil {
			return err
		}
		log.Warn("sending the result failed; trying again", "try", i+1, "err", err)
	}
	if ferr := r.Source.Fail(ctx, l, fmt.Sprintf("the server did not take the result after %d tries: %v", completeTries, err)); ferr != nil {
		return fmt.Errorf("%w (and reporting the failure: %v)", err, ferr)
	}
	return err
}

func isLeaseLost(err error) bool { return errors.Is(err, domain.ErrLeaseLost) }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// capDuration returns d, bounded by max when max is set (and d too when d
// is unset: a lease without a limit gets the runner's).
func capDuration(d, max time.Duration) time.Duration {
	if max > 0 && (d <= 0 || d > max) {
		return max
	}
	return d
}
