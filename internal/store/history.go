package store

import (
	"context"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// Defined in package domain (the pages and the API use them without the store).
type QueuePoint = domain.QueuePoint
type RegradeSummary = domain.RegradeSummary

// Regrades lists regrades, newest first, at most limit (default 50).
func (db *DB) Regrades(ctx context.Context, limit int) ([]RegradeSummary, error) {
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	var rows []regradeRow
	if err := db.gorm.WithContext(ctx).Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list regrades: %w", err)
	}
	out := make([]RegradeSummary, len(rows))
	ids := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = RegradeSummary{ID: r.ID, ExerciseID: r.ExerciseID, Mode: r.Mode, State: r.State, CreatedAt: r.CreatedAt, DecidedAt: r.DecidedAt}
		ids[i] = r.ID
	}
	if len(ids) == 0 {
		return out, nil
	}
	var counts []struct {
		RegradeID int64
		N         int
	}
	if err := db.gorm.WithContext(ctx).Model(&regradeItemRow{}).Select("regrade_id, COUNT(*) AS n").
		Where("regrade_id IN ?", ids).Group("regrade_id").Scan(&counts).Error; err != nil {
		return nil, fmt.Errorf("count regrade items: %w", err)
	}
	byID := map[int64]int{}
	for _, c := range counts {
		byID[c.RegradeID] = c.N
	}
	for i := range out {
		out[i].Items = byID[out[i].ID]
	}
	return out, nil
}

// QueueHistory samples the queue depth (submissions submitted but not
// yet started or finished) every step over the window ending now,
// oldest first. It reads only the submissions of the window.
func (db *DB) QueueHistory(ctx context.Context, window, step time.Duration) ([]QueuePoint, error) {
	now := db.Now()
	from := now.Add(-window)
	var rows []struct {
		CreatedAt time.Time
		StartedAt *time.Time
		GradedAt  *time.Time
		Status    string
	}
	// A submission still waiting was created before now and has not
	// started; older ones that started before the window never count, nor
	// do those that ended without starting (see below). The two branches
	// are index ranges (submissions_started, submissions_waiting;
	// migration 00011): the query reads the window, not the table.
	err := db.gorm.WithContext(ctx).Model(&submissionRow{}).Select("created_at, started_at, graded_at, status").
		Where("created_at <= ?", now).
		Where("(started_at >= ? AND (created_at >= ? OR status = '"+domain.StatusQueued+"')) OR (status = '"+domain.StatusQueued+"' AND started_at IS NULL)",
			from, from.Add(-7*24*time.Hour)).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read the queue history: %w", err)
	}
	var out []QueuePoint
	for t := from; !t.After(now); t = t.Add(step) {
		n := 0
		for _, r := range rows {
			if r.CreatedAt.After(t) {
				continue
			}
			// Ended without ever starting (failed before a runner took
			// it): when is not recorded, so it is not counted at all.
			if r.StartedAt == nil && r.Status != domain.StatusQueued {
				continue
			}
			if r.StartedAt == nil || r.StartedAt.After(t) {
				n++
			}
		}
		out = append(out, QueuePoint{At: t, Waiting: n})
	}
	return out, nil
}
