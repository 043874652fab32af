package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/npugrade/npugrade/internal/accounts"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/grade"
	"github.com/npugrade/npugrade/internal/policy"
	"github.com/npugrade/npugrade/internal/store"
)

const cohortUsage = `usage: npugrade cohort create SLUG [--title T] [--db URL]
       npugrade cohort add SLUG USER [--role learner|instructor] [--db URL]
       npugrade cohort list [--db URL]
       npugrade cohort offer SLUG EXERCISE [--deadline RFC3339] [--late-penalty JSON] [--max-submissions N] [--db URL]

Manage cohorts (course instances such as torchair-2027-spring): the learners
and instructors in each, the exercises offered and their deadlines. An
instructor sees the submissions, learners and gradebook of the cohorts they
are an instructor of; an admin sees every cohort. Every existing user and
submission is in the cohort "default".

Run 'npugrade cohort <subcommand> --help' for its flags.

environment:
  NPUGRADE_DB            database URL, the default of --db
`

func cmdCohort(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	w := wordsOf(ctx)
	if len(args) == 0 {
		fmt.Fprintln(stderr, w.T("npugrade cohort: missing subcommand (create, add, list or offer)"))
		fmt.Fprint(stderr, "\n"+w.T(cohortUsage))
		return exitError
	}
	sub := args[0]
	about := map[string]string{
		"create": "Create a cohort (an existing one is left as it is).",
		"add":    "Put a user into a cohort as a learner or an instructor (again: change the role).",
		"list":   "List cohorts: slug, title, members.",
		"offer":  "Offer an exercise in a cohort, with the cohort's own deadline, late penalty and cap on submissions (each left out: the exercise's).",
	}
	argNames := map[string]string{"create": "SLUG", "add": "SLUG USER", "list": "", "offer": "SLUG EXERCISE"}
	nArgs := map[string]int{"create": 1, "add": 2, "list": 0, "offer": 2}
	switch {
	case sub == "-h" || sub == "-help" || sub == "--help" || sub == "help":
		fmt.Fprint(stdout, w.T(cohortUsage))
		return exitOK
	case about[sub] == "":
		fmt.Fprint(stderr, w.F("npugrade cohort: unknown subcommand %q\n\n", sub)+w.T(cohortUsage))
		return exitError
	}
	fs := newCommand(ctx, "cohort "+sub, argNames[sub], about[sub], envDB)
	dbURL := fs.String("db", envOr("NPUGRADE_DB", ""), "database URL of the server: sqlite:///path/file.db, sqlite://relative.db or postgres://…")
	var title, role *string
	var offer func() (domain.CohortExercise, []string)
	switch sub {
	case "create":
		title = fs.String("title", "", "the cohort's title, shown on the pages")
	case "add":
		role = fs.Choice("role", string(domain.RoleLearner), []string{string(domain.RoleLearner), string(domain.RoleInstructor)}, "learner or instructor")
	case "offer":
		offer = offerFlags(fs, w)
	}
	pos, code, ok := fs.parse(args[1:], nArgs[sub], nArgs[sub], stdout, stderr)
	if !ok {
		return code
	}
	if *dbURL == "" {
		return fs.usageError(stderr, w.T("no database: pass --db URL or set NPUGRADE_DB to the server's database"))
	}
	var o domain.CohortExercise
	if offer != nil {
		var problems []string
		if o, problems = offer(); len(problems) > 0 {
			return fs.usageError(stderr, problems...)
		}
		o.ExerciseID = pos[1]
	}
	db, err := store.OpenExisting(ctx, *dbURL)
	if err != nil {
		fmt.Fprintf(stderr, "npugrade cohort %s: %s\n", sub, dbProblem(w, err))
		return exitError
	}
	defer db.Close()
	svc := &accounts.Cohorts{DB: db}
	switch sub {
	case "create":
		err = cohortCreate(ctx, svc, pos[0], *title, w, stdout)
	case "add":
		var m domain.CohortMember
		if m, err = svc.SetMember(ctx, domain.User{}, pos[0], pos[1], domain.Role(*role)); err == nil {
			if m.Role == domain.RoleInstructor {
				fmt.Fprint(stdout, w.F("%s is an instructor of %s\n", m.Name, pos[0]))
			} else {
				fmt.Fprint(stdout, w.F("%s is a learner of %s\n", m.Name, pos[0]))
			}
		}
	case "list":
		err = cohortList(ctx, db, svc, w, stdout)
	case "offer":
		if err = svc.Offer(ctx, domain.User{}, pos[0], o); err == nil {
			if o.Deadline != nil {
				fmt.Fprint(stdout, w.F("%s offers %s, due %s\n", pos[0], pos[1], o.Deadline.UTC().Format(time.RFC3339)))
			} else {
				fmt.Fprint(stdout, w.F("%s offers %s, the exercise's deadline\n", pos[0], pos[1]))
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "npugrade cohort %s: %s\n", sub, dbProblem(w, err))
		return exitError
	}
	return exitOK
}

// offerFlags declares cohort offer's policy flags; the function it returns
// reads them into an offer, with every problem.
func offerFlags(fs *command, w words) func() (domain.CohortExercise, []string) {
	deadline := fs.String("deadline", "", "the cohort's own deadline, RFC 3339 (2027-04-01T18:00:00+08:00); empty: the exercise's")
	late := fs.String("late-penalty", "", `the cohort's own late-penalty steps, as exercise.json's late_penalty ('[{"after": "24h", "multiplier": 0.5}]'; '[]': none); empty: the exercise's`)
	maxSubs := fs.String("max-submissions", "", "the cohort's own cap on graded submissions per learner (0: none); empty: the exercise's")
	return func() (domain.CohortExercise, []string) {
		var o domain.CohortExercise
		var problems []string
		if *deadline != "" {
			d, err := grade.ParseDeadline(*deadline)
			if err != nil {
				problems = append(problems, "--deadline: "+dbProblem(w, err))
			}
			o.Deadline = &d
		}
		if *late != "" {
			if _, err := policy.CohortLatePenalty(json.RawMessage(*late)); err != nil {
				problems = append(problems, "--late-penalty: "+dbProblem(w, err))
				for _, p := range domain.ErrorProblems(err) {
					problems = append(problems, w.Problem(p))
				}
			}
			o.LatePenalty = json.RawMessage(*late)
		}
		if *maxSubs != "" {
			n, err := strconv.Atoi(*maxSubs)
			if err != nil || n < 0 {
				problems = append(problems, w.F("--max-submissions: %q is not a count (0 or more)", *maxSubs))
			}
			o.MaxSubmissions = &n
		}
		return o, problems
	}
}

func cohortCreate(ctx context.Context, svc *accounts.Cohorts, slug, title string, w words, stdout io.Writer) error {
	c, err := svc.Create(ctx, domain.User{}, slug, title)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, w.F("cohort %s (id %d) %q\n", c.Slug, c.ID, c.Title))
	return nil
}

func cohortList(ctx context.Context, db *store.DB, svc *accounts.Cohorts, w words, stdout io.Writer) error {
	list, err := db.Cohorts(ctx)
	if err != nil {
		return err
	}
	for _, c := range list {
		members, err := svc.Members(ctx, c.Slug)
		if err != nil {
			return err
		}
		learners, staff := 0, 0
		for _, m := range members {
			if m.Role == domain.RoleInstructor {
				staff++
			} else {
				learners++
			}
		}
		// A table: its English columns keep their form for scripts.
		fmt.Fprint(stdout, w.F("%s\t%s\t%d learners\t%d instructors\n", c.Slug, c.Title, learners, staff))
	}
	return nil
}
