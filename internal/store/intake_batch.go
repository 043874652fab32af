package store

import (
	"context"
	"sync"
	"time"
)

// Group commit of intake on Postgres. Uploads that arrive
// while an intake statement is running wait for it and are then written
// together by one statement: one round trip, one commit and one plan for
// several submissions instead of one each, and a rebuilt notebook that
// several of them share is sent once. Nothing waits for company: an
// upload that finds no statement running is written at once, alone, as
// before. Each caller still gets its own answer only after its rows are
// committed, and a batch that fails is written again one upload at a
// time, so that an error (a reused idempotency key, a user deleted
// meanwhile) is the failing upload's alone.

// Intake batching bounds: at most intakeFlushers statements of intake in
// flight per process (more only queue up in Postgres behind the notify
// lock every job insert takes at commit), at most intakeBatchMax uploads
// per statement (the statement's shapes, and the bytes of one Bind
// message, stay bounded).
const (
	intakeFlushers  = 2
	intakeBatchMax  = 8
	intakeBatchWait = time.Minute // how long a batch's statement may run: no one request's end cancels it
)

// intakeBatcher queues the uploads waiting for a statement.
type intakeBatcher struct {
	mu       sync.Mutex
	pending  []*intakeCall
	flushers int
	// What the batches did, for the tests: uploads written
	// by a statement of several, and batches written again one by one.
	batched, retried int64
}

// intakeCall is one upload waiting for its rows to be written.
type intakeCall struct {
	ctx  context.Context
	rows intakeRows
	id   int64
	err  error
	done chan struct{}
}

// insertIntakeBatched writes r with whatever other uploads are waiting.
// It waits for the answer even when ctx ends: the rows may be committed
// by then, and the caller must not be told otherwise.
func (db *DB) insertIntakeBatched(ctx context.Context, r intakeRows) (int64, error) {
	c := &intakeCall{ctx: ctx, rows: r, done: make(chan struct{})}
	b := &db.intake
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if b.flushers < intakeFlushers {
		b.flushers++
		go db.flushIntake()
	}
	b.mu.Unlock()
	<-c.done
	return c.id, c.err
}

// flushIntake writes the waiting uploads, a batch at a time, until none
// is left.
func (db *DB) flushIntake() {
	b := &db.intake
	for {
		b.mu.Lock()
		n := min(len(b.pending), intakeBatchMax)
		if n == 0 {
			b.flushers--
			b.mu.Unlock()
			return
		}
		batch := make([]*intakeCall, n)
		copy(batch, b.pending)
		b.pending = append(b.pending[:0], b.pending[n:]...)
		b.mu.Unlock()
		db.writeIntakeBatch(batch)
	}
}

// writeIntakeBatch writes batch and answers each of its calls.
func (db *DB) writeIntakeBatch(batch []*intakeCall) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	if len(batch) == 1 {
		c := batch[0]
		c.id, c.err = db.insertIntakeOne(c.ctx, c.rows)
		return
	}
	// One request's end must not cancel the others' statement.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), intakeBatchWait)
	defer cancel()
	rows := make([]intakeRows, len(batch))
	for i, c := range batch {
		rows[i] = c.rows
	}
	ids, err := db.insertIntakeRows(ctx, rows)
	b := &db.intake
	if err == nil {
		for i, c := range batch {
			c.id = ids[i]
		}
		b.mu.Lock()
		b.batched += int64(len(batch))
		b.mu.Unlock()
		return
	}
	b.mu.Lock()
	b.retried++
	b.mu.Unlock()
	for _, c := range batch {
		c.id, c.err = db.insertIntakeOne(c.ctx, c.rows)
	}
}
