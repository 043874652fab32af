// Command npugrade is the whole grading service in one binary:
//
//	npugrade serve     the HTTP server, with in-process runner slots
//	npugrade runner    a remote runner daemon (or --probe: print the environment report)
//	npugrade check     regression-test answer notebooks, starters and fixtures (no server)
//	npugrade submit    upload a notebook and wait for its score
//	npugrade user      manage users and tokens
//	npugrade migrate   apply database migrations
//	npugrade exercise  exercise tooling (generate starters)
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK       = 0
	exitMismatch = 1
	exitError    = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	cmds := map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"serve":    cmdServe,
		"runner":   cmdRunner,
		"check":    cmdCheck,
		"submit":   cmdSubmit,
		"user":     cmdUser,
		"migrate":  cmdMigrate,
		"exercise": cmdExercise,
	}
	f, ok := cmds[args[0]]
	if !ok {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			usage(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "npugrade: unknown command %q\n", args[0])
		usage(stderr)
		return exitError
	}
	return f(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: npugrade <command> [flags]

commands:
  serve     run the server (HTTP API, pages, in-process runner slots)
  runner    run a remote runner against a server; --probe prints the environment report
  check     execute answers, starters and fixtures and compare with the reference outputs
  submit    upload a notebook and print its per-cell verdicts
  user      add users and print their API token (user add NAME --role ROLE)
  migrate   apply database migrations
  exercise  exercise tooling: 'exercise starter' regenerates starter notebooks

Run 'npugrade <command> -h' for the flags of a command.
`)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// envOr returns the environment variable or def.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
