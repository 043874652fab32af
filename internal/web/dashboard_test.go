package web_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/jobs"
	"github.com/npugrade/npugrade/internal/scoring"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return s
}

// TestDashboardCharts: every chart label is at least 11 px and the
// charts name their axes with units; the queue shows what waits now and
// over the last 24 hours (not all-time job states); the per-question
// pass rates list the hardest question first.
func TestDashboardCharts(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, d)
			teacher := e.user(t, "teacher", domain.RoleInstructor)
			e.user(t, "ada", domain.RoleLearner)
			ctx := context.Background()
			u, _ := e.db.UserByName(ctx, "ada")
			q := jobs.New(e.db, nil)
			var ids []string
			for range 3 {
				sub, _, err := e.db.CreateSubmission(ctx, store.NewSubmission{UserID: u.ID, ExerciseID: "ch1", ExerciseVersion: "v",
					Upload: []byte("{}"), Rebuilt: []byte("{}"), Job: q.GradeJob("ch1", domain.Requirement{}, 1)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, sub.ID)
			}
			// Two graded: q1 passes both times, q2 once, q3 never.
			for i, id := range ids[:2] {
				cells := []domain.CellResult{
					{CellID: "q1", Verdict: domain.VerdictPass, Points: 1, MaxPoints: 1, Counted: true},
					{CellID: "q2", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true},
					{CellID: "q3", Verdict: domain.VerdictMismatch, MaxPoints: 1, Counted: true},
				}
				if i == 0 {
					cells[1].Verdict, cells[1].Points = domain.VerdictPass, 1
				}
				err := e.db.InTx(context.Background(), func(tx *store.Tx) error {
					return tx.SaveGrade(store.Grade{Status: scoring.Status(cells), SubmissionID: id, Score: 1, MaxScore: 3, Cells: cells})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			c := client()
			e.signIn(t, c, teacher)
			_, dash := do(t, c, "GET", e.srv.URL+"/dashboard?lang=en", nil, nil)
			_, stats := do(t, c, "GET", e.srv.URL+"/dashboard/exercises/ch1?lang=en", nil, nil)
			for name, page := range map[string]string{"dashboard": dash, "exercise statistics": stats} {
				sizes := regexp.MustCompile(`font-size="([0-9.]+)"`).FindAllStringSubmatch(page, -1)
				if len(sizes) < 10 {
					t.Errorf("%s: only %d chart labels", name, len(sizes))
				}
				for _, m := range sizes {
					if v, _ := strconv.ParseFloat(m[1], 64); v < 11 {
						t.Errorf("%s: a chart label of %s px", name, m[1])
					}
				}
				// The charts scale to their cards: a viewBox about as wide as
				// a phone's card keeps the labels near their size there.
				for _, m := range regexp.MustCompile(`<svg class="chart"([^>]*)>`).FindAllStringSubmatch(page, -1) {
					vb := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) [0-9.]+"`).FindStringSubmatch(m[1])
					if vb == nil || regexp.MustCompile(` (width|height)=`).MatchString(m[1]) {
						t.Errorf("%s: a chart of fixed size: %s", name, m[0])
					} else if w, _ := strconv.ParseFloat(vb[1], 64); w > 400 {
						t.Errorf("%s: a chart %g units wide shrinks its labels on a phone", name, w)
					}
				}
			}
			for _, want := range []string{"day (UTC, month-day)", "submissions waiting", "hour (UTC)", `id="queue-now"`,
				"Submissions waiting for a runner, last 24 hours"} {
				if !strings.Contains(dash, want) {
					t.Errorf("dashboard lacks %q", want)
				}
			}
			// Three jobs wait now; of the submissions, one was never
			// graded, so the last hourly point of the chart shows 1 waiting.
			if now := between(dash, `id="queue-now"`, "</table>"); !strings.Contains(now, "waiting</th><td>3</td>") {
				t.Errorf("queue now: %s", now)
			}
			queue24 := between(dash, "Submissions waiting for a runner, last 24 hours", "</svg>")
			if n := strings.Count(queue24, "<rect"); n != 25 {
				t.Errorf("the 24-hour queue chart has %d points, want 25", n)
			}
			if !strings.HasSuffix(strings.TrimSpace(between(queue24[strings.LastIndex(queue24, "<title>"):], "<title>", "</title>")), ": 1") {
				t.Errorf("the last point of the queue chart does not show the waiting submission")
			}
			if strings.Contains(dash, ">succeeded<") {
				t.Error("the queue still shows all-time job states")
			}
			for _, want := range []string{"counted score (% of the maximum)", "learners", "hardest first"} {
				if !strings.Contains(stats, want) {
					t.Errorf("exercise statistics lack %q", want)
				}
			}
			i3, i2, i1 := strings.Index(stats, ">q3<"), strings.Index(stats, ">q2<"), strings.Index(stats, ">q1<")
			if i3 < 0 || !(i3 < i2 && i2 < i1) {
				t.Errorf("pass rates not hardest first (q3 %d, q2 %d, q1 %d)", i3, i2, i1)
			}
		})
	}
}
