package store

import (
	"context"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// Regrades lists regrades, newest first, at most limit (default 50).
func (db *DB) Regrades(ctx context.Context, limit int) ([]domain.RegradeSummary, error) {
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	var rows []regradeRow
	q := db.gorm.WithContext(ctx)
	if cond, args := regradesInScope(ctx, "regrades.id"); cond != "" {
		q = q.Where(cond, args...)
	}
	if err := q.Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list regrades: %w", err)
	}
	out := make([]domain.RegradeSummary, len(rows))
	ids := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = domain.RegradeSummary{ID: r.ID, ExerciseID: r.ExerciseID, Mode: r.Mode, State: r.State, CreatedAt: r.CreatedAt, DecidedAt: r.DecidedAt}
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
func (db *DB) QueueHistory(ctx context.Context, window, step time.Duration) ([]domain.QueuePoint, error) {
	now := db.Now()
	from := now.Add(-window)
	var rows []struct {
		CreatedAt time.Time
		StartedAt *time.Time
	}
	// A submission waited from created_at until started_at. Those that
	// started in the window (created in the week before it, or queued
	// again), and those still queued, are index-only ranges
	// (submissions_started, submissions_waiting; migration 00011): the
	// query reads the window, not the table. One that ended without ever
	// starting (failed before a runner took it) is not counted at all:
	// when it ended is not recorded.
	queued := "'" + domain.StatusQueued + "'"
	err := db.gorm.WithContext(ctx).Raw(`SELECT created_at, started_at FROM submissions WHERE started_at >= ? AND created_at >= ? AND created_at <= ?
		UNION ALL SELECT created_at, started_at FROM submissions WHERE started_at >= ? AND created_at < ? AND status = `+queued+`
		UNION ALL SELECT created_at, started_at FROM submissions WHERE status = `+queued+` AND started_at IS NULL AND created_at <= ?`,
		from, from.Add(-7*24*time.Hour), now, from, from.Add(-7*24*time.Hour), now).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read the queue history: %w", err)
	}
	var out []domain.QueuePoint
	for t := from; !t.After(now); t = t.Add(step) {
		n := 0
		for _, r := range rows {
			if r.CreatedAt.After(t) {
				continue
			}
			if r.StartedAt == nil || r.StartedAt.After(t) {
				n++
			}
		}
		out = append(out, domain.QueuePoint{At: t, Waiting: n})
	}
	return out, nil
}
