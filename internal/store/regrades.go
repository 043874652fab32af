package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

type regradeRow struct {
	ID              int64
	ExerciseID      string
	Mode            string
	State           string
	ExerciseVersion string
	GraderVersion   string
	CreatedBy       *int64
	CreatedAt       time.Time
	DecidedAt       *time.Time
	SkippedFailed   int // migration 00023
}

func (regradeRow) TableName() string { return "regrades" }

type regradeItemRow struct {
	ID             int64
	RegradeID      int64
	SubmissionID   string
	UserID         int64
	State          string
	OldStatus      string // migration 00023
	JobID          *int64
	OldScore       float64
	OldMaxScore    float64
	OldVersion     string
	NewScore       float64
	NewRawScore    float64 // migration 00033
	NewMaxScore    float64
	NewStatus      string // migration 00024
	Message        string
	Profile        string
	EnvFingerprint string
	ExecutedSHA256 *string `gorm:"column:executed_sha256"`
	Cells          string
}

func (regradeItemRow) TableName() string { return "regrade_items" }

type scoreHistoryRow struct {
	ID              int64
	SubmissionID    string
	RegradeID       *int64
	ExerciseVersion string
	GraderVersion   string
	Profile         string
	EnvFingerprint  string
	Score           float64
	MaxScore        float64
	Message         string
	Cells           string
	GradedAt        *time.Time
	RecordedAt      time.Time
	Reason          string // migration 00012
	PriorStatus     string // migration 00023
}

func (scoreHistoryRow) TableName() string { return "score_history" }

// NewRegradeItem is an affected submission as staged.
type NewRegradeItem struct {
	Submission domain.Submission
	// Result is set when the new score is known at once (recompare).
	Result *Grade
	// JobID is the re-execution's job, enqueued in the same transaction.
	JobID int64
}

// CreateRegrade writes a regrade and its items in the caller's
// transaction, the one that enqueued the re-execution jobs. The regrade
// is ready at once when no item waits for a job.
func (tx *Tx) CreateRegrade(r domain.Regrade, createdBy int64, items []NewRegradeItem) (int64, error) {
	db := tx.db
	row := regradeRow{ExerciseID: r.ExerciseID, Mode: r.Mode, State: domain.RegradeReady, ExerciseVersion: r.ExerciseVersion,
		GraderVersion: r.GraderVersion, CreatedAt: db.Now(), SkippedFailed: r.SkippedFailed}
	if createdBy != 0 {
		row.CreatedBy = &createdBy
	}
	for _, it := range items {
		if it.JobID != 0 {
			row.State = domain.RegradeStaged
		}
	}
	if err := tx.g.Create(&row).Error; err != nil {
		return 0, fmt.Errorf("insert regrade of %s: %w", r.ExerciseID, err)
	}
	for _, it := range items {
		s := it.Submission
		ir := regradeItemRow{RegradeID: row.ID, SubmissionID: s.ID, UserID: s.UserID, State: domain.RegradeItemPending, OldStatus: s.Status,
			OldScore: s.Score, OldMaxScore: s.MaxScore, OldVersion: s.GraderVersion, Cells: "[]"}
		if s.Status == domain.StatusFailed {
			ir.OldScore, ir.OldMaxScore = 0, 0 // it had no score
		}
		if it.JobID != 0 {
			id := it.JobID
			ir.JobID = &id
		}
		if it.Result != nil {
			if err := db.fillItem(tx.g, &ir, *it.Result); err != nil {
				return 0, err
			}
		}
		if err := tx.g.Create(&ir).Error; err != nil {
			return 0, fmt.Errorf("insert regrade item %s: %w", s.ID, err)
		}
	}
	return row.ID, nil
}

func (db *DB) fillItem(tx *gorm.DB, ir *regradeItemRow, g Grade) error {
	cells, err := json.Marshal(g.Cells)
	if err != nil {
		return fmt.Errorf("encode regrade cells: %w", err)
	}
	if g.Status == "" {
		return fmt.Errorf("regrade item of %s: no status", ir.SubmissionID)
	}
	ir.State, ir.NewScore, ir.NewRawScore, ir.NewMaxScore, ir.Message = domain.RegradeItemDone, g.Score, g.RawScore, g.MaxScore, g.Message
	ir.NewStatus = g.Status
	ir.Profile, ir.EnvFingerprint, ir.Cells = g.Profile, g.EnvFingerprint, string(cells)
	if g.Executed != nil {
		sha, err := db.putBlob(tx, g.Executed)
		if err != nil {
			return err
		}
		ir.ExecutedSHA256 = &sha
	}
	return nil
}

// SaveRegradeResult records the new score of the item waiting for jobID,
// inside the queue's lease-fenced completion transaction, and marks the
// regrade ready when it was the last one.
func (tx *Tx) SaveRegradeResult(jobID int64, g Grade) error {
	return tx.db.saveRegradeResult(tx.g, jobID, g)
}

func (db *DB) saveRegradeResult(tx *gorm.DB, jobID int64, g Grade) error {
	var ir regradeItemRow
	if err := tx.Where("job_id = ?", jobID).Take(&ir).Error; err != nil {
		return fmt.Errorf("regrade item of job %d: %w", jobID, err)
	}
	if err := db.fillItem(tx, &ir, g); err != nil {
		return err
	}
	if err := tx.Save(&ir).Error; err != nil {
		return fmt.Errorf("save regrade item %d: %w", ir.ID, err)
	}
	var pending int64
	if err := tx.Model(&regradeItemRow{}).Where("regrade_id = ? AND state = ?", ir.RegradeID, domain.RegradeItemPending).Count(&pending).Error; err != nil {
		return fmt.Errorf("count pending regrade items: %w", err)
	}
	if pending == 0 {
		return tx.Model(&regradeRow{}).Where("id = ? AND state = ?", ir.RegradeID, domain.RegradeStaged).Update("state", domain.RegradeReady).Error
	}
	return nil
}

// RegradeByID returns a regrade with its items. Items waiting for a job
// that failed for good are reported failed (and the regrade ready).
func (db *DB) RegradeByID(ctx context.Context, id int64) (domain.Regrade, error) {
	var row regradeRow
	q := db.gorm.WithContext(ctx).Where("id = ?", id)
	if cond, args := regradesInScope(ctx, "regrades.id"); cond != "" {
		q = q.Where(cond, args...)
	}
	err := q.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Regrade{}, domain.Errorf(domain.ENOTFOUND, "regrade %d not found", id)
	}
	if err != nil {
		return domain.Regrade{}, fmt.Errorf("read regrade %d: %w", id, err)
	}
	var items []regradeItemRow
	if err := db.gorm.WithContext(ctx).Where("regrade_id = ?", id).Order("submission_id").Find(&items).Error; err != nil {
		return domain.Regrade{}, fmt.Errorf("read items of regrade %d: %w", id, err)
	}
	r := domain.Regrade{ID: row.ID, ExerciseID: row.ExerciseID, Mode: row.Mode, State: row.State, ExerciseVersion: row.ExerciseVersion,
		GraderVersion: row.GraderVersion, CreatedAt: row.CreatedAt, DecidedAt: row.DecidedAt, Items: []domain.RegradeItem{},
		SkippedFailed: row.SkippedFailed}
	waiting := 0
	for _, ir := range items {
		it := domain.RegradeItem{SubmissionID: ir.SubmissionID, UserID: ir.UserID, State: ir.State, OldStatus: ir.OldStatus, JobID: ir.JobID,
			OldScore: ir.OldScore, OldMaxScore: ir.OldMaxScore, OldVersion: ir.OldVersion, NewScore: ir.NewScore,
			NewMaxScore: ir.NewMaxScore, Message: ir.Message, Profile: ir.Profile, EnvFingerprint: ir.EnvFingerprint}
		_ = json.Unmarshal([]byte(ir.Cells), &it.Cells)
		if it.State == domain.RegradeItemPending && ir.JobID != nil {
			var job jobRow
			if err := db.gorm.WithContext(ctx).Where("id = ?", *ir.JobID).Take(&job).Error; err == nil &&
				(job.State == domain.JobFailed || job.State == domain.JobCanceled) {
				it.State, it.Message = domain.RegradeItemFailed, "re-execution failed: "+job.LastError
			}
		}
		if it.State == domain.RegradeItemPending {
			waiting++
		}
		if it.State == domain.RegradeItemDone {
			it.Change = it.NewScore - it.OldScore
		}
		var u userRow
		_ = db.gorm.WithContext(ctx).Where("id = ?", ir.UserID).Take(&u).Error
		it.Learner = u.Name
		r.Items = append(r.Items, it)
	}
	if r.State == domain.RegradeStaged && waiting == 0 {
		r.State = domain.RegradeReady
	}
	return r, nil
}

// ApplyRegrade replaces the scores of every done item's submission with
// the new ones, keeping the old score in score_history, in one transaction.
// Only a ready regrade can be applied; failed items keep their old score.
// A submission whose grading had failed becomes graded (or needs-manual)
// with its new score; its history entry records that it had none.
func (db *DB) ApplyRegrade(ctx context.Context, id int64) (domain.Regrade, error) {
	r, err := db.RegradeByID(ctx, id)
	if err != nil {
		return r, err
	}
	if r.State != domain.RegradeReady {
		return r, domain.Errorf(domain.ECONFLICT, "regrade %d is %s; only a ready regrade can be applied", id, r.State)
	}
	now := db.Now()
	applied := []string{}
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// Claim the regrade first so that two concurrent applies cannot both write.
		res := tx.Model(&regradeRow{}).Where("id = ? AND state IN ?", id, []string{domain.RegradeReady, domain.RegradeStaged}).
			Updates(map[string]any{"state": domain.RegradeApplied, "decided_at": now})
		if res.Error != nil {
			return fmt.Errorf("mark regrade %d applied: %w", id, res.Error)
		}
		if res.RowsAffected != 1 {
			return domain.Errorf(domain.ECONFLICT, "regrade %d was decided concurrently", id)
		}
		for _, it := range r.Items {
			if it.State != domain.RegradeItemDone {
				continue
			}
			if err := db.applyItem(tx, id, r.ExerciseVersion, r.GraderVersion, it, now); err != nil {
				return err
			}
			applied = append(applied, it.SubmissionID)
		}
		return db.addEvent(tx, domain.EventRegradeApplied, strconv.FormatInt(id, 10),
			map[string]any{"exercise": r.ExerciseID, "grader_version": r.GraderVersion, "submissions": applied})
	})
	if err != nil {
		return r, err
	}
	return db.RegradeByID(ctx, id)
}

func (db *DB) applyItem(tx *gorm.DB, regradeID int64, exVersion, graderVersion string, it domain.RegradeItem, now time.Time) error {
	var sub submissionRow
	if err := tx.Where("id = ?", it.SubmissionID).Take(&sub).Error; err != nil {
		return fmt.Errorf("read submission %s: %w", it.SubmissionID, err)
	}
	old, err := withCellsIn(tx, sub)
	if err != nil {
		return err
	}
	profile, env := it.Profile, it.EnvFingerprint
	if profile == "" {
		profile, env = sub.Profile, sub.EnvFingerprint
	}
	// The re-executed run, or the old run for a recompare.
	executed := sub.ExecutedSHA256
	var ir regradeItemRow
	if err := tx.Where("regrade_id = ? AND submission_id = ?", regradeID, sub.ID).Take(&ir).Error; err != nil {
		return fmt.Errorf("read regrade item of %s: %w", sub.ID, err)
	}
	if ir.ExecutedSHA256 != nil {
		executed = ir.ExecutedSHA256
	}
	rid := regradeID
	return db.changeScore(tx, sub, old.Cells, ScoreChange{Reason: domain.ScoreReasonRegrade, Actor: domain.User{Name: "regrade " + strconv.FormatInt(regradeID, 10)},
		Score: it.NewScore, RawScore: ir.NewRawScore, Message: it.Message, Cells: it.Cells, Status: ir.NewStatus, regradeID: &rid,
		fields: map[string]any{"max_score": it.NewMaxScore, "profile": profile, "env_fingerprint": env, "grader_version": graderVersion,
			"exercise_version": exVersion, "executed_sha256": executed, "graded_at": now}})
}

// DiscardRegrade drops a regrade that is not applied; scores stay as they are.
func (db *DB) DiscardRegrade(ctx context.Context, id int64) (domain.Regrade, error) {
	// A regrade outside the request's scope is not found, not discarded.
	if _, err := db.RegradeByID(ctx, id); err != nil {
		return domain.Regrade{}, err
	}
	res := db.gorm.WithContext(ctx).Model(&regradeRow{}).Where("id = ? AND state IN ?", id, []string{domain.RegradeStaged, domain.RegradeReady}).
		Updates(map[string]any{"state": domain.RegradeDiscarded, "decided_at": db.Now()})
	if res.Error != nil {
		return domain.Regrade{}, fmt.Errorf("discard regrade %d: %w", id, res.Error)
	}
	r, err := db.RegradeByID(ctx, id)
	if err == nil && res.RowsAffected != 1 {
		return r, domain.Errorf(domain.ECONFLICT, "regrade %d is %s and cannot be discarded", id, r.State)
	}
	return r, err
}

// ScoreHistoryEntry is an earlier score of a submission.
type ScoreHistoryEntry struct {
	RegradeID       *int64              `json:"regrade_id,omitempty"`
	ExerciseVersion string              `json:"exercise_version"`
	GraderVersion   string              `json:"grader_version"`
	Profile         string              `json:"profile"`
	EnvFingerprint  string              `json:"env_fingerprint"`
	Score           float64             `json:"score"`
	MaxScore        float64             `json:"max_score"`
	Message         string              `json:"message"`
	Cells           []domain.CellResult `json:"cells"`
	GradedAt        *time.Time          `json:"graded_at,omitempty"`
	RecordedAt      time.Time           `json:"recorded_at"`
	// Reason says why a person replaced the score (a regrade request's
	// override); empty for an applied regrade.
	Reason string `json:"reason,omitempty"`
	// Status is the submission's status when this score was replaced
	// (empty in entries recorded before it was kept): StatusFailed means
	// there was no score (Score and MaxScore 0, Message the failure).
	Status string `json:"status,omitempty"`
}

// ScoreHistory lists a submission's earlier scores, oldest first.
func (db *DB) ScoreHistory(ctx context.Context, submissionID string) ([]ScoreHistoryEntry, error) {
	var rows []scoreHistoryRow
	if err := db.gorm.WithContext(ctx).Where("submission_id = ?", submissionID).Order("recorded_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read score history of %s: %w", submissionID, err)
	}
	out := make([]ScoreHistoryEntry, len(rows))
	for i, r := range rows {
		out[i] = ScoreHistoryEntry{RegradeID: r.RegradeID, ExerciseVersion: r.ExerciseVersion, GraderVersion: r.GraderVersion,
			Profile: r.Profile, EnvFingerprint: r.EnvFingerprint, Score: r.Score, MaxScore: r.MaxScore, Message: r.Message,
			GradedAt: r.GradedAt, RecordedAt: r.RecordedAt, Reason: r.Reason, Status: r.PriorStatus}
		_ = json.Unmarshal([]byte(r.Cells), &out[i].Cells)
	}
	return out, nil
}

// RegradeJobSubmission returns the submission a regrade job re-executes.
func (db *DB) RegradeJobSubmission(ctx context.Context, jobID int64) (string, error) {
	var ir regradeItemRow
	if err := db.gorm.WithContext(ctx).Where("job_id = ?", jobID).Take(&ir).Error; err != nil {
		return "", fmt.Errorf("regrade item of job %d: %w", jobID, err)
	}
	return ir.SubmissionID, nil
}
