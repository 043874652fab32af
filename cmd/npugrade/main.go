// Command npugrade is the whole grading service in one binary:
//
//	npugrade serve     the HTTP server, with in-process runner slots
//	npugrade runner    a remote runner daemon (or --probe: print the environment report)
//	npugrade check     regression-test answer notebooks, starters and fixtures (no server)
//	npugrade submit    upload a notebook and wait for its score
//	npugrade login     sign in with a code approved in the browser; submit uses the saved token
//	npugrade user      manage users and tokens
//	npugrade migrate   apply database migrations
//	npugrade exercise  exercise tooling (generate starters, import notebooks)
//	npugrade env       grading environments: build cpu, import NPU images, list
//	npugrade lti       LTI 1.3: register LMS platforms, rotate the signing key
//
// Every command refuses unknown flags, stray words and invalid values
// (exit 2 with its usage) and prints its flags and environment variables
// with --help (exit 0).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/npugrade/npugrade/internal/buildinfo"
)

// Exit codes.
const (
	exitOK       = 0
	exitMismatch = 1
	exitError    = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ownProcess = true
	code := run(withLang(ctx, langFromEnv(os.Getenv)), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args in ctx's language (English unless
// withLang chose another), or the one --lang names.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if lang, ok := langArg(args); ok {
		ctx = withLang(ctx, lang)
	}
	say := wordsOf(ctx)
	// A --lang before the command is the global one.
	if len(args) > 0 && (args[0] == "--lang" || args[0] == "-lang" || strings.HasPrefix(args[0], "--lang=") || strings.HasPrefix(args[0], "-lang=")) {
		_, v, ok := strings.Cut(args[0], "=")
		args = args[1:]
		if !ok && len(args) > 0 {
			v, args = args[0], args[1:]
		}
		if v != langZH && v != langEN {
			fmt.Fprint(stderr, say.F("npugrade: --lang: %q is not zh-CN or en\n\n", v))
			usage(stderr, say)
			return exitError
		}
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, say.T("npugrade: missing command"))
		fmt.Fprintln(stderr)
		usage(stderr, say)
		return exitError
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"serve":    cmdServe,
		"runner":   cmdRunner,
		"check":    cmdCheck,
		"submit":   cmdSubmit,
		"login":    cmdLogin,
		"user":     cmdUser,
		"cohort":   cmdCohort,
		"migrate":  cmdMigrate,
		"exercise": cmdExercise,
		"env":      cmdEnv,
		"lti":      cmdLTI,
	}
	f, ok := cmds[args[0]]
	if !ok {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			usage(stdout, say)
			return exitOK
		case "-version", "--version", "version":
			fmt.Fprintln(stdout, "npugrade", buildinfo.Version())
			return exitOK
		}
		fmt.Fprint(stderr, say.F("npugrade: unknown command %q\n\n", args[0]))
		usage(stderr, say)
		return exitError
	}
	return f(ctx, args[1:], stdout, stderr)
}

// mainUsage is npugrade help.
const mainUsage = `usage: npugrade <command> [flags]
       npugrade --version

commands:
  serve     run the server (HTTP API, pages, in-process runner slots)
  runner    run a remote runner against a server; --probe prints the environment report
  check     execute answers, starters and fixtures and compare with the reference outputs
  submit    upload a notebook and print its per-cell verdicts
  login     sign in with a code approved in the browser and save the token for submit
  user      add, list, re-token and revoke users (user add NAME --role ROLE)
  cohort    course instances: cohort create SLUG, cohort add SLUG USER, cohort list, cohort offer SLUG EXERCISE
  migrate   apply database migrations
  exercise  exercise tooling: starters from answers, import of other notebook formats
  env       grading environments (root filesystems kernels run in): env build cpu, env import NAME --tar FILE, env list
  lti       LTI 1.3 tool: lti platform add|list, lti key rotate, lti sync-roster

Run 'npugrade <command> --help' for the flags and environment variables of a command.
Exit status: 0 success, 1 a mismatch or failed grade, 2 a usage or runtime error.
Messages are in Chinese when LC_ALL, LC_MESSAGES or LANG says zh, else in English;
--lang zh-CN or --lang en (before or after the command) chooses.
`

func usage(w io.Writer, say words) { fmt.Fprint(w, say.T(mainUsage)) }

// envOr returns the environment variable or def.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
