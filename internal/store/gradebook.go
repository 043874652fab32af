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
// learner's exercises, so 10,000 learners cost no more memory than one.
func (db *DB) Gradebook(ctx context.Context, f domain.GradebookFilter, emit func(domain.GradebookRow) error) error {
	exercises := f.Exercises
	if f.ExerciseID != "" {
		exercises = nil
		for _, id := range f.Exercises {
			if id == f.ExerciseID {
				exercises = []string{id}
			}
		}
	}
	if len(exercises) == 0 {
		return nil
	}
	if sc, ok := domain.ScopeOf(ctx); ok && !sc.All && !sc.Has(f.Cohort) {
		// A scoped reader lists one of their cohorts, never everyone.
		if len(sc.Cohorts) == 0 {
			return nil
		}
		f.Cohort = sc.Cohorts[0]
	}
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

// gradebookQuery selects every learner (filtered by name and section; the
// first MaxLearners when set) with their scored submissions (of one exercise,
// when filtered), a learner's rows together, in submission order.
func gradebookQuery(f domain.GradebookFilter, postgres bool) (string, []any) {
	where, whereArgs := "u.role = ?", []any{string(domain.RoleLearner)}
	if f.Learner != "" {
		where += ` AND LOWER(u.name) LIKE ? ESCAPE '\'`
		whereArgs = append(whereArgs, "%"+likeEscape(strings.ToLower(f.Learner))+"%")
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
	const cols = "SELECT u.id, u.name, u.full_name, u.section, s.id, s.exercise_id, s.status, s.score, s.max_score, s.graded_at FROM "
	const order = " ORDER BY u.name, u.id, s.exercise_id, s.created_at, s.id"
	if f.MaxLearners <= 0 {
		return cols + "users u LEFT JOIN submissions s ON " + scored + " WHERE " + where + order, append(scoredArgs, whereArgs...)
	}
	page := "(SELECT u.id, u.name, u.full_name, u.section FROM users u WHERE " + where + " ORDER BY u.name, u.id LIMIT ?) u "
	args := append(append(whereArgs, f.MaxLearners), scoredArgs...)
	if !postgres {
		return cols + page + "LEFT JOIN submissions s ON " + scored + order, args
	}
	// On Postgres each learner of the page reads its own submissions by
	// the (user_id, ...) index. As a plain join the planner may instead
	// hash all of them (a scan of every submission: 0.5-0.65 s at
	// 500,000, the page's 130 ms otherwise); OFFSET 0 keeps it from
	// pulling the subquery up into that join.
	return cols + page + "LEFT JOIN LATERAL (SELECT s.id, s.exercise_id, s.status, s.score, s.max_score, s.graded_at, s.created_at FROM submissions s WHERE " +
		scored + " OFFSET 0) s ON TRUE" + order, args
}

// scanGradebookRow reads one row; a learner without submissions has an
// empty SubmissionID.
func scanGradebookRow(rows *sql.Rows) (domain.GradebookRow, error) {
	var (
		r               domain.GradebookRow
		sid, exID, st   sql.NullString
		score, maxScore sql.NullFloat64
		graded          sql.NullTime
	)
	if err := rows.Scan(&r.UserID, &r.Learner, &r.FullName, &r.Section, &sid, &exID, &st, &score, &maxScore, &graded); err != nil {
		return r, fmt.Errorf("gradebook row: %w", err)
	}
	r.ExerciseID, r.SubmissionID, r.Status = exID.String, sid.String, st.String
	r.Score, r.MaxScore = score.Float64, maxScore.Float64
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
