// Package store opens npugrade's database (SQLite embedded by default,
// Postgres in production), applies the versioned migrations, and holds the
// repositories for users, tokens, blobs, submissions, results, regrades and
// jobs. It is the only package that imports gorm (internal/archtest checks
// it): row types and the *gorm.DB stay unexported, transactions are the
// store's own (DB.InTx, Tx), and database errors leave it translated into
// the domain's codes (ErrNotFound, ErrConflict). The job table's SQL is in
// jobs.go; when a job moves from state to state is package jobs' call.
package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/npugrade/npugrade/internal/auth"
	"github.com/npugrade/npugrade/migrations"
)

// DB is an open database.
type DB struct {
	gorm    *gorm.DB
	Dialect string // "sqlite" or "postgres"
	// Clock is the time source; tests replace it.
	Clock func() time.Time
	// dsn is the driver DSN, for connections outside the pool (ListenDSN).
	dsn string

	// sql is the pool under gorm: the per-request statements (token
	// lookup, claim) go to it directly, without gorm's statement building
	// and reflection (most of their server CPU, see make bench).
	sql *sql.DB

	// auth keeps token checks on Postgres while ListenAuth runs.
	auth authCache
	// intake groups concurrent uploads' statements on Postgres
	// (intake_batch.go).
	intake intakeBatcher
}

// Engine is the database's dialect, "sqlite" or "postgres", for the
// callers whose behaviour differs (a Postgres queue is shared by servers).
func (db *DB) Engine() string { return db.Dialect }

// Now is the database's time: the services that take a store read the
// same clock as its own timestamps.
func (db *DB) Now() time.Time { return db.Clock() }

// DefaultPoolSize is the Postgres connection pool's default size: at
// least as many connections as runners claiming at once in make bench
// (64), so that no claim waits for a connection while Postgres idles.
const DefaultPoolSize = 64

// SetPoolSize sets how many Postgres connections the pool opens at most;
// all of them stay open while in use recently (a connection opened and
// closed per request costs Postgres a process start). No-op on SQLite,
// which keeps its single connection.
func (db *DB) SetPoolSize(n int) {
	if db.Dialect != "postgres" || n < 1 {
		return
	}
	db.sql.SetMaxOpenConns(n)
	db.sql.SetMaxIdleConns(n)
	// Idle connections beyond a burst go back to Postgres after a while.
	db.sql.SetConnMaxIdleTime(time.Minute)
}

// ListenDSN is the Postgres DSN for a dedicated connection outside the
// pool (package pgnotify's LISTEN); "" on SQLite.
func (db *DB) ListenDSN() string {
	if db.Dialect != "postgres" {
		return ""
	}
	return db.dsn
}

// DefaultURL is used when neither --db nor NPUGRADE_DB is given.
const DefaultURL = "sqlite://data/npugrade.db"

// ParseURL splits a database URL into dialect and driver DSN.
// sqlite:///abs/path.db and sqlite://relative.db are SQLite files;
// sqlite://:memory: is an in-memory database; postgres:// and postgresql://
// URLs go to pgx unchanged.
func ParseURL(url string) (dialect, dsn string, err error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return "postgres", url, nil
	case strings.HasPrefix(url, "sqlite://"):
		path := strings.TrimPrefix(url, "sqlite://")
		if path == "" {
			return "", "", fmt.Errorf("database URL %q has no file path", url)
		}
		return "sqlite", path, nil
	}
	return "", "", fmt.Errorf("database URL %q: want sqlite:///path/file.db, sqlite://relative.db or postgres://…", url)
}

// Open connects to url and applies pending migrations.
func Open(ctx context.Context, url string, log *slog.Logger) (*DB, error) {
	db, err := Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if log != nil {
		log.Info("database ready", "dialect", db.Dialect)
	}
	return db, nil
}

// OpenExisting opens a database npugrade has already set up (its schema
// migrated at least once) and applies pending migrations. It never creates
// a SQLite file or a schema: commands that read users must not leave a
// stray empty database behind when given the wrong URL.
func OpenExisting(ctx context.Context, url string) (*DB, error) {
	dialect, dsn, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	if dialect == "sqlite" && dsn != ":memory:" {
		if _, err := os.Stat(dsn); err != nil {
			return nil, fmt.Errorf("no database at %s: %w", dsn, err)
		}
	}
	db, err := Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	var n int64
	if err := db.gorm.WithContext(ctx).Raw("SELECT COUNT(*) FROM schema_migrations").Scan(&n).Error; err != nil || n == 0 {
		db.Close()
		return nil, fmt.Errorf("the %s database has no npugrade schema (run npugrade migrate or serve on it first)", dialect)
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Connect connects to url without migrating.
func Connect(ctx context.Context, url string) (*DB, error) {
	dialect, dsn, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	cfg := &gorm.Config{
		Logger:         logger.Default.LogMode(logger.Silent),
		TranslateError: true,
		NowFunc:        func() time.Time { return time.Now().UTC() },
		// Every write that must commit with another is in a transaction
		// of the store's own (InTx); a lone statement needs no BEGIN and
		// COMMIT around it, two round trips more per write.
		SkipDefaultTransaction: true,
	}
	var gdb *gorm.DB
	switch dialect {
	case "sqlite":
		if dsn != ":memory:" {
			if dir := filepath.Dir(dsn); dir != "." {
				if err := os.MkdirAll(dir, 0o750); err != nil {
					return nil, fmt.Errorf("create database directory %s: %w", dir, err)
				}
			}
			// SQLite reports an unwritable file as "out of memory (14)";
			// say what is wrong instead.
			f, err := os.OpenFile(dsn, os.O_RDWR|os.O_CREATE, 0o640)
			if err != nil {
				return nil, fmt.Errorf("the SQLite database file %s cannot be opened for writing (check the path, its permissions and free space): %w", dsn, err)
			}
			f.Close()
		}
		// WAL lets readers proceed during a write; busy_timeout waits for the
		// single writer instead of failing; foreign_keys is per connection.
		full := dsn + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
		if dsn == ":memory:" {
			full = "file::memory:?_pragma=foreign_keys(1)"
		}
		gdb, err = gorm.Open(sqlite.Open(full), cfg)
	case "postgres":
		gdb, err = gorm.Open(postgres.Open(dsn), cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	if dialect == "sqlite" {
		// SQLite has one writer; one connection serialises writes in Go
		// instead of failing with SQLITE_BUSY (gotify and River do the same).
		sqlDB.SetMaxOpenConns(1)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("connect to %s database: %w", dialect, err)
	}
	db := &DB{gorm: gdb, Dialect: dialect, Clock: func() time.Time { return time.Now().UTC() }, dsn: dsn, sql: sqlDB}
	db.SetPoolSize(DefaultPoolSize)
	return db, nil
}

// bind writes q's ? placeholders as Postgres's $1, $2, … (statements
// that go to the pool directly, not through gorm).
func (db *DB) bind(q string) string {
	if db.Dialect != "postgres" {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// Close closes the connection pool.
func (db *DB) Close() error {
	sqlDB, err := db.gorm.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Ping checks that the database answers (for /readyz).
func (db *DB) Ping(ctx context.Context) error {
	sqlDB, err := db.gorm.DB()
	if err != nil {
		return err
	}
	return sqlDB.PingContext(ctx)
}

// Migrate applies every migration not yet recorded and returns the versions applied.
func (db *DB) Migrate(ctx context.Context) ([]int, error) {
	fsys, err := migrations.FS(db.Dialect)
	if err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	type mig struct {
		version int
		name    string
	}
	var all []mig
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		v, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", name)
		}
		all = append(all, mig{v, name})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].version < all[j].version })

	var applied []int
	err = db.gorm.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		if db.Dialect == "postgres" {
			// Two servers starting at once must not both migrate.
			if err := conn.Exec("SELECT pg_advisory_lock(727274)").Error; err != nil {
				return fmt.Errorf("lock migrations: %w", err)
			}
			defer conn.Exec("SELECT pg_advisory_unlock(727274)")
		}
		if err := conn.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`).Error; err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var done []int
		if err := conn.Raw("SELECT version FROM schema_migrations").Scan(&done).Error; err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		have := map[int]bool{}
		for _, v := range done {
			have[v] = true
		}
		for _, m := range all {
			if have[m.version] {
				continue
			}
			body, err := fs.ReadFile(fsys, m.name)
			if err != nil {
				return fmt.Errorf("read migration %s: %w", m.name, err)
			}
			err = conn.Transaction(func(tx *gorm.DB) error {
				for _, stmt := range splitStatements(string(body)) {
					if err := tx.Exec(stmt).Error; err != nil {
						return fmt.Errorf("migration %s: %w", m.name, err)
					}
				}
				return tx.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
					m.version, m.name, db.Now().Format(time.RFC3339)).Error
			})
			if err != nil {
				return err
			}
			applied = append(applied, m.version)
		}
		return nil
	})
	return applied, err
}

// splitStatements splits a migration on semicolons at line ends; the
// migrations hold no procedural code, so this is enough.
func splitStatements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.HasSuffix(strings.TrimSpace(line), ";") {
			if s := strings.TrimSpace(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// SHA256 returns the hex digest used as a blob key.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func randomHex(n int) string { return auth.RandomID(n) }
