package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/fleet"
	"github.com/npugrade/npugrade/internal/store"
)

const userUsage = `usage: npugrade user add NAME --role learner|instructor|admin|runner [--cohort SLUG] [--profiles P,...] [--labels k=v,...] [--db URL]
       npugrade user list [--db URL]
       npugrade user token NAME [--db URL]
       npugrade user revoke NAME [--db URL]
       npugrade user import ROSTER.csv [--cohort SLUG] [--tokens FILE] [--db URL]

Manage users and their API tokens in the server's database. Without --db the
commands use NPUGRADE_DB; with neither they fail instead of guessing a file.
Only 'add' and 'import' may set up a new database; the others need one that exists.

Run 'npugrade user <subcommand> --help' for its flags.

environment:
  NPUGRADE_DB            database URL, the default of --db
`

func cmdUser(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	w := wordsOf(ctx)
	if len(args) == 0 {
		fmt.Fprintln(stderr, w.T("npugrade user: missing subcommand (add, list, token, revoke or import)"))
		fmt.Fprint(stderr, "\n"+w.T(userUsage))
		return exitError
	}
	sub := args[0]
	about := map[string]string{
		"add":    "Add a user and print its first API token (shown only once).",
		"list":   "List users: id, name, role.",
		"token":  "Print a new API token for a user (earlier tokens stay valid).",
		"revoke": "Revoke every API token of a user.",
		"import": "Import a class roster (CSV with a header: name, email or student_number, section, role; '-' reads stdin).\n" +
			"The student number (else the email) is the login name: importing again updates people, never duplicates them.\n" +
			"Every bad row is reported at once and then nothing is imported. New users' tokens are written once, as CSV\n" +
			"(login,name,section,role,token), to stdout or --tokens; only their hashes are stored.",
	}
	switch {
	case sub == "-h" || sub == "-help" || sub == "--help" || sub == "help":
		fmt.Fprint(stdout, w.T(userUsage))
		return exitOK
	case about[sub] == "":
		fmt.Fprint(stderr, w.F("npugrade user: unknown subcommand %q\n\n", sub)+w.T(userUsage))
		return exitError
	}
	nameArg, nArgs := "NAME", 1
	switch sub {
	case "list":
		nameArg, nArgs = "", 0
	case "import":
		nameArg = "ROSTER.csv"
	}
	fs := newCommand(ctx, "user "+sub, nameArg, about[sub], envDB)
	dbURL := fs.String("db", envOr("NPUGRADE_DB", ""), "database URL of the server: sqlite:///path/file.db, sqlite://relative.db or postgres://…")
	var role, profiles, labels, tokensFile, cohort *string
	if sub == "add" || sub == "import" {
		cohort = fs.String("cohort", "", "the cohort (`SLUG`, npugrade cohort create) new learners and instructors join (default: default)")
	}
	if sub == "import" {
		tokensFile = fs.String("tokens", "", "write the new users' tokens to this new `FILE` (mode 0600, never overwritten) instead of stdout")
	}
	if sub == "add" {
		role = fs.Choice("role", string(domain.RoleLearner), []string{string(domain.RoleLearner), string(domain.RoleInstructor),
			string(domain.RoleAdmin), string(domain.RoleRunner)}, "learner, instructor, admin or runner")
		profiles = fs.String("profiles", "", "runner tokens: the only profiles its registrations may report (p1,p2; none bound: cpu only)")
		labels = fs.String("labels", "", "runner tokens: labels k=v,... its registrations must carry")
	}
	pos, code, ok := fs.parse(args[1:], nArgs, nArgs, stdout, stderr)
	if !ok {
		return code
	}
	if *dbURL == "" {
		return fs.usageError(stderr, w.T("no database: pass --db URL or set NPUGRADE_DB to the server's database"))
	}
	var scope *fleet.RunnerScope
	if sub == "add" && (*profiles != "" || *labels != "") {
		if domain.Role(*role) != domain.RoleRunner {
			return fs.usageError(stderr, w.T("--profiles and --labels bind runner tokens: they need --role runner"))
		}
		lb, err := parseLabels(w, *labels)
		if err != nil {
			return fs.usageError(stderr, err.Error())
		}
		scope = &fleet.RunnerScope{Labels: lb}
		for _, p := range strings.Split(*profiles, ",") {
			if p = strings.TrimSpace(p); p != "" {
				scope.Profiles = append(scope.Profiles, p)
			}
		}
	}
	// Only add and import may create the database; the others need the server's.
	open := store.OpenExisting
	if sub == "add" || sub == "import" {
		open = func(ctx context.Context, url string) (*store.DB, error) { return store.Open(ctx, url, nil) }
	}
	db, err := open(ctx, *dbURL)
	if err != nil {
		fmt.Fprintf(stderr, "npugrade user %s: %s\n", sub, dbProblem(w, err))
		return exitError
	}
	defer db.Close()
	switch sub {
	case "add":
		return userAdd(ctx, db, pos[0], domain.Role(*role), *cohort, scope, w, stdout, stderr)
	case "list":
		return userList(ctx, db, w, stdout, stderr)
	case "import":
		return userImport(ctx, db, pos[0], *tokensFile, *cohort, w, stdout, stderr)
	default:
		return userToken(ctx, db, sub, pos[0], w, stdout, stderr)
	}
}

func userAdd(ctx context.Context, db *store.DB, name string, role domain.Role, cohort string, scope *fleet.RunnerScope, w words, stdout, stderr io.Writer) int {
	if cohort == "" {
		cohort = domain.DefaultCohort
	}
	c, err := db.CohortBySlug(ctx, cohort)
	if err != nil {
		fmt.Fprint(stderr, "npugrade user add: ", w.F("no cohort %q (npugrade cohort create %s)\n", cohort, cohort))
		return exitError
	}
	u, token, err := db.CreateUserIn(ctx, name, role, c.ID)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade user add:", dbProblem(w, err))
		return exitError
	}
	if scope != nil {
		if err := db.SetRunnerScope(ctx, u.ID, *scope); err != nil {
			fmt.Fprintln(stderr, "npugrade user add:", dbProblem(w, err))
			return exitError
		}
	}
	auditCLI(ctx, db, domain.AuditUserCreated, u.Name, "role "+string(u.Role), w, stderr)
	fmt.Fprint(stdout, w.F("created %s user %q (id %d); its API token, shown only now:\n%s\n", w.Role(string(u.Role)), u.Name, u.ID, token))
	return exitOK
}

func userList(ctx context.Context, db *store.DB, w words, stdout, stderr io.Writer) int {
	users, err := db.ListUsers(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade user list:", dbProblem(w, err))
		return exitError
	}
	for _, u := range users {
		fmt.Fprintf(stdout, "%d\t%s\t%s\n", u.ID, u.Name, u.Role)
	}
	return exitOK
}

// userToken runs `user token` (a new token) and `user revoke` (none left).
func userToken(ctx context.Context, db *store.DB, sub, name string, w words, stdout, stderr io.Writer) int {
	u, err := db.UserByName(ctx, name)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		fmt.Fprintf(stderr, "npugrade user %s: %s\n", sub, w.F("no user %q (npugrade user list shows them)", name))
		return exitError
	}
	if err != nil {
		fmt.Fprintf(stderr, "npugrade user %s: %s\n", sub, dbProblem(w, err))
		return exitError
	}
	if sub == "revoke" {
		if err := db.RevokeTokens(ctx, u.ID); err != nil {
			fmt.Fprintln(stderr, "npugrade user revoke:", dbProblem(w, err))
			return exitError
		}
		auditCLI(ctx, db, domain.AuditTokensRevoked, u.Name, "", w, stderr)
		fmt.Fprint(stdout, w.F("revoked every token of %q\n", u.Name))
		return exitOK
	}
	token, err := db.CreateToken(ctx, u.ID)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade user token:", dbProblem(w, err))
		return exitError
	}
	auditCLI(ctx, db, domain.AuditTokenCreated, u.Name, "", w, stderr)
	fmt.Fprint(stdout, w.F("new API token for %q:\n%s\n", u.Name, token))
	return exitOK
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newCommand(ctx, "migrate", "", "Apply pending database migrations (serve also applies them at start).", envDB)
	dbURL := fs.String("db", envOr("NPUGRADE_DB", store.DefaultURL), "database URL")
	if _, code, ok := fs.parse(args, 0, 0, stdout, stderr); !ok {
		return code
	}
	w := fs.words()
	db, err := store.Connect(ctx, *dbURL)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade migrate:", dbProblem(w, err))
		return exitError
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "npugrade migrate:", dbProblem(w, err))
		return exitError
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, w.T("the schema is up to date"))
	} else {
		fmt.Fprintf(stdout, "%s %v\n", w.N("n.migrations", len(applied)), applied)
	}
	return exitOK
}

// auditCLI records a user command in the audit log (actor "cli"); a
// failure is reported, and the command still succeeds (it has happened).
func auditCLI(ctx context.Context, db *store.DB, action, subject, detail string, w words, stderr io.Writer) {
	if err := db.Audit(ctx, domain.User{}, action, subject, strings.TrimSpace(detail+" (npugrade user)")); err != nil {
		fmt.Fprintln(stderr, "npugrade user:", w.T("warning:"), w.F("the audit log did not record it: %s", dbProblem(w, err)))
	}
}
