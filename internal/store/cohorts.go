package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/npugrade/npugrade/internal/domain"
)

// defaultCohortID is the id of the default cohort: the first row
// migration 00029 writes into a fresh table.
const defaultCohortID int64 = 1

type cohortRow struct {
	ID        int64
	Slug      string
	Title     string
	CreatedAt time.Time
}

func (cohortRow) TableName() string { return "cohorts" }

type cohortMemberRow struct {
	CohortID  int64 `gorm:"primaryKey"`
	UserID    int64 `gorm:"primaryKey"`
	Role      string
	CreatedAt time.Time
}

func (cohortMemberRow) TableName() string { return "cohort_members" }

type cohortExerciseRow struct {
	CohortID       int64  `gorm:"primaryKey"`
	ExerciseID     string `gorm:"primaryKey"`
	Deadline       *time.Time
	LatePenalty    *string
	MaxSubmissions *int
}

func (r cohortExerciseRow) offer() domain.CohortExercise {
	o := domain.CohortExercise{CohortID: r.CohortID, ExerciseID: r.ExerciseID, Deadline: r.Deadline, MaxSubmissions: r.MaxSubmissions}
	if r.LatePenalty != nil {
		o.LatePenalty = json.RawMessage(*r.LatePenalty)
	}
	return o
}

func (cohortExerciseRow) TableName() string { return "cohort_exercises" }

func toCohort(r cohortRow) domain.Cohort {
	return domain.Cohort{ID: r.ID, Slug: r.Slug, Title: r.Title, CreatedAt: r.CreatedAt}
}

// cohortSlug is what a slug may be: it names the cohort in URLs, query
// parameters and CSV files.
var cohortSlug = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidCohortSlug reports whether slug may name a cohort.
func ValidCohortSlug(slug string) bool { return cohortSlug.MatchString(slug) }

// EnsureCohort returns the cohort slug, creating it with title when there
// is none (idempotent: an existing cohort keeps its title).
func (db *DB) EnsureCohort(ctx context.Context, slug, title string) (domain.Cohort, error) {
	if !ValidCohortSlug(slug) {
		return domain.Cohort{}, domain.Errorf(domain.EINVALID, "cohort slug %q: want lower-case letters, digits, '.', '_' or '-' (at most 64)", slug)
	}
	row := cohortRow{Slug: slug, Title: title, CreatedAt: db.Now()}
	err := db.gorm.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "slug"}}, DoNothing: true}).Create(&row).Error
	if err != nil {
		return domain.Cohort{}, fmt.Errorf("create cohort %q: %w", slug, translate(err))
	}
	return db.CohortBySlug(ctx, slug)
}

// CohortBySlug finds a cohort (ErrNotFound when absent).
func (db *DB) CohortBySlug(ctx context.Context, slug string) (domain.Cohort, error) {
	return db.cohortWhere(ctx, "slug = ?", slug)
}

// CohortByID finds a cohort (ErrNotFound when absent).
func (db *DB) CohortByID(ctx context.Context, id int64) (domain.Cohort, error) {
	return db.cohortWhere(ctx, "id = ?", id)
}

func (db *DB) cohortWhere(ctx context.Context, where string, arg any) (domain.Cohort, error) {
	var row cohortRow
	err := db.gorm.WithContext(ctx).Where(where, arg).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Cohort{}, fmt.Errorf("cohort %v: %w", arg, ErrNotFound)
	}
	if err != nil {
		return domain.Cohort{}, fmt.Errorf("find cohort %v: %w", arg, translate(err))
	}
	return toCohort(row), nil
}

// Cohorts lists every cohort, by id.
func (db *DB) Cohorts(ctx context.Context) ([]domain.Cohort, error) {
	var rows []cohortRow
	if err := db.gorm.WithContext(ctx).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list cohorts: %w", translate(err))
	}
	out := make([]domain.Cohort, len(rows))
	for i, r := range rows {
		out[i] = toCohort(r)
	}
	return out, nil
}

// AddCohortMember makes userID a member of cohortID with role (learner or
// instructor); a member already there gets the new role.
func (db *DB) AddCohortMember(ctx context.Context, cohortID, userID int64, role domain.Role) error {
	if role != domain.RoleLearner && role != domain.RoleInstructor {
		return domain.Errorf(domain.EINVALID, "a cohort member is a learner or an instructor, not %q", role)
	}
	row := cohortMemberRow{CohortID: cohortID, UserID: userID, Role: string(role), CreatedAt: db.Now()}
	err := db.gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "cohort_id"}, {Name: "user_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"role"}),
	}).Create(&row).Error
	if err != nil {
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.Errorf(domain.ENOTFOUND, "no cohort %d or user %d", cohortID, userID)
		}
		return fmt.Errorf("add user %d to cohort %d: %w", userID, cohortID, translate(err))
	}
	return nil
}

// RemoveCohortMember takes userID out of cohortID (no error when not a
// member). Their submissions stay in the cohort.
func (db *DB) RemoveCohortMember(ctx context.Context, cohortID, userID int64) error {
	err := db.gorm.WithContext(ctx).Where("cohort_id = ? AND user_id = ?", cohortID, userID).Delete(&cohortMemberRow{}).Error
	if err != nil {
		return fmt.Errorf("remove user %d from cohort %d: %w", userID, cohortID, translate(err))
	}
	return nil
}

// CohortMembers lists cohortID's members by name.
func (db *DB) CohortMembers(ctx context.Context, cohortID int64) ([]domain.CohortMember, error) {
	var rows []struct {
		UserID int64
		Name   string
		Role   string
	}
	err := db.gorm.WithContext(ctx).Raw(`SELECT m.user_id, u.name, m.role FROM cohort_members m JOIN users u ON u.id = m.user_id
		WHERE m.cohort_id = ? ORDER BY u.name`, cohortID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("members of cohort %d: %w", cohortID, translate(err))
	}
	out := make([]domain.CohortMember, len(rows))
	for i, r := range rows {
		out[i] = domain.CohortMember{UserID: r.UserID, Name: r.Name, Role: domain.Role(r.Role)}
	}
	return out, nil
}

// CohortsOf lists the cohorts userID belongs to, with their role in each,
// the most recently joined first.
func (db *DB) CohortsOf(ctx context.Context, userID int64) ([]domain.Membership, error) {
	var rows []struct {
		ID         int64
		Slug       string
		Title      string
		CreatedAt  time.Time
		MemberRole string
	}
	err := db.gorm.WithContext(ctx).Raw(`SELECT c.id, c.slug, c.title, c.created_at, m.role AS member_role
		FROM cohort_members m JOIN cohorts c ON c.id = m.cohort_id
		WHERE m.user_id = ? ORDER BY m.created_at DESC, c.id DESC`, userID).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("cohorts of user %d: %w", userID, translate(err))
	}
	out := make([]domain.Membership, len(rows))
	for i, r := range rows {
		out[i] = domain.Membership{Cohort: domain.Cohort{ID: r.ID, Slug: r.Slug, Title: r.Title, CreatedAt: r.CreatedAt}, Role: domain.Role(r.MemberRole)}
	}
	return out, nil
}

// OfferExercise offers o.ExerciseID in o.CohortID with the cohort's own
// policy (each nil: the exercise's); offering it again replaces it. The
// late penalty is stored as given: package policy checks it.
func (db *DB) OfferExercise(ctx context.Context, o domain.CohortExercise) error {
	cohortID, exerciseID := o.CohortID, o.ExerciseID
	if exerciseID == "" {
		return domain.Errorf(domain.EINVALID, "an offered exercise needs an id")
	}
	row := cohortExerciseRow{CohortID: cohortID, ExerciseID: exerciseID, Deadline: o.Deadline, MaxSubmissions: o.MaxSubmissions}
	if o.LatePenalty != nil {
		lp := string(o.LatePenalty)
		row.LatePenalty = &lp
	}
	err := db.gorm.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "cohort_id"}, {Name: "exercise_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"deadline", "late_penalty", "max_submissions"}),
	}).Create(&row).Error
	if err != nil {
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.Errorf(domain.ENOTFOUND, "no cohort %d", cohortID)
		}
		return fmt.Errorf("offer %s in cohort %d: %w", exerciseID, cohortID, translate(err))
	}
	return nil
}

// CohortExercises lists what cohortID offers explicitly, by exercise id.
func (db *DB) CohortExercises(ctx context.Context, cohortID int64) ([]domain.CohortExercise, error) {
	var rows []cohortExerciseRow
	if err := db.gorm.WithContext(ctx).Where("cohort_id = ?", cohortID).Order("exercise_id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("exercises of cohort %d: %w", cohortID, translate(err))
	}
	out := make([]domain.CohortExercise, len(rows))
	for i, r := range rows {
		out[i] = r.offer()
	}
	return out, nil
}

// CohortOffer is how cohortID offers exerciseID: nil when it sets
// nothing of its own.
func (db *DB) CohortOffer(ctx context.Context, cohortID int64, exerciseID string) (*domain.CohortExercise, error) {
	var rows []cohortExerciseRow
	err := db.gorm.WithContext(ctx).Where("cohort_id = ? AND exercise_id = ?", cohortID, exerciseID).Limit(1).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("policy of %s in cohort %d: %w", exerciseID, cohortID, translate(err))
	}
	if len(rows) == 0 {
		return nil, nil
	}
	o := rows[0].offer()
	return &o, nil
}

// CohortDeadline is cohortID's own deadline for exerciseID: nil when the
// cohort does not override the exercise's.
func (db *DB) CohortDeadline(ctx context.Context, cohortID int64, exerciseID string) (*time.Time, error) {
	o, err := db.CohortOffer(ctx, cohortID, exerciseID)
	if err != nil || o == nil {
		return nil, err
	}
	return o.Deadline, nil
}

// SubmissionCohort decides the cohort of userID's new submission of
// exerciseID: the cohort slug when given and userID is a member of it,
// else the user's most recently joined cohort that offers the exercise (a
// cohort with no offered exercises offers every one), else the default.
func (db *DB) SubmissionCohort(ctx context.Context, userID int64, exerciseID, slug string) (int64, error) {
	var ids []int64
	g := db.gorm.WithContext(ctx)
	if slug != "" {
		err := g.Raw(`SELECT m.cohort_id FROM cohort_members m JOIN cohorts c ON c.id = m.cohort_id
			WHERE m.user_id = ? AND c.slug = ?`, userID, slug).Scan(&ids).Error
		if err != nil {
			return 0, fmt.Errorf("cohort %q of user %d: %w", slug, userID, translate(err))
		}
		if len(ids) > 0 {
			return ids[0], nil
		}
	}
	err := g.Raw(`SELECT m.cohort_id FROM cohort_members m
		WHERE m.user_id = ? AND (EXISTS (SELECT 1 FROM cohort_exercises e WHERE e.cohort_id = m.cohort_id AND e.exercise_id = ?)
			OR NOT EXISTS (SELECT 1 FROM cohort_exercises e WHERE e.cohort_id = m.cohort_id))
		ORDER BY m.created_at DESC, m.cohort_id DESC LIMIT 1`, userID, exerciseID).Scan(&ids).Error
	if err != nil {
		return 0, fmt.Errorf("cohort of user %d for %s: %w", userID, exerciseID, translate(err))
	}
	if len(ids) > 0 {
		return ids[0], nil
	}
	return defaultCohortID, nil
}

// StaffScope is the scope of u's staff reads: every cohort for an admin,
// the cohorts u is an instructor member of for an instructor, none for
// anyone else.
func (db *DB) StaffScope(ctx context.Context, u domain.User) (domain.Scope, error) {
	switch u.Role {
	case domain.RoleAdmin:
		return domain.Scope{All: true}, nil
	case domain.RoleInstructor:
	default:
		return domain.Scope{Cohorts: []int64{}}, nil
	}
	var ids []int64
	err := db.gorm.WithContext(ctx).Raw(`SELECT cohort_id FROM cohort_members WHERE user_id = ? AND role = ? ORDER BY created_at, cohort_id`,
		u.ID, string(domain.RoleInstructor)).Scan(&ids).Error
	if err != nil {
		return domain.Scope{}, fmt.Errorf("cohorts user %d teaches: %w", u.ID, translate(err))
	}
	if ids == nil {
		ids = []int64{}
	}
	return domain.Scope{Cohorts: ids}, nil
}

// joinCohort makes a new learner or instructor a member of cohortID with
// their role (other roles join no cohort), in the transaction creating
// them.
func (db *DB) joinCohort(tx *gorm.DB, cohortID, userID int64, role domain.Role) error {
	if role != domain.RoleLearner && role != domain.RoleInstructor {
		return nil
	}
	row := cohortMemberRow{CohortID: cohortID, UserID: userID, Role: string(role), CreatedAt: db.Now()}
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrForeignKeyViolated) {
			return domain.Errorf(domain.ENOTFOUND, "no cohort %d", cohortID)
		}
		return fmt.Errorf("add user %d to cohort %d: %w", userID, cohortID, err)
	}
	return nil
}

// inScope is the condition keeping a cohort id column (col) to the
// request's staff scope (domain.ScopeOf): "TRUE" with no arguments when
// ctx carries none or it is every cohort. Every staff read of
// submissions applies it, so an instructor reads nothing of a cohort
// they do not teach, whatever the handler.
func inScope(ctx context.Context, col string) (string, []any) {
	sc, ok := domain.ScopeOf(ctx)
	if !ok || sc.All {
		return "1 = 1", nil
	}
	if len(sc.Cohorts) == 0 {
		return "1 = 0", nil
	}
	return col + " IN ?", []any{sc.Cohorts}
}

// usersInScope is inScope for a user id column: the users who are
// members of a cohort of the scope.
func usersInScope(ctx context.Context, col string) (string, []any) {
	cond, args := inScope(ctx, "cohort_id")
	if args == nil {
		return cond, nil
	}
	out := col + " IN (SELECT user_id FROM cohort_members WHERE " + cond + ")"
	if sc, _ := domain.ScopeOf(ctx); sc.Has(defaultCohortID) {
		// A user in no cohort belongs to the default one.
		out = "(" + out + " OR " + col + " NOT IN (SELECT user_id FROM cohort_members))"
	}
	return out, args
}

// scoped is q restricted by inScope on col.
func scoped(ctx context.Context, q *gorm.DB, col string) *gorm.DB {
	cond, args := inScope(ctx, col)
	if args == nil && cond == "1 = 1" {
		return q
	}
	return q.Where(cond, args...)
}

// UserInScope reports whether userID is a member of a cohort of the
// request's staff scope (true when ctx carries none, or every cohort):
// staff acting on a learner by name (an extension, a release) reach only
// their cohorts' learners.
func (db *DB) UserInScope(ctx context.Context, userID int64) (bool, error) {
	cond, args := usersInScope(ctx, "id")
	if args == nil && cond == "1 = 1" {
		return true, nil
	}
	var n int64
	if err := db.gorm.WithContext(ctx).Model(&userRow{}).Where("id = ?", userID).Where(cond, args...).Count(&n).Error; err != nil {
		return false, fmt.Errorf("is user %d in scope: %w", userID, translate(err))
	}
	return n > 0, nil
}

// regradesInScope is the condition keeping the regrades (col, their id)
// whose every submission is in the request's staff scope: a regrade that
// reaches another cohort is not an instructor's to see or decide. ""
// when unrestricted.
func regradesInScope(ctx context.Context, col string) (string, []any) {
	cond, args := inScope(ctx, "s.cohort_id")
	if args == nil && cond == "1 = 1" {
		return "", nil
	}
	return "NOT EXISTS (SELECT 1 FROM regrade_items i JOIN submissions s ON s.id = i.submission_id WHERE i.regrade_id = " + col +
		" AND NOT (" + cond + "))", args
}
