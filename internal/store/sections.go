package store

import (
	"context"
	"fmt"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// The dashboard's views of one section: a section's learners'
// submissions only. An empty section is everyone's, the unfiltered
// queries'. Both keep to the request's cohort scope (inScope).

// SectionSubmissionsPerDay is SubmissionsPerDay of section's learners.
func (db *DB) SectionSubmissionsPerDay(ctx context.Context, days int, section string) ([]domain.DayCount, error) {
	scope, scopeArgs := inScope(ctx, "s.cohort_id")
	if section == "" && scopeArgs == nil && scope == "1 = 1" {
		return db.SubmissionsPerDay(ctx, days)
	}
	cond, args := "1 = 1", []any{}
	if section != "" {
		cond, args = "u.section = ?", []any{section}
	}
	today := db.Now().UTC().Truncate(24 * time.Hour)
	start := today.AddDate(0, 0, -(days - 1))
	out := make([]domain.DayCount, days)
	for i := range out {
		out[i].Day = start.AddDate(0, 0, i)
	}
	rows, err := db.gorm.WithContext(ctx).Raw("SELECT s.created_at FROM submissions s JOIN users u ON u.id = s.user_id "+
		"WHERE s.created_at >= ? AND "+cond+" AND "+scope, append(append([]any{start}, args...), scopeArgs...)...).Rows()
	if err != nil {
		return nil, fmt.Errorf("submissions per day of section %q: %w", section, err)
	}
	defer rows.Close()
	for rows.Next() {
		var t time.Time
		if err := rows.Scan(&t); err != nil {
			return nil, fmt.Errorf("submissions per day of section %q: %w", section, err)
		}
		if i := int(t.UTC().Sub(start) / (24 * time.Hour)); i >= 0 && i < days {
			out[i].Count++
		}
	}
	return out, rows.Err()
}

// SectionRecentSubmissions is RecentSubmissions of section's learners.
func (db *DB) SectionRecentSubmissions(ctx context.Context, limit int, section string) ([]domain.Submission, error) {
	if section == "" {
		return db.RecentSubmissions(ctx, limit)
	}
	var rows []submissionRow
	q := scoped(ctx, db.gorm.WithContext(ctx).Where("user_id IN (SELECT id FROM users WHERE section = ?)", section), "cohort_id")
	if err := q.Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("recent submissions of section %q: %w", section, err)
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
