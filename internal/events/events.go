// Package events takes the domain's events (graded, failed, regrade
// applied) out of the completion path: the store writes each to a durable
// outbox in the transaction that causes it, and a Deliverer hands them to
// a Notifier after the commit, at least once, retrying failed deliveries.
// Work that must survive a crash (LMS grade passback, webhooks) is a
// Notifier; completing a job never waits for it.
package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// Notifier receives events. An error means "not delivered": the event is
// offered again later, so Notify must tolerate seeing an event twice
// (Event.ID identifies it).
type Notifier interface {
	Notify(ctx context.Context, e domain.Event) error
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, e domain.Event) error

// Notify implements Notifier.
func (f NotifierFunc) Notify(ctx context.Context, e domain.Event) error { return f(ctx, e) }

// All is the Notifier that hands each event to every one of ns in turn;
// the first error stops it and the event is offered again, to all of
// them (each tolerates a repeat, as Notify must).
func All(ns ...Notifier) Notifier {
	return NotifierFunc(func(ctx context.Context, e domain.Event) error {
		for _, n := range ns {
			if err := n.Notify(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
}

// Log is the Notifier that writes each event to a structured log.
func Log(log *slog.Logger) Notifier {
	return NotifierFunc(func(_ context.Context, e domain.Event) error {
		log.Info("event", "id", e.ID, "kind", e.Kind, "subject", e.Subject, "payload", string(e.Payload))
		return nil
	})
}

// Store is what delivery reads and writes of the outbox.
type Store interface {
	ClaimEvents(ctx context.Context, limit int, lease time.Duration) ([]domain.Event, error)
	EventDelivered(ctx context.Context, id int64) error
	EventFailed(ctx context.Context, id int64, reason string, retryAt time.Time) error
	Now() time.Time
}

// Deliverer moves events from the outbox to a Notifier.
type Deliverer struct {
	DB       Store
	Notifier Notifier
	Log      *slog.Logger
	// Batch is how many events one round takes (default 100).
	Batch int
	// Lease is how long a taken event is reserved for this deliverer
	// before another may take it (default 1 minute).
	Lease time.Duration
}

// DeliverOnce delivers the events that are due and returns how many were
// delivered.
func (d *Deliverer) DeliverOnce(ctx context.Context) (int, error) {
	batch, lease := d.Batch, d.Lease
	if batch <= 0 {
		batch = 100
	}
	if lease <= 0 {
		lease = time.Minute
	}
	evs, err := d.DB.ClaimEvents(ctx, batch, lease)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range evs {
		if err := d.Notifier.Notify(ctx, e); err != nil {
			// Back off with the attempts, capped at an hour.
			wait := min(time.Duration(e.Attempts*e.Attempts)*10*time.Second, time.Hour)
			if ferr := d.DB.EventFailed(ctx, e.ID, err.Error(), d.DB.Now().Add(wait)); ferr != nil {
				return n, ferr
			}
			d.log().Warn("event not delivered", "id", e.ID, "kind", e.Kind, "attempt", e.Attempts, "err", err)
			continue
		}
		if err := d.DB.EventDelivered(ctx, e.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Run delivers every interval until ctx ends.
func (d *Deliverer) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := d.DeliverOnce(ctx); err != nil && ctx.Err() == nil {
				d.log().Warn("deliver events", "err", err)
			}
		}
	}
}

func (d *Deliverer) log() *slog.Logger {
	if d.Log == nil {
		return slog.Default()
	}
	return d.Log
}
