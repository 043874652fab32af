package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestCohortsStore: the default cohort exists and new learners and
// instructors join it; EnsureCohort is idempotent; members are added,
// re-roled and removed; a user's memberships list the latest first; a
// submission's cohort follows the upload's slug when the learner is a
// member, else their latest cohort offering the exercise, else default;
// the staff scope is the cohorts an instructor teaches.
func TestCohortsStore(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		def, err := db.CohortBySlug(ctx, domain.DefaultCohort)
		if err != nil || def.ID != 1 {
			t.Fatalf("default cohort: %+v %v", def, err)
		}
		if _, err := db.CohortByID(ctx, 999); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing cohort by id: %v", err)
		}
		if _, err := db.CohortBySlug(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing cohort by slug: %v", err)
		}
		spring, err := db.EnsureCohort(ctx, "torchair-2027-spring", "TorchAir 2027 spring")
		if err != nil || spring.ID == def.ID || spring.Title != "TorchAir 2027 spring" {
			t.Fatalf("create cohort: %+v %v", spring, err)
		}
		again, err := db.EnsureCohort(ctx, "torchair-2027-spring", "other title")
		if err != nil || again.ID != spring.ID || again.Title != spring.Title {
			t.Fatalf("ensure again: %+v %v", again, err)
		}
		if _, err := db.EnsureCohort(ctx, "Bad Slug", ""); domain.ErrorCode(err) != domain.EINVALID {
			t.Fatalf("bad slug: %v", err)
		}
		byID, err := db.CohortByID(ctx, spring.ID)
		if err != nil || byID.Slug != spring.Slug {
			t.Fatalf("by id: %+v %v", byID, err)
		}

		ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
		ins, _, _ := db.CreateUser(ctx, "ins", domain.RoleInstructor)
		adm, _, _ := db.CreateUser(ctx, "adm", domain.RoleAdmin)
		members, err := db.CohortMembers(ctx, def.ID)
		if err != nil || len(members) != 2 || members[0].Name != "ada" || members[0].Role != domain.RoleLearner ||
			members[1].Name != "ins" || members[1].Role != domain.RoleInstructor {
			t.Fatalf("default members: %+v %v", members, err)
		}

		// Joined later, so the latest membership.
		db.Clock = func() time.Time { return time.Now().Add(time.Minute) }
		if err := db.AddCohortMember(ctx, spring.ID, ada.ID, domain.RoleInstructor); err != nil {
			t.Fatal(err)
		}
		if err := db.AddCohortMember(ctx, spring.ID, ada.ID, domain.RoleLearner); err != nil {
			t.Fatalf("re-add: %v", err)
		}
		if err := db.AddCohortMember(ctx, spring.ID, ada.ID, domain.RoleAdmin); domain.ErrorCode(err) != domain.EINVALID {
			t.Fatalf("admin member: %v", err)
		}
		if err := db.AddCohortMember(ctx, 999, ada.ID, domain.RoleLearner); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Fatalf("member of a missing cohort: %v", err)
		}
		ms, err := db.CohortsOf(ctx, ada.ID)
		if err != nil || len(ms) != 2 || ms[0].Cohort.ID != spring.ID || ms[0].Role != domain.RoleLearner || ms[1].Cohort.ID != def.ID {
			t.Fatalf("cohorts of ada: %+v %v", ms, err)
		}

		// The slug given wins when ada is a member.
		for _, c := range []struct {
			slug, exercise string
			want           int64
		}{
			{"default", "ch1", def.ID},
			{"", "ch1", spring.ID}, // latest, offers all
			{"torchair-2027-spring", "ch1", spring.ID},
			{"other", "ch1", spring.ID}, // not a member: ignored
		} {
			got, err := db.SubmissionCohort(ctx, ada.ID, c.exercise, c.slug)
			if err != nil || got != c.want {
				t.Fatalf("cohort of %q/%s: %d %v, want %d", c.slug, c.exercise, got, err, c.want)
			}
		}
		// Once spring offers only ch2, ch1 goes to default.
		due := time.Date(2027, 5, 1, 12, 0, 0, 0, time.UTC)
		if err := db.OfferExercise(ctx, domain.CohortExercise{CohortID: spring.ID, ExerciseID: "ch2", Deadline: &due}); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.SubmissionCohort(ctx, ada.ID, "ch1", ""); got != def.ID {
			t.Fatalf("ch1 not offered by spring: cohort %d", got)
		}
		if got, _ := db.SubmissionCohort(ctx, ada.ID, "ch2", ""); got != spring.ID {
			t.Fatalf("ch2 offered by spring: cohort %d", got)
		}
		if got, _ := db.SubmissionCohort(ctx, adm.ID, "ch2", ""); got != def.ID {
			t.Fatalf("no cohort: %d", got)
		}
		d, err := db.CohortDeadline(ctx, spring.ID, "ch2")
		if err != nil || d == nil || !d.Equal(due) {
			t.Fatalf("deadline: %v %v", d, err)
		}
		if d, err := db.CohortDeadline(ctx, spring.ID, "ch1"); err != nil || d != nil {
			t.Fatalf("no override: %v %v", d, err)
		}
		if err := db.OfferExercise(ctx, domain.CohortExercise{CohortID: spring.ID, ExerciseID: "ch2"}); err != nil {
			t.Fatal(err)
		}
		if xs, err := db.CohortExercises(ctx, spring.ID); err != nil || len(xs) != 1 || xs[0].Deadline != nil {
			t.Fatalf("offered: %+v %v", xs, err)
		}

		sc, err := db.StaffScope(ctx, ins)
		if err != nil || sc.All || len(sc.Cohorts) != 1 || sc.Cohorts[0] != def.ID {
			t.Fatalf("instructor scope: %+v %v", sc, err)
		}
		if sc, _ := db.StaffScope(ctx, adm); !sc.All {
			t.Fatalf("admin scope: %+v", sc)
		}
		if sc, _ := db.StaffScope(ctx, ada); sc.Staff() {
			t.Fatalf("learner scope: %+v", sc)
		}

		if err := db.RemoveCohortMember(ctx, spring.ID, ada.ID); err != nil {
			t.Fatal(err)
		}
		if ms, _ := db.CohortsOf(ctx, ada.ID); len(ms) != 1 {
			t.Fatalf("after removal: %+v", ms)
		}
		all, err := db.Cohorts(ctx)
		if err != nil || len(all) != 2 {
			t.Fatalf("cohorts: %+v %v", all, err)
		}
		u, _, err := db.CreateUserIn(ctx, "bea", domain.RoleLearner, spring.ID)
		if ms, _ := db.CohortsOf(ctx, u.ID); err != nil || len(ms) != 1 || ms[0].Cohort.ID != spring.ID {
			t.Fatalf("created in spring: %+v %v", ms, err)
		}
	})
}

// TestCohortsMigrationBackfill: migration 00029 on a database with users
// and submissions puts every learner and instructor into the default
// cohort with their role and every submission in it; a new submission
// carries the cohort intake gives it.
func TestCohortsMigrationBackfill(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
		ins, _, _ := db.CreateUser(ctx, "ins", domain.RoleInstructor)
		db.CreateUser(ctx, "adm", domain.RoleAdmin)
		old := saveGraded(t, db, ada.ID, "ch1", store.Grade{Score: 1, MaxScore: 1})
		// Undo 00029, as on a database made before it.
		for _, q := range []string{"DROP INDEX submissions_cohort", "ALTER TABLE submissions DROP COLUMN cohort_id",
			"DROP TABLE cohort_exercises", "DROP TABLE cohort_members", "DROP TABLE cohorts",
			"DELETE FROM schema_migrations WHERE version = 29"} {
			if err := db.RawExec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if v, err := db.Migrate(ctx); err != nil || len(v) != 1 || v[0] != 29 {
			t.Fatalf("migrate: %v %v", v, err)
		}
		members, err := db.CohortMembers(ctx, 1)
		if err != nil || len(members) != 2 || members[0].UserID != ada.ID || members[0].Role != domain.RoleLearner ||
			members[1].UserID != ins.ID || members[1].Role != domain.RoleInstructor {
			t.Fatalf("backfilled members: %+v %v", members, err)
		}
		c, err := db.CohortByID(ctx, 1)
		if err != nil || c.Slug != domain.DefaultCohort || c.CreatedAt.IsZero() {
			t.Fatalf("default cohort: %+v %v", c, err)
		}
		if s, err := db.Submission(ctx, old); err != nil || s.CohortID != 1 {
			t.Fatalf("old submission: %+v %v", s, err)
		}
		spring, _ := db.EnsureCohort(ctx, "spring", "")
		sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: ada.ID, ExerciseID: "ch1", ExerciseVersion: "v",
			Upload: []byte(`{"c":2}`), Rebuilt: []byte(`{"c":2}`), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1),
			CohortID: spring.ID})
		if err != nil || sub.CohortID != spring.ID {
			t.Fatalf("new submission: %+v %v", sub, err)
		}
		if got, err := db.Submission(ctx, sub.ID); err != nil || got.CohortID != spring.ID {
			t.Fatalf("read back: %+v %v", got, err)
		}
	})
}

// TestCohortsScopeInStore: a context carrying a staff scope restricts
// the store's staff reads to its cohorts (listings, by id, gradebook,
// users in scope); none, or every cohort, restricts nothing; an empty
// scope reads nothing.
func TestCohortsScopeInStore(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		a, _ := db.EnsureCohort(ctx, "a", "")
		b, _ := db.EnsureCohort(ctx, "b", "")
		ada, _, _ := db.CreateUserIn(ctx, "ada", domain.RoleLearner, a.ID)
		bob, _, _ := db.CreateUserIn(ctx, "bob", domain.RoleLearner, b.ID)
		subs := map[int64]string{}
		for _, u := range []domain.User{ada, bob} {
			c, _ := db.SubmissionCohort(ctx, u.ID, "ch1", "")
			sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v",
				Upload: []byte(`{"u":` + u.Name[:1] + `}`), Rebuilt: []byte(`{}`), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1), CohortID: c})
			if err != nil || sub.CohortID != c {
				t.Fatalf("submit as %s: %+v %v", u.Name, sub, err)
			}
			subs[u.ID] = sub.ID
		}
		inA := domain.WithScope(ctx, domain.Scope{Cohorts: []int64{a.ID}})
		list, err := db.Submissions(inA, domain.SubmissionFilter{})
		if err != nil || len(list) != 1 || list[0].UserID != ada.ID {
			t.Fatalf("scoped listing: %+v %v", list, err)
		}
		if _, err := db.Submission(inA, subs[bob.ID]); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Fatalf("another cohort's submission by id: %v", err)
		}
		if _, err := db.Submission(inA, subs[ada.ID]); err != nil {
			t.Fatalf("own cohort's submission: %v", err)
		}
		for _, c := range []struct {
			ctx  context.Context
			want int
		}{{ctx, 2}, {domain.WithScope(ctx, domain.Scope{All: true}), 2}, {domain.WithScope(ctx, domain.Scope{}), 0}} {
			if list, _ := db.Submissions(c.ctx, domain.SubmissionFilter{}); len(list) != c.want {
				t.Errorf("listing: %d, want %d", len(list), c.want)
			}
		}
		var names []string
		// Asking for every learner, a scoped reader still gets one cohort's.
		err = db.Gradebook(inA, domain.GradebookFilter{Exercises: []string{"ch1"}}, func(r domain.GradebookRow) error {
			names = append(names, r.Learner)
			return nil
		})
		if err != nil || len(names) != 1 || names[0] != "ada" {
			t.Fatalf("scoped gradebook: %v %v", names, err)
		}
		if ok, err := db.UserInScope(inA, bob.ID); err != nil || ok {
			t.Errorf("bob in a's scope: %v %v", ok, err)
		}
		if ok, _ := db.UserInScope(inA, ada.ID); !ok {
			t.Error("ada not in a's scope")
		}
	})
}
