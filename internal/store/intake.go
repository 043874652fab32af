package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// The intake's hot path: a submission with no cap to check is
// written by hand-written statements instead of GORM's reflection — on
// Postgres by one statement, so it costs one round trip and commits by
// itself (no BEGIN and COMMIT): the blobs, the submission, the upload
// attempt and the job are data-modifying parts of one WITH query, which
// Postgres runs as one atomic statement (foreign keys are checked at its
// end, so the job may reference the submission inserted beside it). On
// SQLite, whose statements cost no round trip, the same rows are written
// in one transaction.

// intakeRows is what one accepted upload writes.
type intakeRows struct {
	sub     submissionRow
	blobs   []blobRow // distinct
	job     jobRow
	attempt bool // also record the upload attempt (NewSubmission.RecordAttempt)
}

// insertIntake writes rows and returns the job's id.
func (db *DB) insertIntake(ctx context.Context, r intakeRows) (int64, error) {
	if db.Dialect == "postgres" {
		id, err := db.insertIntakeBatched(ctx, r)
		if err != nil {
			return 0, fmt.Errorf("insert submission %s: %w", r.sub.ID, db.rowErr(err))
		}
		return id, nil
	}
	var id int64
	err := db.InTx(ctx, func(tx *Tx) error {
		for _, b := range r.blobs {
			if err := tx.g.Exec("INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
				b.SHA256, b.Size, b.Data, b.CreatedAt).Error; err != nil {
				return fmt.Errorf("store blob %s: %w", b.SHA256[:12], err)
			}
		}
		s := r.sub
		if err := tx.g.Exec(insertSubmissionSQL, s.ID, s.UserID, s.ExerciseID, s.ExerciseVersion, s.NotebookSHA256, s.Status,
			s.IdempotencyKey, s.Integrity, s.CreatedAt, s.Kind, s.CohortID).Error; err != nil {
			return fmt.Errorf("insert submission: %w", err)
		}
		if r.attempt {
			if err := tx.g.Exec(insertAttemptSQL, s.UserID, attemptExercise(s.ExerciseID), s.CreatedAt).Error; err != nil {
				return fmt.Errorf("record upload of user %d: %w", s.UserID, err)
			}
		}
		j := r.job
		return db.rowErr(tx.g.Raw(insertJobSQL+" RETURNING id", j.SubmissionID, j.Kind, j.ExerciseID, j.State, j.Requires, j.Priority,
			j.MaxAttempts, j.PayloadSHA256, j.NotBefore, j.Profile, j.CreatedAt, j.UpdatedAt, s.UserID, s.UserID).Row().Scan(&id))
	})
	return id, err
}

// rowErr translates the error of a Row's Scan, which GORM never sees,
// as GORM translates its own (a duplicate key becomes ErrConflict).
func (db *DB) rowErr(err error) error {
	if t, ok := db.gorm.Dialector.(gorm.ErrorTranslator); ok && err != nil {
		err = t.Translate(err)
	}
	return translate(err)
}

const (
	insertBlobSQL       = "INSERT INTO blobs (sha256, size, data, created_at) VALUES (?, ?, ?, ?)"
	insertSubmissionSQL = "INSERT INTO submissions (id, user_id, exercise_id, exercise_version, notebook_sha256, status, idempotency_key, integrity, created_at, kind, cohort_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	insertAttemptSQL    = "INSERT INTO upload_attempts (user_id, exercise_id, created_at) VALUES (?, ?, ?)"
	// A grade job's turn is the count of its learner's jobs queued or
	// running before it (activeJobsSQL), taken in the insert itself.
	insertJobSQL = "INSERT INTO jobs (submission_id, kind, exercise_id, state, requires, priority, max_attempts, payload_sha256, not_before, profile, created_at, updated_at, user_id, turn) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (" + activeJobsSQL + "))"
	// activeJobsSQL counts a learner's jobs that are queued or running.
	activeJobsSQL = "SELECT count(*) FROM jobs WHERE user_id = ? AND state IN ('queued', 'leased')"
)

// intakeStatement is the Postgres statement that writes the rows of one
// or more uploads and returns each job's id with its submission's, with
// Postgres's numbered placeholders: its name (one per shape of its text,
// which depends on nothing else: how many uploads, distinct blobs and
// attempts), its text (made once per shape) and its arguments.
func intakeStatement(rows []intakeRows) (name, query string, args []any) {
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
	name = "npugrade_intake_" + strconv.Itoa(len(rows)) + "_" + strconv.Itoa(len(blobs)) + "_" + strconv.Itoa(attempts)

	args = make([]any, 0, 4*len(blobs)+24*len(rows))
	for _, b := range blobs {
		args = append(args, b.SHA256, b.Size, b.Data, b.CreatedAt)
	}
	for _, r := range rows {
		s := r.sub
		args = append(args, s.ID, s.UserID, s.ExerciseID, s.ExerciseVersion, s.NotebookSHA256, s.Status, s.IdempotencyKey, s.Integrity, s.CreatedAt, s.Kind, s.CohortID)
	}
	for _, r := range rows {
		if r.attempt {
			args = append(args, r.sub.UserID, attemptExercise(r.sub.ExerciseID), r.sub.CreatedAt)
		}
	}
	for _, r := range rows {
		j := r.job
		args = append(args, j.SubmissionID, j.Kind, j.ExerciseID, j.State, j.Requires, j.Priority, j.MaxAttempts, j.PayloadSHA256,
			j.NotBefore, j.Profile, j.CreatedAt, j.UpdatedAt, r.sub.UserID, r.sub.UserID)
	}
	if q, ok := intakeTexts.Load(name); ok {
		return name, q.(string), args
	}
	query = numbered(intakeText(len(rows), len(blobs), attempts))
	intakeTexts.Store(name, query)
	return name, query, args
}

// intakeText is intakeStatement's text with ? placeholders.
func intakeText(subs, blobs, attempts int) string {
	var sql strings.Builder
	sql.WriteString("WITH b AS (" + multiRow(insertBlobSQL, blobs) + " ON CONFLICT DO NOTHING), s AS (" + multiRow(insertSubmissionSQL, subs) + ")")
	if attempts > 0 {
		sql.WriteString(", a AS (" + multiRow(insertAttemptSQL, attempts) + ")")
	}
	sql.WriteString(" " + multiRow(insertJobSQL, subs) + " RETURNING id, submission_id")
	return sql.String()
}

// multiRow is insert, an INSERT of one row ending in its VALUES tuple,
// with that tuple n times.
func multiRow(insert string, n int) string {
	at := strings.Index(insert, " VALUES ") + len(" VALUES ")
	tuples := make([]string, n)
	for i := range tuples {
		tuples[i] = insert[at:]
	}
	return insert[:at] + strings.Join(tuples, ", ")
}

// intakeTexts holds intakeStatement's text by its name: building it for
// every upload was about a tenth of the statement's own CPU.
var intakeTexts sync.Map

// numbered is q with its placeholders numbered: each ? in order becomes
// $1, $2, ….
func numbered(q string) string {
	var b strings.Builder
	b.Grow(len(q) + len(q)/8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		n++
		b.WriteString("$" + strconv.Itoa(n))
	}
	return b.String()
}

// attemptExercise is the exercise id an upload attempt records: printable
// and bounded, whatever the form said.
func attemptExercise(id string) string {
	if len(id) > 200 {
		id = id[:200]
	}
	return Printable(id)
}

// intakeJob is the job row of a new submission: the queued job ns.Job
// describes, for the submission and payload this statement writes.
func intakeJob(ns NewSubmission, subID, payload string) (jobRow, error) {
	if ns.Job.Kind == "" || ns.Job.State != domain.JobQueued {
		return jobRow{}, fmt.Errorf("submission %s: no queued job to write", subID)
	}
	job := ns.Job
	job.SubmissionID, job.PayloadSHA256 = subID, payload
	row := newJobRow(job)
	user := ns.UserID
	row.UserID = &user
	return row, nil
}

// blobRows returns the distinct blob rows of data and their keys in order.
func blobRows(now time.Time, data ...[]byte) ([]blobRow, []string) {
	shas := make([]string, len(data))
	rows := make([]blobRow, 0, len(data))
	seen := map[string]bool{}
	for i, d := range data {
		shas[i] = SHA256(d)
		if !seen[shas[i]] {
			seen[shas[i]] = true
			rows = append(rows, blobRow{SHA256: shas[i], Size: int64(len(d)), Data: d, CreatedAt: now})
		}
	}
	return rows, shas
}

// insertUploadIn records an upload attempt in tx (CreateSubmission's
// transaction with a cap).
func insertUploadIn(tx *gorm.DB, userID int64, exerciseID string, now time.Time) error {
	if err := tx.Exec(insertAttemptSQL, userID, attemptExercise(exerciseID), now).Error; err != nil {
		return fmt.Errorf("record upload of user %d: %w", userID, err)
	}
	return nil
}
