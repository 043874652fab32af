// Package storetest opens throwaway databases for tests: a temporary
// SQLite file always, and a fresh Postgres database per test when
// NPUGRADE_TEST_POSTGRES_DSN points at a server (make test starts one).
// In CI (CI=true) a missing Postgres is a failure, never a silent skip.
package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/internal/store"
)

// EnvDSN names the variable holding an admin DSN of a test Postgres.
const EnvDSN = "NPUGRADE_TEST_POSTGRES_DSN"

// Dialects lists the databases every conformance test runs on.
func Dialects(t testing.TB) []string {
	t.Helper()
	if os.Getenv(EnvDSN) != "" {
		return []string{"sqlite", "postgres"}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set: CI must run every database test on Postgres too", EnvDSN)
	}
	t.Logf("%s not set: running on SQLite only", EnvDSN)
	return []string{"sqlite"}
}

// URL returns the URL of a fresh, empty database of dialect; it is
// dropped when the test ends.
func URL(t testing.TB, dialect string) string {
	t.Helper()
	switch dialect {
	case "sqlite":
		return "sqlite://" + filepath.Join(t.TempDir(), "test.db")
	case "postgres":
		admin := os.Getenv(EnvDSN)
		if admin == "" {
			t.Skipf("%s not set", EnvDSN)
		}
		name := "npg_" + strings.ToLower(auth.RandomID(6))
		adb, err := store.Connect(context.Background(), admin)
		if err != nil {
			t.Fatalf("connect to test postgres: %v", err)
		}
		if err := adb.RawExec(context.Background(), "CREATE DATABASE "+name); err != nil {
			t.Fatalf("create test database: %v", err)
		}
		t.Cleanup(func() {
			_ = adb.RawExec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			adb.Close()
		})
		u, err := url.Parse(admin)
		if err != nil {
			t.Fatalf("parse %s: %v", EnvDSN, err)
		}
		u.Path = "/" + name
		return u.String()
	}
	panic(fmt.Sprintf("storetest: unknown dialect %q", dialect))
}

// Open opens and migrates a fresh database of dialect.
func Open(t testing.TB, dialect string) *store.DB {
	t.Helper()
	return OpenURL(t, URL(t, dialect))
}

// OpenURL opens (and migrates) the database at url, closed when the test
// ends: with URL, each call is another server process's own handle on
// one test database.
func OpenURL(t testing.TB, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Each runs fn as a parallel subtest, named for its dialect, on a fresh
// migrated database of every dialect: the conformance loop of the store's
// tests in one place.
func Each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, d := range Dialects(t) {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, d))
		})
	}
}
