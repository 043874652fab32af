package store

import (
	"context"
	"encoding/json"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/envprobe"
)

// UpsertRunner records a runner registration with its environment report.
func (db *DB) UpsertRunner(ctx context.Context, id, name string, userID int64, labels map[string]string, profile, verdict string, report envprobe.Report) error {
	lb, _ := json.Marshal(labels)
	rb, _ := json.Marshal(report)
	now := db.Now()
	row := runnerRow{ID: id, Name: name, UserID: &userID, Labels: string(lb), Profile: profile, Report: string(rb),
		Verdict: verdict, LastSeen: now, CreatedAt: now}
	err := db.Gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "id"}},
		DoUpdates: clause.AssignmentColumns([]string{"labels", "profile", "report", "verdict", "last_seen"}),
	}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("register runner %s: %w", id, err)
	}
	return nil
}

// TouchRunner records that a runner polled.
func (db *DB) TouchRunner(ctx context.Context, id string) error {
	return db.Gorm.WithContext(ctx).Model(&runnerRow{}).Where("id = ?", id).Update("last_seen", db.Now()).Error
}

// RunnerReport returns the environment report a runner registered with.
func (db *DB) RunnerReport(ctx context.Context, id string) (envprobe.Report, bool) {
	var row runnerRow
	if err := db.Gorm.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return envprobe.Report{}, false
	}
	var rep envprobe.Report
	if err := json.Unmarshal([]byte(row.Report), &rep); err != nil {
		return envprobe.Report{}, false
	}
	return rep, true
}
