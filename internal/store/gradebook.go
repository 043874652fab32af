package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
)

type gradeAcc struct {
	attempts, manual int
	best, latest     domain.GradebookRow
}

// Gradebook streams one row per learner × exercise, learners by name, to
// emit. It reads the joined rows one at a time and holds only the current
// learner's exercises, so 10,000 learners cost no more memory than one;
// with f.Questions, a batch of gradebookPointsBatch learners.
func (db *DB) Gradebook(ctx context.Context, f domain.GradebookFilter, emit func(domain.GradebookRow) error) error {
	exercises := gradebookExercises(f)
	if len(exercises) == 0 {
		return nil
	}
	f, ok := gradebookScope(ctx, f)
	if !ok {
		return nil
	}
	if f.Questions {
		return db.gradebookWithPoints(ctx, f, exercises, emit)
	}
	return db.gradebookRows(ctx, f, exercises, emit)
}

// GradebookLearners counts the learners Gradebook lists for f, every page.
func (db *DB) GradebookLearners(ctx context.Context, f domain.GradebookFilter) (int, error) {
	if len(gradebookExercises(f)) == 0 {
		return 0, nil
	}
	f, ok := gradebookScope(ctx, f)
	if !ok {
		return 0, nil
	}
	where, args := gradebookWhere(f)
	var n int
	if err := db.gorm.WithContext(ctx).Raw("SELECT COUNT(*) FROM users u WHERE "+where, args...).Row().Scan(&n); err != nil {
		return 0, fmt.Errorf("count gradebook learners: %w", err)
	}
	return n, nil
}

// gradebookExercises are the exercises a learner gets a row for.
func gradebookExercises(f domain.GradebookFilter) []string {
	if f.ExerciseID == "" {
		return f.Exercises
	}
	for _, id := range f.Exercises {
		if id == f.ExerciseID {
			return []string{id}
		}
	}
	return nil
}

// gradebookScope narrows f to the reader's cohort; false when the reader
// sees no learner at all.
func gradebookScope(ctx context.Context, f domain.GradebookFilter) (domain.GradebookFilter, bool) {
	if sc, ok := domain.ScopeOf(ctx); ok && !sc.All && !sc.Has(f.Cohort) {
		// A scoped reader lists one of their cohorts, never everyone.
		if len(sc.Cohorts) == 0 {
			return f, false
		}
		f.Cohort = sc.Cohorts[0]
	}
	return f, true
}

func (db *DB) gradebookRows(ctx context.Context, f domain.GradebookFilter, exercises []string, emit func(domain.GradebookRow) error) error {
	q, args := gradebookQuery(f, db.Dialect == "postgres")
	rows, err := db.gorm.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return fmt.Errorf("gradebook query: %w", err)
	}
	defer rows.Close()
	gb := &gradebookLearner{exercises: exercises, counts: f.Counts, emit: emit, id: -1, acc: map[string]*gradeAcc{}}
	for rows.Next() {
		r, err := scanGradebookRow(rows)
		if err != nil {
			return err
		}
		if err := gb.add(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("gradebook rows: %w", err)
	}
	return gb.flush()
}

// gradebookPointsBatch is how many learners' rows wait for their points:
// the cells are read once the batch's rows are (SQLite has one connection,
// so not while they stream).
const gradebookPointsBatch = 200

// gradebookWithPoints streams f's rows a batch of learners at a time, each
// row with its counted submission's points.
func (db *DB) gradebookWithPoints(ctx context.Context, f domain.GradebookFilter, exercises []string, emit func(domain.GradebookRow) error) error {
	first, limit := f.Offset, f.MaxLearners
	if limit <= 0 {
		first = 0
	}
	var batch []domain.GradebookRow
	for done := 0; limit <= 0 || done < limit; {
		b := f
		b.Offset, b.MaxLearners = first+done, gradebookPointsBatch
		if limit > 0 {
			b.MaxLearners = min(b.MaxLearners, limit-done)
		}
		batch = batch[:0]
		learners, last := 0, int64(-1)
		err := db.gradebookRows(ctx, b, exercises, func(r domain.GradebookRow) error {
			if r.UserID != last {
				learners, last = learners+1, r.UserID
			}
			batch = append(batch, r)
			return nil
		})
		if err != nil {
			return err
		}
		if err := db.fillPoints(ctx, batch); err != nil {
			return err
		}
		for _, r := range batch {
			if err := emit(r); err != nil {
				return err
			}
		}
		if learners < b.MaxLearners {
			return nil
		}
		done += learners
	}
	return nil
}

// fillPoints sets each row's Points from its counted submission's counted
// cells.
func (db *DB) fillPoints(ctx context.Context, rows []domain.GradebookRow) error {
	at := map[string]int{}
	for i, r := range rows {
		if r.SubmissionID != "" {
			at[r.SubmissionID] = i
		}
	}
	if len(at) == 0 {
		return nil
	}
	ids := make([]string, 0, len(at))
	for id := range at {
		ids = append(ids, id)
	}
	var cells []struct {
		SubmissionID string
		CellID       string
		Points       float64
	}
	if err := db.gorm.WithContext(ctx).Raw("SELECT submission_id, cell_id, points FROM cell_results WHERE counted = ? AND submission_id IN ?", true, ids).
		Scan(&cells).Error; err != nil {
		return fmt.Errorf("gradebook points: %w", err)
	}
	for _, c := range cells {
		r := &rows[at[c.SubmissionID]]
		if r.Points == nil {
			r.Points = map[string]float64{}
		}
		r.Points[c.CellID] = c.Points
	}
	return nil
}

// gradebookWhere selects the learners of f: by login or full name, section
// and cohort.
func gradebookWhere(f domain.GradebookFilter) (string, []any) {
	where, whereArgs := "u.role = ?", []any{string(domain.RoleLearner)}
	if f.Learner != "" {
		like := "%" + likeEscape(strings.ToLower(f.Learner)) + "%"
		where += ` AND (LOWER(u.name) LIKE ? ESCAPE '\' OR LOWER(u.full_name) LIKE ? ESCAPE '\')`
		whereArgs = append(whereArgs, like, like)
	}
	if f.Section != "" {
		where += " AND u.section = ?"
		whereArgs = append(whereArgs, f.Section)
	}
	if f.Cohort != 0 {
		// A learner in no cohort (made before cohorts, or outside the
		// store) belongs to the default one.
		member := "u.id IN (SELECT m.user_id FROM cohort_members m WHERE m.cohort_id = ? AND m.role = ?)"
		if f.Cohort == defaultCohortID {
			member = "(" + member + " OR NOT EXISTS (SELECT 1 FROM cohort_members m WHERE m.user_id = u.id))"
		}
		where += " AND " + member
		whereArgs = append(whereArgs, f.Cohort, string(domain.RoleLearner))
	}
	return where, whereArgs
}

// gradebookQuery selects every learner of gradebookWhere (a page of
// MaxLearners from Offset when set) with their scored submissions (of one
// exercise, when filtered), a learner's rows together, in submission order.
func gradebookQuery(f domain.GradebookFilter, postgres bool) (string, []any) {
	where, whereArgs := gradebookWhere(f)
	// Scored submissions: graded, and those graded for their automatic
	// part that wait for manual grading (marked so by their status); never
	// a check.
	scored, scoredArgs := "s.user_id = u.id AND "+counted+" AND s.status IN ('"+domain.StatusGraded+"', '"+domain.StatusNeedsManual+"')", []any{}
	if f.ExerciseID != "" {
		scored += " AND s.exercise_id = ?"
		scoredArgs = append(scoredArgs, f.ExerciseID)
	}
	if f.Cohort != 0 {
		scored += " AND s.cohort_id = ?"
		scoredArgs = append(scoredArgs, f.Cohort)
	}
	const cols = "SELECT u.id, u.name, u.full_name, u.section, s.id, s.exercise_id, s.status, s.score, s.raw_score, s.max_score, s.graded_at FROM "
	const order = " ORDER BY u.name, u.id, s.exercise_id, s.created_at, s.id"
	if f.MaxLearners <= 0 {
		return cols + "users u LEFT JOIN submissions s ON " + scored + " WHERE " + where + order, append(scoredArgs, whereArgs...)
	}
	page := "(SELECT u.id, u.name, u.full_name, u.section FROM users u WHERE " + where + " ORDER BY u.name, u.id LIMIT ? OFFSET ?) u "
	args := append(append(whereArgs, f.MaxLearners, max(f.Offset, 0)), scoredArgs...)
	if !postgres {
		return cols + page + "LEFT JOIN submissions s ON " + scored + order, args
	}
	// On Postgres each learner of the page reads its own submissions by
	// the (user_id, ...) index. As a plain join the planner may instead
	// hash all of them (a scan of every submission: 0.5-0.65 s at
	// 500,000, the page's 130 ms otherwise); OFFSET 0 keeps it from
	// pulling the subquery up into that join.
	return cols + page + "LEFT JOIN LATERAL (SELECT s.id, s.exercise_id, s.status, s.score, s.raw_score, s.max_score, s.graded_at, s.created_at FROM submissions s WHERE " +
		scored + " OFFSET 0) s ON TRUE" + order, args
}

// scanGradebookRow reads one row; a learner without submissions has an
// empty SubmissionID.
func scanGradebookRow(rows *sql.Rows) (domain.GradebookRow, error) {
	var (
		r                    domain.GradebookRow
		sid, exID, st        sql.NullString
		score, raw, maxScore sql.NullFloat64
		graded               sql.NullTime
	)
	if err := rows.Scan(&r.UserID, &r.Learner, &r.FullName, &r.Section, &sid, &exID, &st, &score, &raw, &maxScore, &graded); err != nil {
		return r, fmt.Errorf("gradebook row: %w", err)
	}
	r.ExerciseID, r.SubmissionID, r.Status = exID.String, sid.String, st.String
	r.Score, r.RawScore, r.MaxScore = score.Float64, raw.Float64, maxScore.Float64
	if graded.Valid {
		t := graded.Time
		r.GradedAt = &t
	}
	return r, nil
}

// gradebookLearner accumulates one learner's rows and emits a row per
// exercise when the next learner starts.
type gradebookLearner struct {
	exercises []string
	counts    func(exerciseID string) string
	emit      func(domain.GradebookRow) error
	id        int64 // the current learner, -1 before the first
	name      string
	fullName  string
	section   string
	acc       map[string]*gradeAcc
}

func (g *gradebookLearner) add(r domain.GradebookRow) error {
	if r.UserID != g.id {
		if err := g.flush(); err != nil {
			return err
		}
		g.id, g.name, g.fullName, g.section = r.UserID, r.Learner, r.FullName, r.Section
	}
	if r.SubmissionID == "" {
		return nil
	}
	a := g.acc[r.ExerciseID]
	if a == nil {
		a = &gradeAcc{best: r}
		g.acc[r.ExerciseID] = a
	} else if r.Score > a.best.Score {
		a.best = r
	}
	a.attempts++
	if r.Status == domain.StatusNeedsManual {
		a.manual++
	}
	a.latest = r
	return nil
}

func (g *gradebookLearner) flush() error {
	if g.id < 0 {
		return nil
	}
	for _, ex := range g.exercises {
		policy := domain.CountBest
		if g.counts != nil && g.counts(ex) == domain.CountLatest {
			policy = domain.CountLatest
		}
		row := domain.GradebookRow{UserID: g.id, Learner: g.name, FullName: g.fullName, Section: g.section, ExerciseID: ex, Policy: policy}
		if a := g.acc[ex]; a != nil {
			if policy == domain.CountLatest {
				row = a.latest
			} else {
				row = a.best
			}
			row.Policy, row.Attempts, row.ManualWaiting = policy, a.attempts, a.manual
		}
		if err := g.emit(row); err != nil {
			return err
		}
	}
	clear(g.acc)
	return nil
}

// likeEscape makes s match literally inside a LIKE pattern with ESCAPE '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
