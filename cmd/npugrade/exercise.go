package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/npugrade/npugrade/internal/exercise"
)

// cmdExercise regenerates (or, with --check, verifies) the committed
// starter notebooks from the answers.
func cmdExercise(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	w := wordsOf(ctx)
	groupUsage := w.F("usage: %s", "npugrade exercise starter [--check] [--exercises DIR] [--answers DIR]\n       "+
		strings.TrimPrefix(importUsage, "usage: ")) + "\n\n" + w.T("Run 'npugrade exercise <subcommand> --help' for its flags.") + "\n"
	if len(args) == 0 {
		fmt.Fprint(stderr, w.T("npugrade exercise: missing subcommand (starter or import)")+"\n\n"+groupUsage)
		return exitError
	}
	switch args[0] {
	case "import":
		return cmdExerciseImport(ctx, args[1:], stdout, stderr)
	case "starter":
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, groupUsage)
		return exitOK
	default:
		fmt.Fprint(stderr, w.F("npugrade exercise: unknown subcommand %q\n\n", args[0])+groupUsage)
		return exitError
	}
	fs := newCommand(ctx, "exercise starter", "", "Regenerate the committed starter notebooks from the answers (--check: only report drift, exit 1 if any).")
	exDir := fs.String("exercises", "exercises", "exercises directory")
	ansDir := fs.String("answers", "answers", "answers directory")
	check := fs.Bool("check", false, "only report starters that differ from their answer; exit 1 if any")
	if _, code, ok := fs.parse(args[1:], 0, 0, stdout, stderr); !ok {
		return code
	}
	cat, err := exercise.Load(*exDir, *ansDir)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade exercise:", sysProblem(w, err))
		return exitError
	}
	if err := cat.Err(); err != nil {
		fmt.Fprintln(stderr, "npugrade exercise:", err)
		defer func() { code = exitError }()
	}
	drift := 0
	for _, ex := range cat.List() {
		cur, _ := os.ReadFile(ex.StarterPath())
		if bytes.Equal(cur, ex.StarterBytes) {
			fmt.Fprint(stdout, w.F("%s: %s is up to date\n", ex.ID, ex.StarterPath()))
			continue
		}
		if *check {
			fmt.Fprint(stdout, w.F("%s: %s differs from the starter generated from the answer\n", ex.ID, ex.StarterPath()))
			drift++
			continue
		}
		if err := os.WriteFile(ex.StarterPath(), ex.StarterBytes, 0o644); err != nil {
			fmt.Fprintln(stderr, "npugrade exercise:", sysProblem(w, err))
			return exitError
		}
		fmt.Fprint(stdout, w.F("%s: wrote %s\n", ex.ID, ex.StarterPath()))
	}
	if drift > 0 {
		return exitMismatch
	}
	return exitOK
}
