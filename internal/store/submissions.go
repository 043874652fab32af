package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/domain"
)

// PutBlob stores data under its sha256 (content-addressed; storing the
// same bytes twice is a no-op) and returns the key.
func (tx *Tx) PutBlob(data []byte) (string, error) { return tx.db.putBlob(tx.g, data) }

func (db *DB) putBlob(tx *gorm.DB, data []byte) (string, error) {
	sum := SHA256(data)
	row := blobRow{SHA256: sum, Size: int64(len(data)), Data: data, CreatedAt: db.Now()}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		return "", fmt.Errorf("store blob %s: %w", sum[:12], err)
	}
	return sum, nil
}

// Blob returns stored bytes.
func (db *DB) Blob(ctx context.Context, sha string) ([]byte, error) {
	var row blobRow
	err := db.gorm.WithContext(ctx).Where("sha256 = ?", sha).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("blob %s: %w", sha, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", sha, err)
	}
	return row.Data, nil
}

// NewSubmission is what submission intake writes.
type NewSubmission struct {
	UserID          int64
	ExerciseID      string
	ExerciseVersion string
	Upload          []byte // the learner's notebook as uploaded
	Rebuilt         []byte // the notebook the runner executes
	IdempotencyKey  string
	// Integrity is what rebuilding the upload found (JSON of
	// notebook.Integrity); grading reads it back (SubmissionIntegrity).
	Integrity []byte
	// Job is the grading job to queue with it (package jobs builds it:
	// Queue.GradeJob); the store fills in the submission and payload.
	Job domain.Job
	// MaxSubmissions caps the user's submissions of the exercise that
	// did not fail (0: no cap). It is checked in the transaction that
	// inserts, under a lock on the user, so concurrent uploads on any
	// server cannot together exceed it.
	MaxSubmissions int
	// RecordAttempt records the upload attempt with the submission (no
	// rate limit applied, so none was recorded before it: see
	// RecordUpload); a refused one is recorded with CountRefusedUpload.
	RecordAttempt bool
	// Check stores an uncounted check: no cap, no attempt recorded (its
	// own limit was: RecordCheck), no idempotency key.
	Check bool
	// CohortID is the cohort the submission is made in (0: the default
	// cohort); intake decides it (package intake).
	CohortID int64
}

// Submission kinds (submissions.kind). Every read of a learner's record
// (attempts, gradebook, dashboard, regrades, similarity, rescoring) takes
// kindSubmission only; counted is that condition on the alias s.
const (
	kindSubmission = "submission"
	kindCheck      = "check"
	counted        = "s.kind = 'submission'"
)

// CreateSubmission writes the submission, its blobs and its queued job in
// one transaction (without a cap: one statement, intake.go). With an idempotency key already used by this user it
// returns the earlier submission and created=false.
func (db *DB) CreateSubmission(ctx context.Context, ns NewSubmission) (sub domain.Submission, created bool, err error) {
	if ns.IdempotencyKey != "" && !ns.Check {
		if s, err := db.submissionByKey(ctx, ns.UserID, ns.IdempotencyKey); err == nil {
			return s, false, nil
		} else if !errors.Is(err, ErrNotFound) {
			return domain.Submission{}, false, err
		}
	}
	now := db.Now()
	row := submissionRow{
		ID:              newSubmissionID(now),
		UserID:          ns.UserID,
		ExerciseID:      ns.ExerciseID,
		ExerciseVersion: ns.ExerciseVersion,
		Status:          domain.StatusQueued,
		CreatedAt:       now,
		Kind:            kindSubmission,
		CohortID:        ns.CohortID,
	}
	if row.CohortID == 0 {
		row.CohortID = defaultCohortID
	}
	if ns.Check {
		row.Kind, ns.MaxSubmissions, ns.RecordAttempt, ns.IdempotencyKey = kindCheck, 0, false, ""
	}
	if ns.IdempotencyKey != "" {
		k := ns.IdempotencyKey
		row.IdempotencyKey = &k
	}
	if ns.Integrity != nil {
		integ := string(ns.Integrity)
		row.Integrity = &integ
	}
	blobs, shas := blobRows(now, ns.Upload, ns.Rebuilt)
	row.NotebookSHA256 = shas[0]
	if ns.MaxSubmissions > 0 {
		err = db.createCapped(ctx, ns, &row, blobs, shas[1])
	} else {
		var job jobRow
		if job, err = intakeJob(ns, row.ID, shas[1]); err == nil {
			_, err = db.insertIntake(ctx, intakeRows{sub: row, blobs: blobs, job: job, attempt: ns.RecordAttempt})
		}
	}
	if err != nil {
		if ns.IdempotencyKey != "" && errors.Is(err, ErrConflict) {
			// A concurrent request with the same key won the race.
			s, err2 := db.submissionByKey(ctx, ns.UserID, ns.IdempotencyKey)
			return s, false, err2
		}
		return domain.Submission{}, false, fmt.Errorf("create submission for %s: %w", ns.ExerciseID, err)
	}
	return toSubmission(row, ""), true, nil
}

// createCapped writes a submission under ns.MaxSubmissions: in one
// transaction under a lock on the user, counting after the insert.
func (db *DB) createCapped(ctx context.Context, ns NewSubmission, row *submissionRow, blobs []blobRow, payload string) error {
	return db.InTx(ctx, func(tx *Tx) error {
		if err := db.lockUser(tx.g, ns.UserID); err != nil {
			return err
		}
		if err := tx.g.Clauses(clause.OnConflict{DoNothing: true}).Create(&blobs).Error; err != nil {
			return fmt.Errorf("store %d blobs: %w", len(blobs), err)
		}
		if err := tx.g.Create(row).Error; err != nil {
			return fmt.Errorf("insert submission: %w", err)
		}
		if err := tx.underCap(ns); err != nil {
			return err
		}
		if ns.RecordAttempt {
			if err := insertUploadIn(tx.g, ns.UserID, ns.ExerciseID, row.CreatedAt); err != nil {
				return err
			}
		}
		job, err := intakeJob(ns, row.ID, payload)
		if err != nil {
			return err
		}
		if err := tx.g.Raw(activeJobsSQL, ns.UserID).Scan(&job.Turn).Error; err != nil {
			return fmt.Errorf("count the jobs of user %d: %w", ns.UserID, err)
		}
		if err := tx.g.Create(&job).Error; err != nil {
			return fmt.Errorf("insert grade job for %s: %w", ns.ExerciseID, translate(err))
		}
		return nil
	})
}

// underCap refuses the submission just inserted in tx when it takes the
// user past ns.MaxSubmissions. Counting after the insert matters on
// SQLite: the insert has taken the write lock, so another process's
// upload cannot be counted between this count and the commit.
func (tx *Tx) underCap(ns NewSubmission) error {
	if ns.MaxSubmissions <= 0 {
		return nil
	}
	var n int64
	err := attempts(tx.g.Model(&submissionRow{}).Where("user_id = ? AND exercise_id = ?", ns.UserID, ns.ExerciseID)).Count(&n).Error
	if err != nil {
		return fmt.Errorf("count submissions of user %d for %s: %w", ns.UserID, ns.ExerciseID, err)
	}
	if n > int64(ns.MaxSubmissions) {
		return domain.Errorf(domain.ECONFLICT, "you have used all %d submissions of exercise %s", ns.MaxSubmissions, ns.ExerciseID)
	}
	return nil
}

func (db *DB) submissionByKey(ctx context.Context, userID int64, key string) (domain.Submission, error) {
	var row submissionRow
	err := db.gorm.WithContext(ctx).Where("user_id = ? AND idempotency_key = ?", userID, key).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Submission{}, ErrNotFound
	}
	if err != nil {
		return domain.Submission{}, fmt.Errorf("find submission by idempotency key: %w", err)
	}
	return db.withCells(ctx, row)
}

// newSubmissionID is time-ordered (so ids sort by submission time) and
// unguessable (so ids reveal nothing about other learners' work).
func newSubmissionID(now time.Time) string {
	return fmt.Sprintf("%011x%s", now.UnixMilli(), randomHex(8))
}

// Submission returns one submission with its cell results.
func (db *DB) Submission(ctx context.Context, id string) (domain.Submission, error) {
	var row submissionRow
	// Staff reach their scope's submissions only (a manual grade, an
	// override, an answer to a regrade request by id): another cohort's
	// is not found.
	err := scoped(ctx, db.gorm.WithContext(ctx).Where("id = ?", id), "cohort_id").Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Submission{}, domain.Errorf(domain.ENOTFOUND, "submission %s not found", id)
	}
	if err != nil {
		return domain.Submission{}, fmt.Errorf("read submission %s: %w", id, err)
	}
	return db.withCells(ctx, row)
}

func (db *DB) withCells(ctx context.Context, row submissionRow) (domain.Submission, error) {
	return withCellsIn(db.gorm.WithContext(ctx), row)
}

// withCellsIn is withCells inside g (a transaction: SQLite has one connection).
func withCellsIn(g *gorm.DB, row submissionRow) (domain.Submission, error) {
	var cells []cellResultRow
	if err := g.Where("submission_id = ?", row.ID).Order("position").Find(&cells).Error; err != nil {
		return domain.Submission{}, fmt.Errorf("read cells of submission %s: %w", row.ID, err)
	}
	var u userRow
	_ = g.Where("id = ?", row.UserID).Take(&u).Error
	s := toSubmission(row, u.Name)
	for _, c := range cells {
		s.Cells = append(s.Cells, domain.CellResult{
			CellID: c.CellID, Verdict: c.Verdict, Points: c.Points, MaxPoints: c.MaxPoints,
			Counted: c.Counted, Message: string(c.Message), Observed: string(c.Observed), Expected: string(c.Expected), Diff: string(c.Diff),
		})
	}
	return s, nil
}

// Submissions lists submissions, newest first, without cell results.
func (db *DB) Submissions(ctx context.Context, f domain.SubmissionFilter) ([]domain.Submission, error) {
	q := db.gorm.WithContext(ctx).Model(&submissionRow{}).Order("created_at DESC, id DESC")
	if f.Checks {
		q = q.Where("kind = ?", kindCheck)
	} else {
		q = q.Where("kind = ?", kindSubmission)
	}
	if f.UserID != 0 {
		q = q.Where("user_id = ?", f.UserID)
	}
	q = scoped(ctx, q, "cohort_id")
	if f.ExerciseID != "" {
		q = q.Where("exercise_id = ?", f.ExerciseID)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.After != nil {
		q = q.Where("created_at < ? OR (created_at = ? AND id < ?)", f.After.CreatedAt, f.After.CreatedAt, f.After.ID)
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	var rows []submissionRow
	if err := q.Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list submissions: %w", err)
	}
	names, err := db.userNames(ctx, rows)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Submission, len(rows))
	for i, r := range rows {
		out[i] = toSubmission(r, names[r.UserID])
	}
	return out, nil
}

// userNames maps the user ids of rows to user names, in one query.
func (db *DB) userNames(ctx context.Context, rows []submissionRow) (map[int64]string, error) {
	ids := map[int64]bool{}
	for _, r := range rows {
		ids[r.UserID] = true
	}
	names := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return names, nil
	}
	list := make([]int64, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	var users []userRow
	if err := db.gorm.WithContext(ctx).Where("id IN ?", list).Find(&users).Error; err != nil {
		return nil, fmt.Errorf("read submitters: %w", err)
	}
	for _, u := range users {
		names[u.ID] = u.Name
	}
	return names, nil
}

// SubmissionIntegrity returns the integrity findings intake stored with a
// submission (JSON), or nil for a submission stored without them.
func (db *DB) SubmissionIntegrity(ctx context.Context, id string) ([]byte, error) {
	var row submissionRow
	if err := db.gorm.WithContext(ctx).Select("id", "integrity").Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, fmt.Errorf("read integrity of submission %s: %w", id, translate(err))
	}
	if row.Integrity == nil {
		return nil, nil
	}
	return []byte(*row.Integrity), nil
}

// ExecutedNotebook returns the notebook as the runner executed it.
func (db *DB) ExecutedNotebook(ctx context.Context, id string) ([]byte, error) {
	var row submissionRow
	if err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return nil, fmt.Errorf("read submission %s: %w", id, err)
	}
	if row.ExecutedSHA256 == nil {
		return nil, fmt.Errorf("submission %s has no executed notebook: %w", id, ErrNotFound)
	}
	return db.Blob(ctx, *row.ExecutedSHA256)
}

// markRunning records that a runner started a submission's job.
func (db *DB) markRunning(tx *gorm.DB, submissionID, runnerID string) error {
	now := db.Now()
	err := tx.Model(&submissionRow{}).Where("id = ? AND status IN ?", submissionID, []string{domain.StatusQueued, domain.StatusRunning}).
		Updates(map[string]any{"status": domain.StatusRunning, "started_at": now, "runner_id": runnerID}).Error
	if err != nil {
		return fmt.Errorf("mark submission %s running: %w", submissionID, err)
	}
	return nil
}

// markQueued puts a submission back to queued (its job was returned to the queue).
func (db *DB) markQueued(tx *gorm.DB, submissionID string) error {
	err := tx.Model(&submissionRow{}).Where("id = ? AND status = ?", submissionID, domain.StatusRunning).
		Update("status", domain.StatusQueued).Error
	if err != nil {
		return fmt.Errorf("mark submission %s queued: %w", submissionID, err)
	}
	return nil
}

// markFailed records an infrastructure failure after the last attempt.
func (db *DB) markFailed(tx *gorm.DB, submissionID, message string) error {
	now := db.Now()
	err := tx.Model(&submissionRow{}).Where("id = ?", submissionID).
		Updates(map[string]any{"status": domain.StatusFailed, "message": Printable(message), "graded_at": now}).Error
	if err != nil {
		return fmt.Errorf("mark submission %s failed: %w", submissionID, err)
	}
	return nil
}

// Grade is a scored submission, written by SaveGrade.
type Grade struct {
	SubmissionID string
	Score        float64
	// RawScore is Score before the late penalty (scoring.Points of Cells).
	RawScore       float64
	MaxScore       float64
	Message        string
	Profile        string
	RunnerID       string
	EnvFingerprint string
	GraderVersion  string
	Executed       []byte
	Cells          []domain.CellResult
	// Status is scoring.Status of Cells: graded or needs-manual.
	Status string
	// Check says the submission is an uncounted check: its event is
	// checked, not graded, so nothing that follows scores sees it.
	Check bool
}

// SaveGrade writes a score and its cell results. It runs inside the
// queue's lease-fenced completion transaction, so a result from a runner
// that lost its lease never reaches it. Earlier cell rows of the
// submission are replaced, which keeps a retried completion idempotent.
// The graded event is written with it (outbox).
func (tx *Tx) SaveGrade(g Grade) error {
	if err := tx.db.saveGrade(tx.g, g); err != nil {
		return err
	}
	kind := domain.EventGraded
	if g.Check {
		kind = domain.EventChecked
	}
	return tx.db.addEvent(tx.g, kind, g.SubmissionID,
		map[string]any{"score": g.Score, "max_score": g.MaxScore, "profile": g.Profile, "grader_version": g.GraderVersion})
}

func (db *DB) saveGrade(tx *gorm.DB, g Grade) error {
	if g.Status == "" {
		return fmt.Errorf("save grade of %s: no status", g.SubmissionID)
	}
	var executed *string
	if g.Executed != nil {
		sha, err := db.putBlob(tx, g.Executed)
		if err != nil {
			return err
		}
		executed = &sha
	}
	now := db.Now()
	res := tx.Model(&submissionRow{}).Where("id = ?", g.SubmissionID).Updates(map[string]any{
		"status": g.Status, "score": g.Score, "raw_score": g.RawScore, "max_score": g.MaxScore, "message": g.Message,
		"profile": g.Profile, "runner_id": g.RunnerID, "env_fingerprint": g.EnvFingerprint,
		"grader_version": g.GraderVersion, "executed_sha256": executed, "graded_at": now,
	})
	if res.Error != nil {
		return fmt.Errorf("save grade of %s: %w", g.SubmissionID, res.Error)
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("save grade of %s: %w", g.SubmissionID, ErrNotFound)
	}
	return db.writeCells(tx, g.SubmissionID, g.Cells)
}

// writeCells replaces a submission's cell results.
func (db *DB) writeCells(tx *gorm.DB, submissionID string, cells []domain.CellResult) error {
	if err := tx.Where("submission_id = ?", submissionID).Delete(&cellResultRow{}).Error; err != nil {
		return fmt.Errorf("replace cells of %s: %w", submissionID, err)
	}
	if len(cells) == 0 {
		return nil
	}
	rows := make([]cellResultRow, len(cells))
	for i, c := range cells {
		rows[i] = cellResultRow{SubmissionID: submissionID, Position: i, CellID: c.CellID, Verdict: c.Verdict,
			Points: c.Points, MaxPoints: c.MaxPoints, Counted: c.Counted, Message: lossless(c.Message),
			Observed: lossless(c.Observed), Expected: lossless(c.Expected), Diff: lossless(c.Diff)}
	}
	if err := tx.Create(&rows).Error; err != nil {
		return fmt.Errorf("insert cells of %s: %w", submissionID, err)
	}
	return nil
}

func toSubmission(r submissionRow, userName string) domain.Submission {
	return domain.Submission{
		ID: r.ID, UserID: r.UserID, UserName: userName, ExerciseID: r.ExerciseID, ExerciseVersion: r.ExerciseVersion,
		NotebookSHA256: r.NotebookSHA256, Status: r.Status, Score: r.Score, RawScore: r.RawScore, MaxScore: r.MaxScore,
		Message: r.Message, Profile: r.Profile, RunnerID: r.RunnerID, EnvFingerprint: r.EnvFingerprint,
		GraderVersion: r.GraderVersion, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, GradedAt: r.GradedAt,
		Check: r.Kind == kindCheck, CohortID: r.CohortID,
	}
}
