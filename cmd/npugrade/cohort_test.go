package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// TestCohortCLI: `npugrade cohort create/add/list/offer` and the cohort
// of `user add --cohort` and `user import` (a cohort column, --cohort for
// the rows without one); a missing cohort or a bad deadline is an error
// (exit 2), not a crash.
func TestCohortCLI(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dbURL := storetest.URL(t, d)
			cli := func(want int, args ...string) string {
				t.Helper()
				var out, errb bytes.Buffer
				if code := run(ctx, append(args, "--db", dbURL), &out, &errb); code != want {
					t.Fatalf("%v: exit %d, want %d: %s %s", args, code, want, out.String(), errb.String())
				}
				return out.String() + errb.String()
			}
			cli(0, "user", "add", "tom", "--role", "instructor")
			cli(0, "cohort", "create", "torchair-2027-spring", "--title", "TorchAir 2027 spring")
			cli(0, "user", "add", "ada", "--cohort", "torchair-2027-spring")
			cli(2, "user", "add", "eve", "--cohort", "nope")
			cli(0, "cohort", "add", "torchair-2027-spring", "tom", "--role", "instructor")
			if out := cli(2, "cohort", "add", "torchair-2027-spring", "ada", "--role", "instructor"); !strings.Contains(out, "only an instructor account") {
				t.Errorf("a learner as instructor: %s", out)
			}
			cli(2, "cohort", "add", "nope", "ada")
			cli(0, "cohort", "offer", "torchair-2027-spring", "ch1", "--deadline", "2027-04-01T18:00:00+08:00")
			cli(2, "cohort", "offer", "torchair-2027-spring", "ch1", "--deadline", "soon")

			roster := filepath.Join(t.TempDir(), "roster.csv")
			_ = os.WriteFile(roster, []byte("name,student_number,role,cohort\nBo,S1,learner,torchair-2027-spring\nCy,S2,learner,\n"), 0o644)
			cli(0, "cohort", "create", "autumn")
			cli(0, "user", "import", roster, "--cohort", "autumn")
			bad := filepath.Join(t.TempDir(), "bad.csv")
			_ = os.WriteFile(bad, []byte("name,student_number,cohort\nDi,S3,missing\n"), 0o644)
			cli(2, "user", "import", bad)

			out := cli(0, "cohort", "list")
			for _, want := range []string{"default\tDefault\t0 learners\t1 instructors", "torchair-2027-spring\tTorchAir 2027 spring\t2 learners\t1 instructors", "autumn\t\t1 learners\t0 instructors"} {
				if !strings.Contains(out, want) {
					t.Errorf("list lacks %q:\n%s", want, out)
				}
			}
			db, err := store.OpenExisting(ctx, dbURL)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			c, _ := db.CohortBySlug(ctx, "torchair-2027-spring")
			due, err := db.CohortDeadline(ctx, c.ID, "ch1")
			if err != nil || due == nil || !due.Equal(time.Date(2027, 4, 1, 10, 0, 0, 0, time.UTC)) {
				t.Errorf("deadline: %v %v", due, err)
			}
			if _, err := db.UserByName(ctx, "S3"); err == nil {
				t.Error("a roster naming a missing cohort imported someone")
			}
			// The cohort's own late penalty and cap; bad ones are refused,
			// every problem named.
			out = cli(2, "cohort", "offer", "autumn", "ch2", "--late-penalty", `[{"after": "1h", "multiplier": 3}]`, "--max-submissions", "-1")
			for _, want := range []string{"late penalty step 1", `--max-submissions: "-1"`} {
				if !strings.Contains(out, want) {
					t.Errorf("a bad offer's error lacks %q:\n%s", want, out)
				}
			}
			cli(0, "cohort", "offer", "autumn", "ch2", "--late-penalty", `[{"after": "24h", "multiplier": 0.5}]`, "--max-submissions", "3")
			a, _ := db.CohortBySlug(ctx, "autumn")
			if o, err := db.CohortOffer(ctx, a.ID, "ch2"); err != nil || o == nil || o.MaxSubmissions == nil || *o.MaxSubmissions != 3 ||
				!strings.Contains(string(o.LatePenalty), `"multiplier": 0.5`) || o.Deadline != nil {
				t.Errorf("autumn's ch2: %+v %v", o, err)
			}
		})
	}
}
