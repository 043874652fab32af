package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
)

// Queries behind the instructor dashboard. Aggregations that SQLite and
// Postgres write differently (dates, percentiles) are done in Go over
// streamed rows, so both dialects give the same answer.

// SubmissionsPerDay counts submissions per day of zone loc over the last
// days days (today included), oldest first; days without submissions
// count 0.
func (db *DB) SubmissionsPerDay(ctx context.Context, days int, loc *time.Location) ([]domain.DayCount, error) {
	out := dayBuckets(db.Now(), days, loc)
	// One count per day, each an index-only range of submissions_created:
	// grouping by a day computed per row would read and sort every row.
	var q strings.Builder
	args := make([]any, 0, 2*days)
	q.WriteString("SELECT ")
	for i := range out {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(SELECT COUNT(*) FROM submissions WHERE created_at >= ? AND created_at < ?)")
		args = append(args, out[i].Day.UTC(), out[i].Day.AddDate(0, 0, 1).UTC())
	}
	counts := make([]any, days)
	for i := range out {
		counts[i] = &out[i].Count
	}
	if err := db.gorm.WithContext(ctx).Raw(q.String(), args...).Row().Scan(counts...); err != nil {
		return nil, fmt.Errorf("submissions per day: %w", err)
	}
	return out, nil
}

// GradingLatency computes latency percentiles over the last n scored
// submissions (submitted to graded by the runner: a submission waiting for
// manual grading counts, its automatic part is done).
func (db *DB) GradingLatency(ctx context.Context, n int) (domain.Latency, error) {
	// The statuses are literals, as in the partial index submissions_scored
	// (migration 00018) that serves this query: a parameter would keep a
	// prepared statement's generic plan from using it.
	rows, err := db.gorm.WithContext(ctx).Raw(
		"SELECT created_at, graded_at FROM submissions WHERE status IN "+scoredSubmissions+" AND graded_at IS NOT NULL ORDER BY graded_at DESC LIMIT ?",
		n).Rows()
	if err != nil {
		return domain.Latency{}, fmt.Errorf("grading latency: %w", err)
	}
	defer rows.Close()
	var ds []time.Duration
	for rows.Next() {
		var c, g time.Time
		if err := rows.Scan(&c, &g); err != nil {
			return domain.Latency{}, fmt.Errorf("grading latency: %w", err)
		}
		ds = append(ds, g.Sub(c))
	}
	if err := rows.Err(); err != nil {
		return domain.Latency{}, fmt.Errorf("grading latency: %w", err)
	}
	if len(ds) == 0 {
		return domain.Latency{}, nil
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	pct := func(p float64) time.Duration { // nearest rank
		i := int(p*float64(len(ds))+0.999999) - 1
		return ds[max(0, min(i, len(ds)-1))]
	}
	return domain.Latency{N: len(ds), P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: ds[len(ds)-1]}, nil
}

// PendingJobDepth counts the jobs that make up the queue's depth, queued
// and leased, by state: an index-only count over the partial index
// jobs_pending (migration 00011), however many jobs have finished. The
// dashboard and /metrics read it on every load and scrape.
func (db *DB) PendingJobDepth(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		State string
		N     int64
	}
	if err := db.gorm.WithContext(ctx).Raw("SELECT state, COUNT(*) AS n FROM jobs WHERE state IN ('" + domain.JobQueued + "', '" + domain.JobLeased + "') GROUP BY state").
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count pending jobs: %w", err)
	}
	out := map[string]int64{domain.JobQueued: 0, domain.JobLeased: 0}
	for _, r := range rows {
		out[r.State] = r.N
	}
	return out, nil
}

// scoredSubmissions are the statuses with a score: graded, and graded for
// the automatic part while a manual cell waits for a person. Literals, as
// the partial index submissions_scored (migration 00018) has them.
const scoredSubmissions = "('" + domain.StatusGraded + "', '" + domain.StatusNeedsManual + "')"

// statsScope is the WHERE clause of the per-question statistics: the
// scored submissions of an exercise, of one section's learners when
// section is not "".
func statsScope(ctx context.Context, exerciseID, section string) (string, []any) {
	where, args := "s.exercise_id = ? AND s.status IN "+scoredSubmissions+" AND "+counted+" AND cr.counted = ?", []any{exerciseID, true}
	if section != "" {
		where += " AND s.user_id IN (SELECT id FROM users WHERE section = ?)"
		args = append(args, section)
	}
	cond, scopeArgs := inScope(ctx, "s.cohort_id")
	return where + " AND " + cond, append(args, scopeArgs...)
}

// QuestionStats returns pass counts per graded cell of an exercise, in
// notebook order, over the scored submissions (of one section's learners
// when section is not ""). A manual cell counts once a person graded it,
// as passed with full points; one still waiting is left out.
func (db *DB) QuestionStats(ctx context.Context, exerciseID, section string) ([]domain.QuestionStat, error) {
	where, args := statsScope(ctx, exerciseID, section)
	var out []domain.QuestionStat
	err := db.gorm.WithContext(ctx).Raw(`SELECT cr.cell_id AS cell_id, MIN(cr.position) AS position, COUNT(*) AS total,
		SUM(CASE WHEN cr.verdict = ? OR (cr.verdict = ? AND cr.points >= cr.max_points) THEN 1 ELSE 0 END) AS passed
		FROM cell_results cr JOIN submissions s ON s.id = cr.submission_id
		WHERE `+where+` AND cr.verdict <> ?
		GROUP BY cr.cell_id ORDER BY MIN(cr.position), cr.cell_id`,
		append(append([]any{domain.VerdictPass, domain.VerdictManual}, args...), domain.VerdictNeedsManual)...).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("question stats of %s: %w", exerciseID, err)
	}
	return out, nil
}

// CommonFailures returns the most frequent failing verdicts and messages
// of an exercise's scored submissions (of one section's learners when
// section is not ""); manual grades are not failures.
func (db *DB) CommonFailures(ctx context.Context, exerciseID, section string, limit int) ([]domain.FailureStat, error) {
	where, args := statsScope(ctx, exerciseID, section)
	var out []domain.FailureStat
	err := db.gorm.WithContext(ctx).Raw(`SELECT cr.cell_id AS cell_id, cr.verdict AS verdict, cr.message AS message, COUNT(*) AS count
		FROM cell_results cr JOIN submissions s ON s.id = cr.submission_id
		WHERE `+where+` AND cr.verdict NOT IN (?, ?, ?)
		GROUP BY cr.cell_id, cr.verdict, cr.message ORDER BY COUNT(*) DESC, cr.cell_id, cr.verdict, cr.message LIMIT ?`,
		append(args, domain.VerdictPass, domain.VerdictManual, domain.VerdictNeedsManual, limit)...).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("common failures of %s: %w", exerciseID, err)
	}
	return out, nil
}

// SetRunnerDrain sets or clears a runner's drain flag from the admin page
// (SetRunnerDraining is the runner announcing its own drain).
func (db *DB) SetRunnerDrain(ctx context.Context, id string, drain bool) error {
	res := db.gorm.WithContext(ctx).Model(&runnerRow{}).Where("id = ?", id).Update("draining", drain)
	if res.Error != nil {
		return fmt.Errorf("set drain of runner %s: %w", id, res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.Errorf(domain.ENOTFOUND, "runner %s not found", id)
	}
	return nil
}

// Tokens lists every token, by user and age.
func (db *DB) Tokens(ctx context.Context) ([]domain.TokenInfo, error) {
	var rows []tokenRow
	if err := db.gorm.WithContext(ctx).Order("user_id, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	out := make([]domain.TokenInfo, len(rows))
	for i, r := range rows {
		out[i] = domain.TokenInfo{ID: r.ID, UserID: r.UserID, Prefix: r.Prefix, Scope: r.Scope, Label: r.Label, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt, LastUsedAt: r.LastUsedAt}
	}
	return out, nil
}

// RevokeToken revokes one token; revoking a revoked token is a no-op.
func (db *DB) RevokeToken(ctx context.Context, tokenID int64) error {
	var row tokenRow
	if err := db.gorm.WithContext(ctx).Where("id = ?", tokenID).Take(&row).Error; err != nil {
		return domain.Errorf(domain.ENOTFOUND, "token %d not found", tokenID)
	}
	err := db.gorm.WithContext(ctx).Model(&tokenRow{}).Where("id = ? AND revoked_at IS NULL", tokenID).Update("revoked_at", db.Now()).Error
	db.auth.forget() // at once here; other servers at its notification
	if err != nil {
		return fmt.Errorf("revoke token %d: %w", tokenID, err)
	}
	return nil
}

// LatestSubmissions returns each exercise's most recent submission of a
// user, by exercise id (for the learner's exercise list).
func (db *DB) LatestSubmissions(ctx context.Context, userID int64) (map[string]domain.Submission, error) {
	var rows []submissionRow
	err := db.gorm.WithContext(ctx).Raw(`SELECT s.* FROM submissions s WHERE s.user_id = ? AND s.id = (
		SELECT s2.id FROM submissions s2 WHERE s2.user_id = s.user_id AND s2.exercise_id = s.exercise_id AND s2.kind = 'submission'
		ORDER BY s2.created_at DESC, s2.id DESC LIMIT 1)`, userID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("latest submissions of user %d: %w", userID, err)
	}
	out := map[string]domain.Submission{}
	for _, r := range rows {
		out[r.ExerciseID] = toSubmission(r, "")
	}
	return out, nil
}

// RecentSubmissions lists the newest submissions of everyone with the
// learner's name, without cell results; checks are listed too, marked
// (the dashboard shows them as checks).
func (db *DB) RecentSubmissions(ctx context.Context, limit int) ([]domain.Submission, error) {
	var rows []submissionRow
	if err := scoped(ctx, db.gorm.WithContext(ctx), "cohort_id").Order("created_at DESC, id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("recent submissions: %w", err)
	}
	ids := map[int64]bool{}
	var list []int64
	for _, r := range rows {
		if !ids[r.UserID] {
			ids[r.UserID] = true
			list = append(list, r.UserID)
		}
	}
	names := map[int64]string{}
	if len(list) > 0 {
		var users []userRow
		if err := db.gorm.WithContext(ctx).Where("id IN ?", list).Find(&users).Error; err != nil {
			return nil, fmt.Errorf("recent submissions: %w", err)
		}
		for _, u := range users {
			names[u.ID] = u.Name
		}
	}
	out := make([]domain.Submission, len(rows))
	for i, r := range rows {
		out[i] = toSubmission(r, names[r.UserID])
	}
	return out, nil
}

// dayBuckets are the days days of loc up to now's, oldest first, each
// starting at its midnight in loc (a day with a DST change is 23 or 25 h).
func dayBuckets(now time.Time, days int, loc *time.Location) []domain.DayCount {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := now.In(loc).Date()
	out := make([]domain.DayCount, days)
	for i := range out {
		out[i].Day = time.Date(y, m, d-(days-1)+i, 0, 0, 0, 0, loc)
	}
	return out
}
