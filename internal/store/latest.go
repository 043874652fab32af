package store

import (
	"context"
	"fmt"

	"github.com/npugrade/npugrade/internal/domain"
)

// LatestSubmissionsOf returns each learner's latest submission of an
// exercise (any status), by learner name, at most limit (the similarity
// report's input).
func (db *DB) LatestSubmissionsOf(ctx context.Context, exerciseID string, limit int) ([]domain.Submission, error) {
	var rows []submissionRow
	// Scoped, a learner's latest is their latest in the scope's cohorts.
	scope, scopeArgs := inScope(ctx, "s2.cohort_id")
	args := append(append([]any{exerciseID, string(domain.RoleLearner)}, scopeArgs...), limit)
	err := db.gorm.WithContext(ctx).Raw(`SELECT s.* FROM submissions s JOIN users u ON u.id = s.user_id
		WHERE s.exercise_id = ? AND u.role = ? AND s.id = (
			SELECT s2.id FROM submissions s2 WHERE s2.user_id = s.user_id AND s2.exercise_id = s.exercise_id AND s2.kind = 'submission'
			AND `+scope+`
			ORDER BY s2.created_at DESC, s2.id DESC LIMIT 1)
		ORDER BY u.name LIMIT ?`, args...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("latest submissions of %s: %w", exerciseID, err)
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
