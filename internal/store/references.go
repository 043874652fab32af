package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

type referenceRow struct {
	ExerciseID     string `gorm:"primaryKey"`
	Profile        string `gorm:"primaryKey"`
	AnswerSHA256   string `gorm:"column:answer_sha256"`
	Cells          string
	JobID          *int64
	RunnerID       string
	EnvFingerprint string
	RecordedAt     time.Time
}

func (referenceRow) TableName() string { return "exercise_references" }

// StoredReference is one profile's reference outputs recorded by a
// reference job (migration 00003). Cells is the JSON object
// {"<grader id>": [nbformat outputs]} of exercise.Reference.
type StoredReference struct {
	ExerciseID     string
	Profile        string
	AnswerSHA256   string
	Cells          []byte
	JobID          int64
	RunnerID       string
	EnvFingerprint string
	RecordedAt     time.Time
}

// SaveReference stores (or replaces) a profile's reference inside tx, the
// lease-fenced transaction that completes the reference job.
func (tx *Tx) SaveReference(ref StoredReference) error {
	row := referenceRow{ExerciseID: ref.ExerciseID, Profile: ref.Profile, AnswerSHA256: ref.AnswerSHA256,
		Cells: string(ref.Cells), RunnerID: ref.RunnerID, EnvFingerprint: ref.EnvFingerprint, RecordedAt: tx.db.Now()}
	if ref.JobID != 0 {
		id := ref.JobID
		row.JobID = &id
	}
	err := tx.g.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "exercise_id"}, {Name: "profile"}},
		DoUpdates: clause.AssignmentColumns([]string{"answer_sha256", "cells", "job_id", "runner_id", "env_fingerprint", "recorded_at"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("save reference %s/%s: %w", ref.ExerciseID, ref.Profile, err)
	}
	return nil
}

// Reference returns the stored reference of exercise on profile, or ErrNotFound.
func (db *DB) Reference(ctx context.Context, exerciseID, profile string) (StoredReference, error) {
	var row referenceRow
	err := db.gorm.WithContext(ctx).Where("exercise_id = ? AND profile = ?", exerciseID, profile).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return StoredReference{}, fmt.Errorf("reference %s/%s: %w", exerciseID, profile, ErrNotFound)
	}
	if err != nil {
		return StoredReference{}, fmt.Errorf("read reference %s/%s: %w", exerciseID, profile, err)
	}
	return fromReferenceRow(row), nil
}

// References lists the stored references of one exercise, by profile.
func (db *DB) References(ctx context.Context, exerciseID string) ([]StoredReference, error) {
	var rows []referenceRow
	if err := db.gorm.WithContext(ctx).Where("exercise_id = ?", exerciseID).Order("profile").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list references of %s: %w", exerciseID, err)
	}
	out := make([]StoredReference, len(rows))
	for i, r := range rows {
		out[i] = fromReferenceRow(r)
	}
	return out, nil
}

func fromReferenceRow(r referenceRow) StoredReference {
	ref := StoredReference{ExerciseID: r.ExerciseID, Profile: r.Profile, AnswerSHA256: r.AnswerSHA256, Cells: []byte(r.Cells),
		RunnerID: r.RunnerID, EnvFingerprint: r.EnvFingerprint, RecordedAt: r.RecordedAt}
	if r.JobID != nil {
		ref.JobID = *r.JobID
	}
	return ref
}
