package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/npugrade/npugrade/internal/grading"
	"github.com/npugrade/npugrade/internal/store"
)

func cmdUser(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "add" && args[0] != "list" && args[0] != "token" && args[0] != "revoke") {
		fmt.Fprintln(stderr, "usage: npugrade user add NAME --role learner|instructor|admin|runner [--db URL]\n       npugrade user list | token NAME | revoke NAME [--db URL]")
		return exitError
	}
	sub := args[0]
	fs := flag.NewFlagSet("user "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbURL := fs.String("db", envOr("NPUGRADE_DB", store.DefaultURL), "database URL (sqlite:///path.db, sqlite://relative.db or postgres://…)")
	role := fs.String("role", "learner", "learner, instructor, admin or runner")
	// Accept flags before or after the name.
	rest := args[1:]
	var name string
	if len(rest) > 0 && len(rest[0]) > 0 && rest[0][0] != '-' {
		name, rest = rest[0], rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return exitError
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	db, err := store.Open(ctx, *dbURL, nil)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade user:", err)
		return exitError
	}
	defer db.Close()
	switch sub {
	case "add":
		u, token, err := db.CreateUser(ctx, name, grading.Role(*role))
		if err != nil {
			fmt.Fprintln(stderr, "npugrade user add:", err)
			return exitError
		}
		fmt.Fprintf(stdout, "created %s user %q (id %d); its API token, shown only now:\n%s\n", u.Role, u.Name, u.ID, token)
	case "list":
		users, err := db.ListUsers(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade user list:", err)
			return exitError
		}
		for _, u := range users {
			fmt.Fprintf(stdout, "%d\t%s\t%s\n", u.ID, u.Name, u.Role)
		}
	case "token", "revoke":
		u, err := db.UserByName(ctx, name)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade user:", err)
			return exitError
		}
		if sub == "revoke" {
			if err := db.RevokeTokens(ctx, u.ID); err != nil {
				fmt.Fprintln(stderr, "npugrade user revoke:", err)
				return exitError
			}
			fmt.Fprintf(stdout, "revoked every token of %q\n", u.Name)
			return exitOK
		}
		token, err := db.CreateToken(ctx, u.ID)
		if err != nil {
			fmt.Fprintln(stderr, "npugrade user token:", err)
			return exitError
		}
		fmt.Fprintf(stdout, "new API token for %q:\n%s\n", u.Name, token)
	}
	return exitOK
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dbURL := fs.String("db", envOr("NPUGRADE_DB", store.DefaultURL), "database URL")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	db, err := store.Connect(ctx, *dbURL)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade migrate:", err)
		return exitError
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade migrate:", err)
		return exitError
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "the schema is up to date")
	} else {
		fmt.Fprintf(stdout, "applied migrations %v\n", applied)
	}
	return exitOK
}
