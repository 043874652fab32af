package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"

	sqlite "github.com/glebarez/go-sqlite"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/npugrade/npugrade/internal/domain"
)

// SQLite primary result codes (sqlite3.h) that are infrastructure faults.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteReadonly = 8
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
)

// Fault classifies err as an infrastructure fault of the database: a
// *domain.Error with EUNAVAILABLE (it does not answer now: down,
// restarting, unreachable, busy) or ESTORAGE (it cannot store more: disk
// full, read-only), or nil for anything else. Callers turn these into
// 503 and 507 instead of 500, so that operators and clients see what
// happened and when to retry.
func Fault(err error) *domain.Error {
	if err == nil {
		return nil
	}
	if storageFull(err) {
		return domain.Errorf(domain.ESTORAGE, "the database cannot store more data (disk full or read-only); nothing was saved")
	}
	if unavailable(err) {
		return domain.Errorf(domain.EUNAVAILABLE, "the database is unavailable; try again shortly")
	}
	return nil
}

func storageFull(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		// 53100 disk_full; 25006 read_only_sql_transaction (a read-only standby or database).
		return pg.Code == "53100" || pg.Code == "25006"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqliteFull || c == sqliteReadonly
	}
	return false
}

func unavailable(err error) bool {
	// Any failure to connect, whatever the server said (down, starting,
	// not accepting connections).
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.Timeout(err) {
		return true
	}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		// Class 08 connection exception; 57P0x shutdown or not accepting
		// connections yet; 53200 out of memory, 53300 too many connections.
		return strings.HasPrefix(pg.Code, "08") || strings.HasPrefix(pg.Code, "57P") || pg.Code == "53200" || pg.Code == "53300"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqliteBusy || c == sqliteLocked || c == sqliteIOErr || c == sqliteCantOpen
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := err.Error()
	// database/sql's own (unexported) errors, and pgx's on a connection
	// that died mid-query.
	return strings.Contains(msg, "sql: database is closed") || strings.Contains(msg, "conn closed") ||
		strings.Contains(msg, "unexpected EOF")
}
