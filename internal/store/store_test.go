package store_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/npugrade/npugrade/internal/domain"
	"github.com/npugrade/npugrade/internal/store"
	"github.com/npugrade/npugrade/internal/store/storetest"
)

// columns lists table.column names of the schema, dialect-neutrally.
func columns(t *testing.T, db *store.DB) []string {
	t.Helper()
	var out []string
	switch db.Dialect {
	case "sqlite":
		var tables []string
		if err := db.RawScan(context.Background(), &tables, "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"); err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			var cols []struct{ Name string }
			if err := db.RawScan(context.Background(), &cols, "SELECT name FROM pragma_table_info(?)", tb); err != nil {
				t.Fatal(err)
			}
			for _, c := range cols {
				out = append(out, tb+"."+c.Name)
			}
		}
	case "postgres":
		var rows []struct{ TableName, ColumnName string }
		if err := db.RawScan(context.Background(), &rows, "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema='public'"); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, r.TableName+"."+r.ColumnName)
		}
	}
	sort.Strings(out)
	return out
}

func TestDialectsReachTheSameSchema(t *testing.T) {
	t.Parallel()
	dialects := storetest.Dialects(t)
	schemas := map[string][]string{}
	for _, d := range dialects {
		db := storetest.Open(t, d)
		schemas[d] = columns(t, db)
		if len(schemas[d]) < 40 {
			t.Fatalf("%s: only %d columns: %v", d, len(schemas[d]), schemas[d])
		}
		// Migrating again applies nothing.
		applied, err := db.Migrate(context.Background())
		if err != nil || len(applied) != 0 {
			t.Fatalf("%s: second migrate applied %v, err %v", d, applied, err)
		}
	}
	if len(dialects) == 2 {
		a, b := strings.Join(schemas["sqlite"], "\n"), strings.Join(schemas["postgres"], "\n")
		if a != b {
			t.Fatalf("schemas differ:\nsqlite:\n%s\n\npostgres:\n%s", a, b)
		}
	}
}

func TestUsersAndTokens(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		u, token, err := db.CreateUser(ctx, "ada", domain.RoleLearner)
		if err != nil {
			t.Fatal(err)
		}
		got, err := db.UserByToken(ctx, token)
		if err != nil || got.ID != u.ID || got.Role != domain.RoleLearner {
			t.Fatalf("UserByToken = %+v, %v", got, err)
		}
		var stored int64
		db.RawScan(context.Background(), &stored, "SELECT count(*) FROM tokens WHERE hash = ?", token)
		if stored != 0 {
			t.Fatal("the plain token is stored")
		}
		if _, _, err := db.CreateUser(ctx, "ada", domain.RoleLearner); domain.ErrorCode(err) != domain.ECONFLICT {
			t.Fatalf("duplicate user: %v", err)
		}
		if _, _, err := db.CreateUser(ctx, "bob", "teacher"); domain.ErrorCode(err) != domain.EINVALID {
			t.Fatalf("bad role: %v", err)
		}
		if err := db.RevokeTokens(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := db.UserByToken(ctx, token); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
			t.Fatalf("revoked token accepted: %v", err)
		}
		if _, err := db.UserByToken(ctx, "npg_nonsense"); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
			t.Fatalf("unknown token: %v", err)
		}
	})
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, dialect, dsn string }{
		{"sqlite:///abs/x.db", "sqlite", "/abs/x.db"},
		{"sqlite://rel.db", "sqlite", "rel.db"},
		{"sqlite://data/npugrade.db", "sqlite", "data/npugrade.db"},
		{"postgres://u:p@h:5432/db?sslmode=disable", "postgres", "postgres://u:p@h:5432/db?sslmode=disable"},
	} {
		d, dsn, err := store.ParseURL(tc.url)
		if err != nil || d != tc.dialect || dsn != tc.dsn {
			t.Errorf("ParseURL(%q) = %q, %q, %v", tc.url, d, dsn, err)
		}
	}
	for _, bad := range []string{"mysql://x", "sqlite://", "data.db"} {
		if _, _, err := store.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
}
