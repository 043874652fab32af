package store_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

func TestWebSessions(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			db := storetest.Open(t, d)
			ctx := context.Background()
			u, _, err := db.CreateUser(ctx, "ada", domain.RoleInstructor)
			if err != nil {
				t.Fatal(err)
			}
			id, s, err := db.CreateWebSession(ctx, u.ID, time.Hour)
			if err != nil || len(id) < 40 || len(s.CSRFToken) < 32 || s.User.Role != domain.RoleInstructor {
				t.Fatalf("create: %q %+v %v", id, s, err)
			}
			got, err := db.WebSessionByID(ctx, id)
			if err != nil || got.User.ID != u.ID || got.User.Name != "ada" || got.User.Role != domain.RoleInstructor || got.CSRFToken != s.CSRFToken {
				t.Fatalf("lookup: %+v %v", got, err)
			}
			// Only the hash is stored.
			var n int64
			_ = db.RawScan(context.Background(), &n, "SELECT COUNT(*) FROM web_sessions WHERE id_hash = ?", id)
			if n != 0 {
				t.Fatal("the session id is stored in clear")
			}
			for _, bad := range []string{"", "nope", id + "x"} {
				if _, err := db.WebSessionByID(ctx, bad); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
					t.Errorf("session %q: %v", bad, err)
				}
			}
			// Expiry.
			short, _, err := db.CreateWebSession(ctx, u.ID, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if _, err := db.WebSessionByID(ctx, short); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
				t.Errorf("expired session: %v", err)
			}
			if removed, err := db.DeleteExpiredWebSessions(ctx); err != nil || removed != 1 {
				t.Errorf("delete expired: %d %v", removed, err)
			}
			// Revoking every token signs the browser out too.
			if err := db.RevokeTokens(ctx, u.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := db.WebSessionByID(ctx, id); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
				t.Errorf("session after revoking the tokens: %v", err)
			}
			tok, err := db.CreateToken(ctx, u.ID)
			if err != nil || tok == "" {
				t.Fatal(err)
			}
			if _, err := db.WebSessionByID(ctx, id); err != nil {
				t.Errorf("session with a fresh token: %v", err)
			}
			if err := db.DeleteWebSession(ctx, id); err != nil {
				t.Fatal(err)
			}
			if _, err := db.WebSessionByID(ctx, id); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
				t.Errorf("deleted session: %v", err)
			}
		})
	}
}

// gradeAt stores a graded submission with a score.
func gradeAt(t *testing.T, db *store.DB, userID int64, ex string, score, max float64) string {
	t.Helper()
	return saveGraded(t, db, userID, ex, store.Grade{Score: score, MaxScore: max, Cells: []domain.CellResult{
		{CellID: "q1", Verdict: map[bool]string{true: domain.VerdictPass, false: domain.VerdictMismatch}[score == max], Counted: true,
			Points: score, MaxPoints: max, Message: "m"}}})
}

// saveGraded stores userID's submission of ex with the grade g and returns
// its id; submissions saved one after another get distinct created_at, so
// "latest" is well defined.
func saveGraded(t *testing.T, db *store.DB, userID int64, ex string, g store.Grade) string {
	t.Helper()
	ctx := context.Background()
	sub, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: userID, ExerciseID: ex, ExerciseVersion: "v",
		Upload: []byte("{}"), Rebuilt: []byte("{}"), Job: jobs.New(db, nil).GradeJob(ex, domain.Requirement{}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	g.SubmissionID = sub.ID
	g.Status = scoring.Status(g.Cells)
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.SaveGrade(g) }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	return sub.ID
}

func TestGradebookAndStats(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ada, _, _ := db.CreateUser(ctx, "ada", domain.RoleLearner)
		bob, _, _ := db.CreateUser(ctx, "Bob_1%", domain.RoleLearner)
		db.CreateUser(ctx, "carol", domain.RoleLearner)
		db.CreateUser(ctx, "teacher", domain.RoleInstructor)
		gradeAt(t, db, ada.ID, "ch1", 3, 10)
		best := gradeAt(t, db, ada.ID, "ch1", 9, 10)
		latest := gradeAt(t, db, ada.ID, "ch1", 5, 10)
		bobCh2 := gradeAt(t, db, bob.ID, "ch2", 4, 4)
		gradeAt(t, db, bob.ID, "ch9", 1, 1) // not in the catalog: no row

		type row = domain.GradebookRow
		collect := func(f domain.GradebookFilter) []row {
			t.Helper()
			var out []row
			if err := db.Gradebook(ctx, f, func(r row) error { out = append(out, r); return nil }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		rows := collect(domain.GradebookFilter{Exercises: []string{"ch1", "ch2"}})
		rows0 := rows
		var got []string
		for _, r := range rows {
			got = append(got, r.Learner+"/"+r.ExerciseID)
		}
		// Names sort as the database collates them; every learner × exercise is there once.
		if len(rows) != 6 || !strings.Contains(strings.Join(got, ","), "ada/ch1,ada/ch2") {
			t.Fatalf("rows %v", got)
		}
		byKey := map[string]row{}
		for _, r := range rows {
			byKey[r.Learner+"/"+r.ExerciseID] = r
		}
		if r := byKey["ada/ch1"]; r.Score != 9 || r.MaxScore != 10 || r.Attempts != 3 || r.SubmissionID != best || r.Policy != domain.CountBest || r.GradedAt == nil {
			t.Errorf("ada/ch1 best: %+v", r)
		}
		if r := byKey["Bob_1%/ch2"]; r.Score != 4 || r.Attempts != 1 || r.SubmissionID != bobCh2 {
			t.Errorf("bob/ch2: %+v", r)
		}
		if r := byKey["carol/ch1"]; r.Attempts != 0 || r.SubmissionID != "" {
			t.Errorf("carol/ch1: %+v", r)
		}
		// The latest policy.
		rows = collect(domain.GradebookFilter{Exercises: []string{"ch1", "ch2"}, ExerciseID: "ch1", Learner: "ADA",
			Counts: func(string) string { return domain.CountLatest }})
		if len(rows) != 1 || rows[0].Score != 5 || rows[0].SubmissionID != latest || rows[0].Policy != domain.CountLatest || rows[0].Attempts != 3 {
			t.Errorf("latest: %+v", rows)
		}
		// LIKE wildcards in the filter match literally.
		if rows = collect(domain.GradebookFilter{Exercises: []string{"ch1"}, Learner: "_1%"}); len(rows) != 1 || rows[0].Learner != "Bob_1%" {
			t.Errorf("literal filter: %+v", rows)
		}
		if rows = collect(domain.GradebookFilter{Exercises: []string{"ch1"}, Learner: "%"}); len(rows) != 1 {
			t.Errorf("%% filter: %+v", rows)
		}

		// A page of learners: the first ones by name, every exercise of each.
		page := collect(domain.GradebookFilter{Exercises: []string{"ch1", "ch2"}, MaxLearners: 2})
		if len(page) != 4 || !reflect.DeepEqual(page, rows0[:4]) {
			t.Errorf("first 2 learners: %+v (all: %+v)", page, rows0)
		}
		if page = collect(domain.GradebookFilter{Exercises: []string{"ch1", "ch2"}, ExerciseID: "ch1", Learner: "a", MaxLearners: 1}); len(page) != 1 || page[0].Learner != "ada" || page[0].Attempts != 3 {
			t.Errorf("first learner matching 'a', ch1: %+v", page)
		}
		depth, err := db.PendingJobDepth(ctx)
		if err != nil || len(depth) != 2 || depth[domain.JobQueued] != 5 || depth[domain.JobLeased] != 0 {
			t.Errorf("pending depth: %v %v", depth, err)
		}

		// Dashboard statistics.
		days, err := db.SubmissionsPerDay(ctx, 14, time.UTC)
		if err != nil || len(days) != 14 || days[13].Count != 5 {
			t.Errorf("per day: %+v %v", days, err)
		}
		// Days of the viewer's zone: today's bucket opens at its midnight.
		for _, z := range []string{"Asia/Shanghai", "America/Los_Angeles"} {
			loc, _ := time.LoadLocation(z)
			days, err := db.SubmissionsPerDay(ctx, 14, loc)
			y, m, d := time.Now().In(loc).Date()
			if err != nil || len(days) != 14 || days[13].Count != 5 || !days[13].Day.Equal(time.Date(y, m, d, 0, 0, 0, 0, loc)) {
				t.Errorf("per day in %s: %+v %v", z, days, err)
			}
		}
		lat, err := db.GradingLatency(ctx, 100)
		if err != nil || lat.N != 5 || lat.P50 < 0 || lat.P99 < lat.P50 || lat.Max < lat.P99 {
			t.Errorf("latency: %+v %v", lat, err)
		}
		qs, err := db.QuestionStats(ctx, "ch1", "")
		if err != nil || len(qs) != 1 || qs[0].Total != 3 || qs[0].Passed != 0 {
			t.Errorf("question stats: %+v %v", qs, err)
		}
		fails, err := db.CommonFailures(ctx, "ch1", "", 5)
		if err != nil || len(fails) != 1 || fails[0].Count != 3 || fails[0].Verdict != domain.VerdictMismatch {
			t.Errorf("failures: %+v %v", fails, err)
		}
		// A learner's graded submissions of every exercise (policy
		// picks the one that counts from them).
		all, err := db.GradedSubmissions(ctx, "", ada.ID)
		top, n := 0.0, 0
		for _, s := range all {
			if s.ExerciseID == "ch1" {
				top, n = max(top, s.Score), n+1
			}
		}
		if err != nil || top != 9 || n != 3 {
			t.Errorf("learner's graded submissions: %+v %v", all, err)
		}
		latestSubs, err := db.LatestSubmissions(ctx, ada.ID)
		if err != nil || latestSubs["ch1"].ID != latest {
			t.Errorf("latest submissions: %+v %v", latestSubs, err)
		}
		recent, err := db.RecentSubmissions(ctx, 2)
		if err != nil || len(recent) != 2 || recent[0].UserName != "Bob_1%" {
			t.Errorf("recent: %+v %v", recent, err)
		}
		// Tokens and the admin's drain flag.
		toks, err := db.Tokens(ctx)
		if err != nil || len(toks) != 4 {
			t.Fatalf("tokens: %+v %v", toks, err)
		}
		if err := db.RevokeToken(ctx, toks[0].ID); err != nil {
			t.Fatal(err)
		}
		if err := db.RevokeToken(ctx, 99999); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Errorf("revoke unknown token: %v", err)
		}
		if err := db.SetRunnerDrain(ctx, "nope", true); domain.ErrorCode(err) != domain.ENOTFOUND {
			t.Errorf("drain unknown runner: %v", err)
		}
		// The queue history counts a submission still waiting, not the graded ones.
		if _, _, err := db.CreateSubmission(ctx, store.NewSubmission{UserID: bob.ID, ExerciseID: "ch1", ExerciseVersion: "v",
			Upload: []byte("{}"), Rebuilt: []byte("{} "), Job: jobs.New(db, nil).GradeJob("ch1", domain.Requirement{}, 1)}); err != nil {
			t.Fatal(err)
		}
		hist, err := db.QueueHistory(ctx, time.Hour, time.Minute)
		if err != nil || len(hist) < 60 || hist[len(hist)-1].Waiting != 1 || hist[0].Waiting != 0 {
			t.Errorf("queue history: %+v %v", hist, err)
		}
	})
}
