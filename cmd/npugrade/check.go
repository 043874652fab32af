package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/npugrade/npugrade/internal/check"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
)

func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand(ctx, "check", "", "Execute the answers, starters and fixtures of every exercise and compare them with the\nreference outputs (no server). Exit 0 when all pass, 1 on a mismatch.",
		envSandbox, envGitHub, envGitHubSummary)
	profile := fs.String("profile", "cpu", "runner profile whose reference outputs are compared (cpu here; npu-a2, npu-a3, npu-950 on NPU hosts)")
	exDir := fs.String("exercises", "exercises", "exercises directory")
	ansDir := fs.String("answers", "answers", "answers directory")
	junit := fs.String("junit", "", "write JUnit XML to this file")
	rerun := fs.IntMin("rerun", 0, 0, "execute each answer N times and list cells whose outputs change")
	update := fs.Bool("update-reference", false, "record the answers' outputs as this profile's reference (review the diff before committing)")
	only := fs.String("only", "", "comma-separated exercise ids (default: all)")
	jobs := fs.IntMin("jobs", 1, 1, "notebooks executed at once")
	cellTimeout := fs.DurationMin("cell-timeout", 0, 0, "per-cell timeout (default: each exercise's)")
	jobTimeout := fs.DurationMin("job-timeout", 5*time.Minute, time.Second, "limit for one notebook")
	jupyter := fs.String("jupyter", "", "jupyter command")
	seed := fs.String("seed", "", "probe seed of every notebook, one of the exercise's pool (default: each draws one by its name); a submission's page shows the seed it was graded with")
	var notebooks []string
	fs.Func("notebook", "grade this learner's notebook of the --only exercise as the server would, with no expectations, and list its cells (repeatable); only the notebooks given run", func(v string) error {
		notebooks = append(notebooks, v)
		return nil
	})
	envFor := envFlags(fs)
	setupExecutor := executorFlags(fs, envFor)
	warmPool := warmFlags(fs.FlagSet)
	if _, code, ok := fs.parse(args, 0, 0, stdout, stderr); !ok {
		return code
	}
	w := fs.words()
	cat, err := exercise.Load(*exDir, *ansDir)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade check:", sysProblem(w, err))
		return exitError
	}
	// A broken exercise is reported and fails the run; the others are checked.
	broken := cat.Err()
	if broken != nil && w.lang != langZH {
		fmt.Fprintln(stderr, "npugrade check:", broken)
	} else {
		for _, b := range cat.Broken() {
			fmt.Fprintln(stderr, "npugrade check:", w.F("exercise %s: %s", b.ID, w.flagProblem(b.Err)))
		}
	}
	onlyIDs, unknown := onlyExercises(w, *only, cat)
	probeSeed, problems := seedFlag(w, *seed)
	if len(notebooks) > 0 && len(onlyIDs) != 1 {
		problems = append(problems, w.T("--notebook needs --only naming the one exercise the notebooks are for"))
	}
	if problems = append(unknown, problems...); len(problems) > 0 {
		return fs.usageError(stderr, problems...)
	}
	ex := &execution.Executor{Jupyter: *jupyter, Profile: *profile, Match: domain.CPUMatcher}
	if *profile != "cpu" {
		ex.Match = domain.ProfileMatcher(*profile)
	}
	if err := setupExecutor(ctx, ex, stderr); err != nil {
		fmt.Fprintln(stderr, "npugrade check:", err)
		return exitError
	}
	if _, refusal, err := checkedEnvironment(ctx, w, *profile, envFor, ex, cat, onlyIDs); err != nil || refusal != "" {
		fmt.Fprintln(stderr, "npugrade check:", refusal+errText(err))
		return exitError
	}
	exec, stopWarm := warmPool(ex, *jobs, nil)
	defer stopWarm()
	opt := check.Options{Profile: *profile, Executor: exec, Match: ex.Match, CellTimeout: *cellTimeout, JobTimeout: *jobTimeout,
		UpdateReference: *update, Rerun: *rerun, Jobs: *jobs, Progress: stdout, Only: onlyIDs, Seed: probeSeed, Notebooks: notebooks, Words: w}
	rep, err := check.Run(ctx, cat, opt)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade check:", w.flagProblem(err))
		return exitError
	}
	fmt.Fprintln(stdout)
	rep.SummaryIn(stdout, w)
	if *junit != "" {
		f, err := os.Create(*junit)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade check:", err)
			return exitError
		}
		werr := rep.WriteJUnit(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			fmt.Fprintln(stderr, "npugrade check:", werr)
			return exitError
		}
	}
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		if err := rep.WriteGitHub(stdout); err != nil {
			fmt.Fprintln(stderr, "npugrade check:", err)
		}
	}
	if code := rep.ExitCode(); code != exitOK || broken == nil {
		return code
	}
	return exitMismatch
}

// onlyExercises turns --only into a set of exercise ids and lists the ids
// the catalog does not have: a typo must not check nothing and pass.
func onlyExercises(w words, only string, cat *exercise.Catalog) (ids map[string]bool, unknown []string) {
	ids = map[string]bool{}
	for _, id := range strings.Split(only, ",") {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		if _, err := cat.Get(id); err != nil {
			known := []string{}
			for _, ex := range cat.List() {
				known = append(known, ex.ID)
			}
			unknown = append(unknown, w.F("--only: unknown exercise %q (known: %s)", id, strings.Join(known, ", ")))
			continue
		}
		ids[id] = true
	}
	return ids, unknown
}

// seedFlag parses --seed: empty is none.
func seedFlag(w words, v string) (*int64, []string) {
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, []string{w.F("--seed: %q is not an integer", v)}
	}
	return &n, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
