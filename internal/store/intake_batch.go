package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Group commit of intake on Postgres (issue 15). Uploads that arrive
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
		c.id, c.err = db.insertIntakePG(c.ctx, c.rows)
		return
	}
	// One request's end must not cancel the others' statement.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), intakeBatchWait)
	defer cancel()
	rows := make([]intakeRows, len(batch))
	for i, c := range batch {
		rows[i] = c.rows
	}
	ids, err := db.insertIntakeMany(ctx, rows)
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
		c.id, c.err = db.insertIntakePG(c.ctx, c.rows)
	}
}

// insertIntakeMany writes several uploads' rows in one statement and
// returns their jobs' ids in order.
func (db *DB) insertIntakeMany(ctx context.Context, rows []intakeRows) ([]int64, error) {
	name, query, args := intakeBatchStatement(rows)
	bySub := make(map[string]int64, len(rows))
	err := db.execIntake(ctx, name, query, args, func(v [][]byte) error {
		id, err := strconv.ParseInt(string(v[0]), 10, 64)
		bySub[string(v[1])] = id
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert %d submissions: %w", len(rows), err)
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		id, ok := bySub[r.sub.ID]
		if !ok {
			return nil, fmt.Errorf("the intake statement returned no job for submission %s", r.sub.ID)
		}
		ids[i] = id
	}
	return ids, nil
}

// intakeBatchStatement is intakeStatement for several uploads: the
// distinct blobs of all of them in one insert, then their submissions,
// upload attempts and jobs, the jobs returning their ids with their
// submissions'. The blobs' bytes are numbered last, the smaller first,
// as in intakeStatement. Its name says its shape: how many uploads,
// blobs and attempts, and the order of the blobs' bytes.
func intakeBatchStatement(rows []intakeRows) (name, query string, args []any) {
	var blobs []blobRow
	seen := make(map[string]bool, 2*len(rows))
	attempts := 0
	for _, r := range rows {
		for _, b := range r.blobs {
			if !seen[b.SHA256] {
				seen[b.SHA256] = true
				blobs = append(blobs, b)
			}
		}
		if r.attempt {
			attempts++
		}
	}
	order := blobOrder(blobs)
	var nb strings.Builder
	nb.WriteString("npugrade_intake_batch_" + strconv.Itoa(len(rows)) + "_" + strconv.Itoa(len(blobs)) + "_" + strconv.Itoa(attempts) + "_")
	for _, k := range order {
		nb.WriteString(strconv.Itoa(k) + ".")
	}
	name = nb.String()

	args = make([]any, 0, 4*len(blobs)+24*len(rows))
	for _, b := range blobs {
		args = append(args, b.SHA256, b.Size, b.CreatedAt)
	}
	for _, r := range rows {
		s := r.sub
		args = append(args, s.ID, s.UserID, s.ExerciseID, s.ExerciseVersion, s.NotebookSHA256, s.Status, s.IdempotencyKey, s.Integrity, s.CreatedAt)
	}
	for _, r := range rows {
		if r.attempt {
			args = append(args, r.sub.UserID, attemptExercise(r.sub.ExerciseID), r.sub.CreatedAt)
		}
	}
	for _, r := range rows {
		j := r.job
		args = append(args, j.SubmissionID, j.Kind, j.ExerciseID, j.State, j.Requires, j.Priority, j.MaxAttempts, j.PayloadSHA256,
			j.NotBefore, j.Profile, j.CreatedAt, j.UpdatedAt)
	}
	small := len(args)
	for _, k := range order {
		args = append(args, blobs[k].Data)
	}
	if q, ok := intakeTexts.Load(name); ok {
		return name, q.(string), args
	}
	query = numberBlobsLast(intakeBatchText(len(rows), len(blobs), attempts), small, order)
	intakeTexts.Store(name, query)
	return name, query, args
}

// intakeBatchText is intakeBatchStatement's text with ? placeholders and
// blobDataMark for each blob's bytes.
func intakeBatchText(subs, blobs, attempts int) string {
	var sql strings.Builder
	rowsOf := func(n int, row string) {
		for i := 0; i < n; i++ {
			if i > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString(row)
		}
	}
	sql.WriteString("WITH b AS (INSERT INTO blobs (sha256, size, data, created_at) VALUES ")
	rowsOf(blobs, "(?, ?, "+blobDataMark+", ?)")
	sql.WriteString(" ON CONFLICT DO NOTHING), s AS (INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, idempotency_key, integrity, created_at) VALUES ")
	rowsOf(subs, "(?, ?, ?, ?, ?, ?, ?, ?, ?)")
	sql.WriteString(")")
	if attempts > 0 {
		sql.WriteString(", a AS (INSERT INTO upload_attempts (user_id, exercise_id, created_at) VALUES ")
		rowsOf(attempts, "(?, ?, ?)")
		sql.WriteString(")")
	}
	sql.WriteString(" INSERT INTO jobs (submission_id, kind, exercise_id, state, requires, priority, max_attempts, payload_sha256, not_before, profile, created_at, updated_at) VALUES ")
	rowsOf(subs, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	sql.WriteString(" RETURNING id, submission_id")
	return sql.String()
}
