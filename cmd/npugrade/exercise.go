package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/npugrade/npugrade/internal/exercise"
	"github.com/npugrade/npugrade/internal/importer"
)

// cmdExercise regenerates (or, with --check, verifies) the committed
// starter notebooks from the answers.
func cmdExercise(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	if len(args) > 0 && args[0] == "import" {
		return cmdExerciseImport(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "starter" {
		fmt.Fprintln(stderr, "usage: npugrade exercise starter [--check] [--exercises DIR] [--answers DIR]\n       npugrade exercise import [-o OUT] NOTEBOOK")
		return exitError
	}
	fs := flag.NewFlagSet("exercise starter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	exDir := fs.String("exercises", "exercises", "exercises directory")
	ansDir := fs.String("answers", "answers", "answers directory")
	check := fs.Bool("check", false, "only report starters that differ from their answer; exit 1 if any")
	if err := fs.Parse(args[1:]); err != nil {
		return exitError
	}
	cat, err := exercise.Load(*exDir, *ansDir)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade exercise:", err)
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
			fmt.Fprintf(stdout, "%s: %s is up to date\n", ex.ID, ex.StarterPath())
			continue
		}
		if *check {
			fmt.Fprintf(stdout, "%s: %s differs from the starter generated from the answer\n", ex.ID, ex.StarterPath())
			drift++
			continue
		}
		if err := os.WriteFile(ex.StarterPath(), ex.StarterBytes, 0o644); err != nil {
			fmt.Fprintln(stderr, "npugrade exercise:", err)
			return exitError
		}
		fmt.Fprintf(stdout, "%s: wrote %s\n", ex.ID, ex.StarterPath())
	}
	if drift > 0 {
		return exitMismatch
	}
	return exitOK
}

// cmdExerciseImport converts an nbgrader, nbval, nbclient, papermill or
// quiz-style notebook into one with metadata.grader, and says what each
// cell became (on stderr).
func cmdExerciseImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exercise import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "write the converted notebook here (default: stdout)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: npugrade exercise import [-o OUT] NOTEBOOK")
		return exitError
	}
	raw, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "npugrade exercise import:", err)
		return exitError
	}
	converted, rep, err := importer.ImportBytes(raw)
	if err != nil {
		fmt.Fprintf(stderr, "npugrade exercise import: %s: %v\n", fs.Arg(0), err)
		return exitError
	}
	fmt.Fprintf(stderr, "formats: %v\n", rep.Formats)
	for _, n := range rep.Notes {
		fmt.Fprintln(stderr, "  "+n)
	}
	if *out == "" {
		_, _ = stdout.Write(converted)
		return 0
	}
	if err := os.WriteFile(*out, converted, 0o644); err != nil {
		fmt.Fprintln(stderr, "npugrade exercise import:", err)
		return exitError
	}
	return 0
}
