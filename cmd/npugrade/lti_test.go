package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLILTI: `lti platform add` reports every problem of a bad
// registration at once (exit 2) and prints npugrade's values to paste in
// the LMS for a good one; `platform list` lists it; `key rotate` makes a
// key; `sync-roster` without a linked course says so; the reading
// commands never create a database.
func TestCLILTI(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + filepath.Join(t.TempDir(), "lti.db")
	code, _, stderr := runCLI(t, "lti", "platform", "add", "--db", db, "--issuer", "https://moodle.example.edu",
		"--auth-url", "http://moodle.example.edu/auth", "--token-url", "https://moodle.example.edu/token", "--jwks-url", "ftp://x")
	if code != exitError || !strings.Contains(stderr, "client id: empty") || !strings.Contains(stderr, "deployment ids: none") ||
		!strings.Contains(stderr, "auth login URL: want an https URL") || !strings.Contains(stderr, "JWKS URL: want an https URL") {
		t.Errorf("bad registration: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "lti", "platform", "add", "--db", db, "--issuer", "https://moodle.example.edu", "--client-id", "Ab12",
		"--deployment-id", "1,2", "--auth-url", "https://moodle.example.edu/mod/lti/auth.php", "--token-url", "https://moodle.example.edu/mod/lti/token.php",
		"--jwks-url", "https://moodle.example.edu/mod/lti/certs.php", "--public-url", "https://grade.example.edu/")
	if code != exitOK || !strings.Contains(stdout, "initiate login URL:           https://grade.example.edu/lti/login") ||
		!strings.Contains(stdout, "https://grade.example.edu/lti/jwks") {
		t.Errorf("add: exit %d: %s %s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "lti", "platform", "add", "--db", db, "--issuer", "https://moodle.example.edu", "--client-id", "Ab12",
		"--deployment-id", "1", "--auth-url", "https://m/a", "--token-url", "https://m/t", "--jwks-url", "https://m/j"); code != exitError || !strings.Contains(stderr, "already registered") {
		t.Errorf("second add: exit %d: %s", code, stderr)
	}
	code, stdout, _ = runCLI(t, "lti", "platform", "list", "--db", db)
	if code != exitOK || !strings.Contains(stdout, "https://moodle.example.edu\tclient Ab12\tdeployments 1,2") {
		t.Errorf("list: exit %d: %q", code, stdout)
	}
	code, stdout, stderr = runCLI(t, "lti", "platform", "set", "1", "--db", db, "--audience", "https://canvas.instructure.com/login/oauth2/token", "--deployment-id", "3")
	if code != exitOK || !strings.Contains(stdout, "deployments 3, token URL https://moodle.example.edu/mod/lti/token.php, audience \"https://canvas.instructure.com/login/oauth2/token\"") {
		t.Errorf("set: exit %d: %s %s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(t, "lti", "platform", "set", "1", "--db", db, "--token-url", "http://example.edu/t"); code != exitError || !strings.Contains(stderr, "token URL: want an https URL") {
		t.Errorf("set a bad URL: exit %d: %s", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "lti", "key", "rotate", "--db", db); code != exitOK || !strings.Contains(stdout, "new signing key") {
		t.Errorf("rotate: exit %d: %s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "lti", "sync-roster", "--db", db); code != exitError || !strings.Contains(stderr, "no linked course") {
		t.Errorf("sync-roster: exit %d: %s", code, stderr)
	}
	missing := "sqlite://" + filepath.Join(t.TempDir(), "typo.db")
	if code, _, stderr := runCLI(t, "lti", "platform", "list", "--db", missing); code != exitError || !strings.Contains(stderr, "no database at") {
		t.Errorf("list on a missing database: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{{"lti", "--help"}, {"lti", "platform", "add", "--help"}, {"lti", "sync-roster", "--help"}} {
		if code, stdout, _ := runCLI(t, args...); code != exitOK || !strings.Contains(stdout, "usage: npugrade") {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	wantUsageError(t, `unknown subcommand "platform nope"`, "lti", "platform", "nope")
}
