package store

import (
	"encoding/json"
	"fmt"
	"math"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// ScoreChange is a change of a scored submission's score, computed by the
// caller (package grade and its services; the store adds nothing up):
// every door that changes a score after the first grade writes it with
// changeScore, which keeps the old score, writes the new one and emits
// the score-changed event in the caller's transaction.
type ScoreChange struct {
	// Reason is the door: domain.ScoreReason*.
	Reason string
	// Note, when set, is kept with the old score in score_history.
	Note  string
	Actor domain.User
	// Score and Message are the new result; Cells, when not nil, replace
	// the cell results and Status (scoring.Status of them) and RawScore
	// (their points before the late penalty) are written too: the raw
	// score changes only with the cells.
	Score    float64
	RawScore float64
	Message  string
	Cells    []domain.CellResult
	Status   string
	// KeepHistory keeps the old score even without a Note.
	KeepHistory bool
	regradeID   *int64
	fields      map[string]any // more columns a regrade sets with its grade
}

// changeScore is the one write of a changed score (see ScoreChange).
// row is the submission as it was, old its cells.
func (db *DB) changeScore(tx *gorm.DB, row submissionRow, old []domain.CellResult, c ScoreChange) error {
	if c.Note != "" || c.KeepHistory || c.regradeID != nil {
		if err := db.keepScore(tx, row, old, c.Note, c.regradeID); err != nil {
			return err
		}
	}
	upd := map[string]any{"score": c.Score, "message": Printable(c.Message)}
	status := row.Status
	if c.Cells != nil {
		if err := db.writeCells(tx, row.ID, c.Cells); err != nil {
			return err
		}
		if c.Status == "" {
			return fmt.Errorf("change score of %s: new cells without a status", row.ID)
		}
		status = c.Status
		upd["status"], upd["raw_score"] = status, c.RawScore
	}
	for k, v := range c.fields {
		upd[k] = v
	}
	if err := tx.Model(&submissionRow{}).Where("id = ?", row.ID).Updates(upd).Error; err != nil {
		return fmt.Errorf("change score of %s: %w", row.ID, err)
	}
	if math.Abs(c.Score-row.Score) < 1e-9 && status == row.Status {
		return nil
	}
	ev := domain.ScoreChanged{Submission: row.ID, Exercise: row.ExerciseID, LearnerID: row.UserID,
		NewScore: c.Score, MaxScore: row.MaxScore, OldStatus: row.Status, NewStatus: status, Reason: c.Reason, Actor: c.Actor.Name}
	if row.Status != domain.StatusFailed {
		s := row.Score
		ev.OldScore = &s
	}
	if m, ok := c.fields["max_score"].(float64); ok {
		ev.MaxScore = m
	}
	if ev.Actor == "" {
		ev.Actor = "npugrade"
	}
	return db.addEvent(tx, domain.EventScoreChanged, row.ID, ev)
}

// keepScore writes row's current score, with its cells, to score_history.
// A failed submission had none: its entry keeps the failure (message,
// when) with neither score nor maximum.
func (db *DB) keepScore(tx *gorm.DB, row submissionRow, cells []domain.CellResult, reason string, regradeID *int64) error {
	oc, err := json.Marshal(cells)
	if err != nil {
		return fmt.Errorf("encode old cells of %s: %w", row.ID, err)
	}
	hist := scoreHistoryRow{SubmissionID: row.ID, RegradeID: regradeID, ExerciseVersion: row.ExerciseVersion, GraderVersion: row.GraderVersion,
		Profile: row.Profile, EnvFingerprint: row.EnvFingerprint, Score: row.Score, MaxScore: row.MaxScore,
		Message: row.Message, Cells: string(oc), GradedAt: row.GradedAt, RecordedAt: db.Now(), Reason: Printable(reason), PriorStatus: row.Status}
	if row.Status == domain.StatusFailed {
		hist.Score, hist.MaxScore = 0, 0
	}
	if err := tx.Create(&hist).Error; err != nil {
		return fmt.Errorf("keep old score of %s: %w", row.ID, err)
	}
	return nil
}

// ScoredSubmissions lists a learner's scored submissions of an exercise
// (graded or needs-manual, not checks), oldest first, with their cells:
// what an extension grant or revocation rescores.
func (tx *Tx) ScoredSubmissions(exerciseID string, userID int64) ([]domain.Submission, error) {
	var rows []submissionRow
	if err := tx.g.Where("exercise_id = ? AND user_id = ? AND status IN ? AND kind = ?", exerciseID, userID, []string{domain.StatusGraded, domain.StatusNeedsManual}, kindSubmission).
		Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read scored submissions of user %d for %s: %w", userID, exerciseID, err)
	}
	out := make([]domain.Submission, 0, len(rows))
	for _, r := range rows {
		s, err := withCellsIn(tx.g, r)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ChangeScore writes a changed score of submission id (ScoreChange).
func (tx *Tx) ChangeScore(id string, c ScoreChange) error {
	var row submissionRow
	if err := tx.g.Where("id = ?", id).Take(&row).Error; err != nil {
		return fmt.Errorf("read submission %s: %w", id, translate(err))
	}
	s, err := withCellsIn(tx.g, row)
	if err != nil {
		return err
	}
	return tx.db.changeScore(tx.g, row, s.Cells, c)
}
