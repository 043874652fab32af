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
func (db *DB) SectionSubmissionsPerDay(ctx context.Context, days int, section string, loc *time.Location) ([]domain.DayCount, error) {
	scope, scopeArgs := inScope(ctx, "s.cohort_id")
	if section == "" && scopeArgs == nil && scope == "1 = 1" {
		return db.SubmissionsPerDay(ctx, days, loc)
	}
	cond, args := "1 = 1", []any{}
	if section != "" {
		cond, args = "u.section = ?", []any{section}
	}
	out := dayBuckets(db.Now(), days, loc)
	start := out[0].Day.UTC()
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
		// The last bucket starting at or before t (days are few).
		for i := days - 1; i >= 0; i-- {
			if !t.Before(out[i].Day) {
				if i < days-1 || t.Before(out[i].Day.AddDate(0, 0, 1)) {
					out[i].Count++
				}
				break
			}
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

// maxPickLearners bounds the learners a form's picker lists.
const maxPickLearners = 5000

// Learners are the learners in the request's staff scope, by login, for
// the pages' learner pickers (at most maxPickLearners).
func (db *DB) Learners(ctx context.Context) ([]domain.User, error) {
	cond, args := usersInScope(ctx, "id")
	var rows []userRow
	if err := db.gorm.WithContext(ctx).Where("role = ?", string(domain.RoleLearner)).Where(cond, args...).
		Order("name").Limit(maxPickLearners).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("learners: %w", translate(err))
	}
	out := make([]domain.User, len(rows))
	for i, r := range rows {
		out[i] = toUser(r)
	}
	return out, nil
}
