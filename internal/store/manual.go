package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/domain"
)

// Kinds of manual grade (migration 00012).
const (
	ManualRubric       = "rubric"        // a person graded a manual cell with its rubric
	ManualOverride     = "override"      // an instructor set a cell's points
	ManualRubricChange = "rubric-change" // the rubric changed; the same items were re-applied
)

// ManualGrade is domain's (the pages read it without the store).

type manualGradeRow struct {
	ID           int64
	SubmissionID string
	CellID       string
	Kind         string
	Items        string
	Adjustment   float64
	Comment      lossless
	Points       float64
	MaxPoints    float64
	GraderID     *int64
	Grader       string
	GradedAt     time.Time
}

func (manualGradeRow) TableName() string { return "manual_grades" }

func (r manualGradeRow) grade() domain.ManualGrade {
	g := domain.ManualGrade{ID: r.ID, SubmissionID: r.SubmissionID, CellID: r.CellID, Kind: r.Kind, Adjustment: r.Adjustment,
		Comment: string(r.Comment), Points: r.Points, MaxPoints: r.MaxPoints, Grader: r.Grader, GradedAt: r.GradedAt}
	_ = json.Unmarshal([]byte(r.Items), &g.Items)
	if g.Items == nil {
		g.Items = []string{}
	}
	if r.GraderID != nil {
		g.GraderID = *r.GraderID
	}
	return g
}

// ManualGrades returns the manual grades in force on a submission: the
// latest decision per cell.
func (db *DB) ManualGrades(ctx context.Context, submissionID string) (map[string]domain.ManualGrade, error) {
	return manualGrades(db.gorm.WithContext(ctx), submissionID)
}

func manualGrades(g *gorm.DB, submissionID string) (map[string]domain.ManualGrade, error) {
	var rows []manualGradeRow
	if err := g.Where("submission_id = ?", submissionID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read manual grades of %s: %w", submissionID, translate(err))
	}
	out := map[string]domain.ManualGrade{}
	for _, r := range rows {
		out[r.CellID] = r.grade()
	}
	return out, nil
}

// ManualGradeLog lists every manual decision on a submission, oldest first.
func (db *DB) ManualGradeLog(ctx context.Context, submissionID string) ([]domain.ManualGrade, error) {
	var rows []manualGradeRow
	if err := db.gorm.WithContext(ctx).Where("submission_id = ?", submissionID).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read manual grades of %s: %w", submissionID, translate(err))
	}
	out := make([]domain.ManualGrade, len(rows))
	for i, r := range rows {
		out[i] = r.grade()
	}
	return out, nil
}

// ManualGradedSubmissions lists the submissions of an exercise with a
// manual decision in force on cell (any kind).
func (db *DB) ManualGradedSubmissions(ctx context.Context, exerciseID, cellID string) ([]string, error) {
	var ids []string
	err := db.gorm.WithContext(ctx).Model(&manualGradeRow{}).Distinct("manual_grades.submission_id").
		Joins("JOIN submissions ON submissions.id = manual_grades.submission_id").
		Where("submissions.exercise_id = ? AND manual_grades.cell_id = ?", exerciseID, cellID).
		Pluck("manual_grades.submission_id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("list manually graded submissions of %s/%s: %w", exerciseID, cellID, translate(err))
	}
	return ids, nil
}

// ManualChange is a person's change to one submission's score, written at once.
type ManualChange struct {
	// Grade is the decision, recorded in manual_grades.
	Grade domain.ManualGrade
	// Cells, Score and Message are the submission's new result; RawScore
	// is Score before the late penalty.
	Cells    []domain.CellResult
	Score    float64
	RawScore float64
	Message  string
	Status   string
	// History, when set, keeps the old score in score_history with this reason.
	History string
	// Reason is the door (domain.ScoreReason*) the score-changed event names.
	Reason string
	// AuditAction and AuditDetail are written to the audit log (subject:
	// the submission and cell).
	AuditAction string
	AuditDetail string
	// Answer, when set, answers the regrade request on this cell that the
	// change overrides for, in the same transaction: the answer, the new
	// points and both audit entries are on record together or not at all.
	Answer *RequestAnswer
}

// LockSubmission reads a submission with its cells for a change of its
// score, locking its row (on Postgres; SQLite has one writer) so that two
// people grading cells of one submission never lose each other's points.
func (tx *Tx) LockSubmission(id string) (domain.Submission, error) {
	q := tx.g.Where("id = ?", id)
	if tx.db.Dialect == "postgres" {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var row submissionRow
	if err := q.Take(&row).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Submission{}, domain.Errorf(domain.ENOTFOUND, "submission %s not found", id)
	} else if err != nil {
		return domain.Submission{}, fmt.Errorf("lock submission %s: %w", id, err)
	}
	return withCellsIn(tx.g, row)
}

// WriteManualChange writes a person's change of a submission's score (a
// submission LockSubmission read in tx): the decision, the new score
// through the one score-change write, the audit entry and the answer of
// a regrade request it settles. A submission whose cells are all graded
// becomes graded (with a graded event), else it stays needs-manual.
func (tx *Tx) WriteManualChange(id string, actor domain.User, rs ManualChange) error {
	var row submissionRow
	if err := tx.g.Where("id = ?", id).Take(&row).Error; err != nil {
		return fmt.Errorf("read submission %s: %w", id, translate(err))
	}
	old, err := withCellsIn(tx.g, row)
	if err != nil {
		return err
	}
	return tx.db.writeRescore(tx.g, row, old, rs, actor)
}

func (db *DB) writeRescore(tx *gorm.DB, row submissionRow, old domain.Submission, rs ManualChange, actor domain.User) error {
	now := db.Now()
	g := rs.Grade
	items, _ := json.Marshal(g.Items)
	mg := manualGradeRow{SubmissionID: row.ID, CellID: g.CellID, Kind: g.Kind, Items: string(items), Adjustment: g.Adjustment,
		Comment: lossless(g.Comment), Points: g.Points, MaxPoints: g.MaxPoints, Grader: actor.Name, GradedAt: now}
	if actor.ID != 0 {
		id := actor.ID
		mg.GraderID = &id
	}
	if mg.Grader == "" {
		mg.Grader = "npugrade"
	}
	if err := tx.Create(&mg).Error; err != nil {
		return fmt.Errorf("record manual grade of %s/%s: %w", row.ID, g.CellID, err)
	}
	if err := db.changeScore(tx, row, old.Cells, ScoreChange{Reason: rs.Reason, Note: rs.History, Actor: actor,
		Score: rs.Score, RawScore: rs.RawScore, Message: rs.Message, Cells: rs.Cells, Status: rs.Status}); err != nil {
		return err
	}
	if rs.Status == domain.StatusGraded && row.Status != domain.StatusGraded {
		if err := db.addEvent(tx, domain.EventGraded, row.ID,
			map[string]any{"score": rs.Score, "max_score": row.MaxScore, "profile": row.Profile, "grader_version": row.GraderVersion, "manual": true}); err != nil {
			return err
		}
	}
	if rs.AuditAction != "" {
		if err := db.audit(tx, actor, rs.AuditAction, "submission "+row.ID+" cell "+g.CellID, rs.AuditDetail); err != nil {
			return err
		}
	}
	if rs.Answer != nil {
		return db.answerRequest(tx, *rs.Answer, row.ID, g.CellID, actor)
	}
	return nil
}

// RubricSeen records a manual cell's rubric by digest and reports whether
// it is new (a change when an earlier one was on record). Two servers
// seeing the same change record it once.
func (db *DB) RubricSeen(ctx context.Context, exerciseID, cellID, digest string, items any) (changed bool, err error) {
	g := db.gorm.WithContext(ctx)
	var n int64
	if err := g.Table("rubrics").Where("exercise_id = ? AND cell_id = ? AND digest = ?", exerciseID, cellID, digest).Count(&n).Error; err != nil {
		return false, fmt.Errorf("read rubric of %s/%s: %w", exerciseID, cellID, translate(err))
	}
	if n > 0 {
		return false, nil
	}
	var earlier int64
	if err := g.Table("rubrics").Where("exercise_id = ? AND cell_id = ?", exerciseID, cellID).Count(&earlier).Error; err != nil {
		return false, fmt.Errorf("read rubric of %s/%s: %w", exerciseID, cellID, translate(err))
	}
	b, _ := json.Marshal(items)
	res := g.Table("rubrics").Clauses(clause.OnConflict{DoNothing: true}).Create(map[string]any{
		"exercise_id": exerciseID, "cell_id": cellID, "digest": digest, "items": string(b), "recorded_at": db.Now()})
	if res.Error != nil {
		return false, fmt.Errorf("record rubric of %s/%s: %w", exerciseID, cellID, translate(res.Error))
	}
	// Only the server whose row went in re-applies the change: another
	// one starting at the same moment found the digest new too, but its
	// insert did nothing.
	return earlier > 0 && res.RowsAffected == 1, nil
}
