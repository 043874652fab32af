package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// States of a staged reference (migration 00009).
const (
	ReferenceStaged   = "staged"
	ReferenceAccepted = "accepted"
	ReferenceRejected = "rejected"
)

// Audit actions of reference reviews.
const (
	AuditReferenceAccepted = "reference-accepted"
	AuditReferenceRejected = "reference-rejected"
)

type stagedReferenceRow struct {
	ID             int64 `gorm:"primaryKey"`
	ExerciseID     string
	Profile        string
	AnswerSHA256   string `gorm:"column:answer_sha256"`
	Cells          string
	JobID          *int64
	RunnerID       string
	EnvFingerprint string
	RecordedAt     time.Time
	State          string
	DecidedBy      string
	DecidedAt      *time.Time
	Note           string
}

func (stagedReferenceRow) TableName() string { return "staged_references" }

// StagedReference is a reference recorded by a runner, waiting for an
// instructor (State staged) or decided (accepted, rejected). Only an
// accepted one is copied to the references grading reads.
type StagedReference struct {
	ID int64
	StoredReference
	State     string
	DecidedBy string
	DecidedAt *time.Time
	Note      string
}

// StageReference records a runner's reference outputs for review inside
// tx, the lease-fenced transaction that completes the reference job. It
// returns the staged reference's id.
func (tx *Tx) StageReference(ref StoredReference) (int64, error) {
	row := stagedReferenceRow{ExerciseID: ref.ExerciseID, Profile: ref.Profile, AnswerSHA256: ref.AnswerSHA256,
		Cells: string(ref.Cells), RunnerID: Printable(ref.RunnerID), EnvFingerprint: Printable(ref.EnvFingerprint),
		RecordedAt: tx.db.Now(), State: ReferenceStaged}
	if ref.JobID != 0 {
		id := ref.JobID
		row.JobID = &id
	}
	if err := tx.g.Create(&row).Error; err != nil {
		return 0, fmt.Errorf("stage reference %s/%s: %w", ref.ExerciseID, ref.Profile, err)
	}
	return row.ID, nil
}

// StagedReferenceFilter selects staged references; empty fields match all.
type StagedReferenceFilter struct {
	Exercise string
	State    string
	Limit    int // default and at most 500
}

// StagedReferences lists staged references, newest first.
func (db *DB) StagedReferences(ctx context.Context, f StagedReferenceFilter) ([]StagedReference, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 500
	}
	q := db.gorm.WithContext(ctx).Order("recorded_at DESC, id DESC").Limit(f.Limit)
	if f.Exercise != "" {
		q = q.Where("exercise_id = ?", f.Exercise)
	}
	if f.State != "" {
		q = q.Where("state = ?", f.State)
	}
	var rows []stagedReferenceRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list staged references: %w", err)
	}
	out := make([]StagedReference, len(rows))
	for i, r := range rows {
		out[i] = fromStagedRow(r)
	}
	return out, nil
}

// StagedReference returns one staged reference, or ErrNotFound.
func (db *DB) StagedReference(ctx context.Context, id int64) (StagedReference, error) {
	var row stagedReferenceRow
	err := db.gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return StagedReference{}, fmt.Errorf("staged reference %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return StagedReference{}, fmt.Errorf("read staged reference %d: %w", id, err)
	}
	return fromStagedRow(row), nil
}

// DecideReference accepts or rejects a staged reference for actor, with
// the audit entry, in one transaction: accepting copies it into the
// references grading reads (replacing the profile's previous one). A
// reference already decided is a conflict; the row is locked first, so
// two instructors (on any server) cannot both decide it.
func (db *DB) DecideReference(ctx context.Context, id int64, accept bool, actor domain.User, note string) (StagedReference, error) {
	var out StagedReference
	err := db.InTx(ctx, func(tx *Tx) error {
		var row stagedReferenceRow
		// A no-op update first locks the row (Postgres) or takes the
		// write lock (SQLite) before the state is read.
		if err := tx.g.Model(&stagedReferenceRow{}).Where("id = ?", id).Update("note", gorm.Expr("note")).Error; err != nil {
			return fmt.Errorf("lock staged reference %d: %w", id, err)
		}
		if err := tx.g.Where("id = ?", id).Take(&row).Error; err != nil {
			return fmt.Errorf("staged reference %d: %w", id, err)
		}
		if row.State != ReferenceStaged {
			return domain.Errorf(domain.ECONFLICT, "staged reference %d was already %s by %s", id, row.State, row.DecidedBy)
		}
		now := db.Now()
		row.State, row.DecidedBy, row.DecidedAt, row.Note = ReferenceRejected, actorName(actor), &now, Printable(note)
		action := AuditReferenceRejected
		if accept {
			row.State, action = ReferenceAccepted, AuditReferenceAccepted
			ref := fromStagedRow(row).StoredReference
			if err := tx.SaveReference(ref); err != nil {
				return err
			}
		}
		if err := tx.g.Model(&stagedReferenceRow{}).Where("id = ? AND state = ?", id, ReferenceStaged).
			Updates(map[string]any{"state": row.State, "decided_by": row.DecidedBy, "decided_at": now, "note": row.Note}).Error; err != nil {
			return fmt.Errorf("decide staged reference %d: %w", id, err)
		}
		subject := row.ExerciseID + "/" + row.Profile + " #" + strconv.FormatInt(id, 10)
		if err := tx.audit(actor, action, subject, "runner "+row.RunnerID+" "+row.Note); err != nil {
			return err
		}
		out = fromStagedRow(row)
		return nil
	})
	return out, err
}

func actorName(u domain.User) string {
	if u.Name == "" {
		return "cli"
	}
	return u.Name
}

// audit writes an audit entry inside tx, so it commits with the action.
func (tx *Tx) audit(actor domain.User, action, subject, detail string) error {
	row := auditRow{At: tx.db.Now(), Actor: actorName(actor), Action: action, Subject: subject, Detail: detail}
	if actor.ID != 0 {
		id := actor.ID
		row.ActorID = &id
	}
	if err := tx.g.Create(&row).Error; err != nil {
		return fmt.Errorf("write the audit log (%s %s): %w", action, subject, err)
	}
	return nil
}

func fromStagedRow(r stagedReferenceRow) StagedReference {
	s := StagedReference{ID: r.ID, State: r.State, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt, Note: r.Note,
		StoredReference: StoredReference{ExerciseID: r.ExerciseID, Profile: r.Profile, AnswerSHA256: r.AnswerSHA256,
			Cells: []byte(r.Cells), RunnerID: r.RunnerID, EnvFingerprint: r.EnvFingerprint, RecordedAt: r.RecordedAt}}
	if r.JobID != nil {
		s.JobID = *r.JobID
	}
	return s
}
