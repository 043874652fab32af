package main

import (
	"log/slog"
	"strings"

	"github.com/npugrade/npugrade/internal/envprobe"
	"github.com/npugrade/npugrade/internal/exercise"
)

// envFix is what makes a host's runner satisfy the shipped exercises.
const envFix = "npugrade env build cpu"

// warnUnsatisfied says at start which exercises the in-process runner's
// environment does not satisfy (their submissions wait for another
// runner), and when it satisfies none, names the fix in the same line.
func warnUnsatisfied(log *slog.Logger, cat *exercise.Catalog, rep envprobe.Report) {
	var ids, reasons []string
	total := 0
	for _, ex := range cat.List() {
		total++
		if ok, why := rep.Satisfies(ex.Requires); !ok {
			ids = append(ids, ex.ID)
			if len(reasons) == 0 || reasons[len(reasons)-1] != why {
				reasons = append(reasons, why)
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	attrs := []any{"environment", rep.Environment, "python", rep.Python, "torch", rep.Torch,
		"exercises", strings.Join(ids, ","), "why", strings.Join(reasons, "; ")}
	if len(ids) == total {
		log.Warn("the local runner's environment satisfies no exercise: it grades nothing, and submissions wait for a runner that does; fix: "+envFix+" (then restart; --env auto uses it)", attrs...)
		return
	}
	log.Warn("the local runner's environment does not satisfy some exercises: their submissions wait for a runner that does; fix: "+envFix, attrs...)
}
