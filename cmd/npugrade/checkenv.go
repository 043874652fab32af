package main

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/envs"
	"github.com/npugrade/npugrade/internal/execution"
	"github.com/npugrade/npugrade/internal/exercise"
)

// checkedEnvironment probes the environment `check` executes in (the
// grading environment --env picks, inside the sandbox, or the host's
// Python) and says why it does not satisfy the selected exercises'
// `requires`, "" when it does. Executing an exercise elsewhere would
// compare, or record with --update-reference, outputs of a PyTorch the
// exercise was not written for.
func checkedEnvironment(ctx context.Context, w words, profile string, envFor envChooser, ex *execution.Executor,
	cat *exercise.Catalog, only map[string]bool) (envprobe.Report, string, error) {
	env, err := envFor(profile, io.Discard)
	if err != nil {
		return envprobe.Report{}, "", err
	}
	var rep envprobe.Report
	if sb := sandboxConfig(ex); env != nil && sb != nil {
		rep, err = envs.Probe(ctx, *env, *sb, profile == envprobe.ProfileCPU)
	} else {
		rep, err = envprobe.Collect(ctx, envprobe.Options{CPUOnly: profile == envprobe.ProfileCPU})
		rep.Environment = envs.Host
	}
	if err != nil {
		return rep, "", w.Errorf("probe the environment the notebooks run in: %s", w.flagProblem(err))
	}
	var bad []string
	for _, e := range cat.List() {
		if len(only) > 0 && !only[e.ID] {
			continue
		}
		if ok, why := rep.Satisfies(e.Requires); !ok {
			bad = append(bad, e.ID+": "+w.flagProblem(errors.New(why)))
		}
	}
	if len(bad) == 0 {
		return rep, "", nil
	}
	where := w.T("the host's Python")
	if rep.Environment != envs.Host {
		where = w.F("the grading environment %s", rep.Environment)
	}
	return rep, w.F("refusing to check in %s (Python %s, torch %s), which does not satisfy what the exercises require:\n  %s\n"+
		"build the environment they are written for with `%s` (then --env auto or --env cpu picks it), or check only the others with --only",
		where, orDash(rep.Python), orDash(rep.Torch), strings.Join(bad, "\n  "), envFix), nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
