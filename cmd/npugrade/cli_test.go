package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/npugrade/npugrade/internal/buildinfo"
	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// runCLI runs the command line in-process and returns its exit status and
// output; a command that does not stop within 20 s fails the test (a stray
// word must not start a server).
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	if ctx.Err() != nil {
		t.Fatalf("npugrade %s ran until cancelled (exit %d)", strings.Join(args, " "), code)
	}
	return code, out.String(), errb.String()
}

// wantUsageError checks that a mistaken command line exits 2, names the
// mistake on stderr and shows the usage there.
func wantUsageError(t *testing.T, mention string, args ...string) {
	t.Helper()
	code, _, stderr := runCLI(t, args...)
	if code != exitError {
		t.Errorf("npugrade %s: exit %d, want %d; stderr:\n%s", strings.Join(args, " "), code, exitError, stderr)
	}
	if !strings.Contains(stderr, mention) {
		t.Errorf("npugrade %s: stderr does not mention %q:\n%s", strings.Join(args, " "), mention, stderr)
	}
	if !strings.Contains(stderr, "usage: npugrade") {
		t.Errorf("npugrade %s: stderr has no usage:\n%s", strings.Join(args, " "), stderr)
	}
}

// TestCLIStrayWordsAndUnknownFlags: `serve x --db …` used to drop every flag
// after the stray word and start with the defaults.
func TestCLIStrayWordsAndUnknownFlags(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + filepath.Join(t.TempDir(), "never.db")
	wantUsageError(t, `unexpected argument "x"`, "serve", "x", "--db", db)
	wantUsageError(t, `unexpected argument "x"`, "serve", "--db", db, "x")
	wantUsageError(t, "flag provided but not defined: -dbb", "serve", "--dbb", db)
	wantUsageError(t, `unexpected argument "extra"`, "migrate", "--db", db, "extra")
	wantUsageError(t, `unexpected argument "b"`, "user", "token", "a", "b", "--db", db)
	wantUsageError(t, "missing argument NAME", "user", "add", "--db", db)
	wantUsageError(t, `unknown subcommand "lst"`, "user", "lst")
	wantUsageError(t, `unknown subcommand "start"`, "exercise", "start")
	wantUsageError(t, `unknown command "serv"`, "serv")
	wantUsageError(t, "missing argument FILE.ipynb", "submit", "--exercise", "ch1", "--token", "x")
	wantUsageError(t, `--labels: "gpu" is not key=value`, "runner", "--labels", "gpu", "--server", "http://127.0.0.1:1", "--token", "x")
	if _, err := os.Stat(strings.TrimPrefix(db, "sqlite://")); !os.IsNotExist(err) {
		t.Errorf("a refused command line created the database: %v", err)
	}
}

// TestCLIInvalidValues: --log-level verbose and --local-runner -3 used to be
// accepted.
func TestCLIInvalidValues(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + filepath.Join(t.TempDir(), "never.db")
	wantUsageError(t, `invalid value "verbose" for flag -log-level`, "serve", "--log-level", "verbose", "--db", db)
	wantUsageError(t, `invalid value "verbose" for flag -log-level`, "runner", "--log-level", "verbose")
	wantUsageError(t, `invalid value "-3" for flag -local-runner: must be at least 0`, "serve", "--local-runner", "-3", "--db", db)
	wantUsageError(t, `invalid value "-1" for flag -slots`, "runner", "--slots", "-1")
	wantUsageError(t, `invalid value "0" for flag -jobs`, "check", "--jobs", "0")
	wantUsageError(t, `invalid value "soon" for flag -job-timeout`, "serve", "--job-timeout", "soon", "--db", db)
	wantUsageError(t, `invalid value "-5s" for flag -lease-ttl`, "serve", "--lease-ttl", "-5s", "--db", db)
	wantUsageError(t, `invalid value "docker" for flag -sandbox`, "check", "--sandbox", "docker")
	wantUsageError(t, `invalid value "teacher" for flag -role`, "user", "add", "bob", "--role", "teacher", "--db", db)
	wantUsageError(t, `invalid value "12x" for flag -max-upload`, "serve", "--max-upload", "12x", "--db", db)
	wantUsageError(t, `--trusted-proxies: not a CIDR or an address: "proxy.campus"`, "serve", "--trusted-proxies", "10.0.0.0/8,proxy.campus", "--db", db)
}

// TestCLICheckOnlyUnknown: `check --only typo` used to check nothing and
// exit 0.
func TestCLICheckOnlyUnknown(t *testing.T) {
	t.Parallel()
	wantUsageError(t, `--only: unknown exercise "typo"`, "check", "--only", "ch1,typo", "--sandbox", "none",
		"--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers"))
}

// TestCLICheckSeedAndNotebookFlags: a seed that is not a number, and a
// learner's notebook without the one exercise it is for, are refused
// before anything runs.
func TestCLICheckSeedAndNotebookFlags(t *testing.T) {
	t.Parallel()
	dirs := []string{"--sandbox", "none", "--exercises", filepath.Join(repoRoot, "exercises"), "--answers", filepath.Join(repoRoot, "answers")}
	wantUsageError(t, `--seed: "x1" is not an integer`, append([]string{"check", "--seed", "x1"}, dirs...)...)
	wantUsageError(t, "--notebook needs --only naming the one exercise", append([]string{"check", "--notebook", "a.ipynb", "--only", "ch1,ch2"}, dirs...)...)
}

// TestCLIHelpExitsZero: every command's --help prints its usage on stdout
// and exits 0 (subcommand --help used to exit 2).
func TestCLIHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"serve", "--help"}, {"runner", "--help"}, {"check", "-h"}, {"submit", "--help"},
		{"migrate", "--help"}, {"user", "--help"}, {"user", "add", "--help"}, {"user", "list", "--help"},
		{"user", "token", "--help"}, {"user", "revoke", "-help"},
		{"exercise", "--help"}, {"exercise", "starter", "--help"}, {"exercise", "import", "--help"},
		{"env", "--help"}, {"env", "build", "--help"}, {"env", "import", "--help"}, {"env", "list", "--help"}, {"env", "rm", "--help"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitOK || !strings.Contains(stdout, "usage: npugrade") || stderr != "" {
			t.Errorf("npugrade %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// TestCLIVersion: npugrade --version prints the build's version.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--version", "version"} {
		code, stdout, _ := runCLI(t, arg)
		if code != exitOK || strings.TrimSpace(stdout) != "npugrade "+buildinfo.Version() || buildinfo.Version() == "" {
			t.Errorf("npugrade %s: exit %d, %q", arg, code, stdout)
		}
	}
}

// TestCLIHelpListsEnvironment: every NPUGRADE_* variable the commands read
// is listed in the --help of each command that reads it, and in docs/cli.md.
func TestCLIHelpListsEnvironment(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	envName := regexp.MustCompile(`"(NPUGRADE_[A-Z_]+)"`)
	read := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range envName.FindAllStringSubmatch(string(src), -1) {
			read[m[1]] = true
		}
	}
	if len(read) < 6 {
		t.Fatalf("found only %d NPUGRADE_ variables in the sources: %v", len(read), read)
	}
	helps := map[string][]string{
		"serve":     {"NPUGRADE_ADDR", "NPUGRADE_DB", "NPUGRADE_SANDBOX", "NPUGRADE_ENV", "NPUGRADE_ENVS_DIR", "NPUGRADE_METRICS_TOKEN", "NPUGRADE_TRUSTED_PROXIES", "NPUGRADE_PUBLIC_URL", "NPUGRADE_JUPYTERHUB_CLIENT_SECRET", "NPUGRADE_OIDC_CLIENT_SECRET"},
		"runner":    {"NPUGRADE_SERVER", "NPUGRADE_RUNNER_TOKEN", "NPUGRADE_SANDBOX", "NPUGRADE_ENV", "NPUGRADE_ENVS_DIR", "NPUGRADE_DEV_ROOT"},
		"check":     {"NPUGRADE_SANDBOX", "NPUGRADE_ENV", "NPUGRADE_ENVS_DIR"},
		"env build": {"NPUGRADE_ENVS_DIR", "NPUGRADE_DEBIAN_MIRROR"},
		"env list":  {"NPUGRADE_ENVS_DIR"},
		"submit":    {"NPUGRADE_SERVER", "NPUGRADE_TOKEN"},
		"login":     {"NPUGRADE_SERVER"},
		"migrate":   {"NPUGRADE_DB"},
		"user add":  {"NPUGRADE_DB"},
	}
	listed := map[string]bool{}
	for cmd, vars := range helps {
		_, stdout, _ := runCLI(t, append(strings.Fields(cmd), "--help")...)
		env := stdout[strings.Index(stdout, "environment:")+1:]
		for _, v := range vars {
			if !strings.Contains(env, v) {
				t.Errorf("npugrade %s --help does not list %s:\n%s", cmd, v, stdout)
			}
			listed[v] = true
		}
	}
	for v := range read {
		if !listed[v] {
			t.Errorf("%s is read but no command's --help lists it", v)
		}
		if !bytes.Contains(readme, []byte(v)) {
			t.Errorf("%s is read but docs/cli.md does not document it", v)
		}
	}
}

// TestCLIUserNeedsDatabase: `user add` without --db used to write
// data/npugrade.db under the current directory, so its token did not work
// on the real server. It now uses NPUGRADE_DB or fails. Not parallel: it
// sets the environment and the working directory.
func TestCLIUserNeedsDatabase(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("NPUGRADE_DB", "")
	for _, args := range [][]string{{"user", "add", "bob"}, {"user", "list"}, {"user", "token", "bob"}, {"user", "revoke", "bob"}} {
		wantUsageError(t, "no database: pass --db URL or set NPUGRADE_DB", args...)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("user commands without a database wrote %v", entries)
	}

	db := "sqlite://" + filepath.Join(dir, "server.db")
	t.Setenv("NPUGRADE_DB", db)
	if code, _, stderr := runCLI(t, "user", "add", "bob", "--role", "instructor"); code != exitOK {
		t.Fatalf("user add with NPUGRADE_DB: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "user", "list")
	if code != exitOK || !regexp.MustCompile(`(?m)^\d+\tbob\tinstructor$`).MatchString(stdout) {
		t.Errorf("user list with NPUGRADE_DB: exit %d: %q %q", code, stdout, stderr)
	}
	// The command line's user changes are in the audit log, by "cli".
	runCLI(t, "user", "revoke", "bob")
	sdb, err := store.OpenExisting(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	events, err := sdb.AuditEvents(context.Background(), 0)
	if err != nil || len(events) != 2 || events[0].Actor != "cli" || events[0].Action != domain.AuditTokensRevoked ||
		events[1].Action != domain.AuditUserCreated || events[1].Subject != "bob" {
		t.Errorf("audit log after user add and revoke: %+v %v", events, err)
	}
}

// TestCLIReadingCommandsDoNotCreate: `user list` (and token, revoke) on a
// database that does not exist fail and leave nothing behind, on SQLite
// and on an empty Postgres database.
func TestCLIReadingCommandsDoNotCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "typo.db")
	for _, args := range [][]string{{"list"}, {"token", "bob"}, {"revoke", "bob"}} {
		code, _, stderr := runCLI(t, append(append([]string{"user"}, args...), "--db", "sqlite://"+path)...)
		if code != exitError || !strings.Contains(stderr, "no database at") {
			t.Errorf("user %v on a missing database: exit %d: %s", args, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("user list created %s: %v", filepath.Join(dir, "sub"), err)
	}
	if slices.Contains(storetest.Dialects(t), "postgres") {
		// A fresh Postgres database is empty: no schema may appear.
		url := storetest.URL(t, "postgres")
		code, _, stderr := runCLI(t, "user", "list", "--db", url)
		if code != exitError || !strings.Contains(stderr, "no npugrade schema") {
			t.Errorf("user list on an empty Postgres database: exit %d: %s", code, stderr)
		}
		db, err := store.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var tables int64
		if err := db.RawScan(context.Background(), &tables, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("user list created %d tables in an empty Postgres database", tables)
		}
	}
}

// TestCLISubmitIdempotent: `submit --help` promised an idempotency key that
// was never sent, so a resend made a second attempt. Sending the same file
// for the same exercise twice now returns the first submission; an
// explicit key makes a new one, and the file sent as another exercise is
// refused (it is ch1's notebook). No runner: the submissions
// stay queued and submit gives up waiting after --wait.
func TestCLISubmitIdempotent(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			dbURL := storetest.URL(t, d)
			ada := addUser(t, dbURL, "ada", "learner")
			s := startServer(t, dbURL, "--local-runner", "0")
			defer s.stop()
			file := filepath.Join(repoRoot, "answers/ch1/01.05_chapter_practice_answer.ipynb")
			submitID := func(extra ...string) (string, string) {
				args := append([]string{"submit", "--server", s.url, "--token", ada, "--wait", "1s"}, extra...)
				_, stdout, stderr := runCLI(t, append(args, file)...)
				m := regexp.MustCompile(` as (\S+)`).FindStringSubmatch(stdout)
				if m == nil {
					t.Fatalf("submit %v printed no submission id: %q %q", extra, stdout, stderr)
				}
				return m[1], stdout
			}
			first, _ := submitID("--exercise", "ch1")
			again, out := submitID("--exercise", "ch1")
			if again != first || !strings.Contains(out, "already submitted") {
				t.Errorf("resending the same file made %s after %s: %q", again, first, out)
			}
			if other, _ := submitID("--exercise", "ch1", "--idempotency-key", "second-try"); other == first {
				t.Errorf("an explicit new key returned the first submission %s", first)
			}
			// The same file for another exercise is not the first submission
			// again: it is refused as another exercise's notebook.
			if code, stdout, stderr := runCLI(t, "submit", "--server", s.url, "--token", ada, "--wait", "1s", "--exercise", "ch2", file); code == 0 ||
				strings.Contains(stdout, first) || !strings.Contains(stderr, "exercise ch1's") {
				t.Errorf("the ch1 file as ch2: exit %d %q %q", code, stdout, stderr)
			}
		})
	}
}
