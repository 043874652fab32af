package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// insertIntakePG runs intakeStatement on Postgres through the pool
// connection's own pgx connection: prepared once per connection and
// statement shape, its arguments handed to pgconn already encoded — text
// for strings, numbers and times, the blobs as binary bytea, which is the
// bytes as they are. Through database/sql, pgx encoded every argument
// into a per-query buffer that starts at 256 bytes and doubles its way up
// to the blobs' size (and is dropped after the query): per 135 KB upload
// ~500 KB of garbage and one more copy of the blobs, a quarter of this
// statement's CPU.
func (db *DB) insertIntakePG(ctx context.Context, r intakeRows) (int64, error) {
	query, args := intakeStatement(r)
	values, formats, err := pgParams(args)
	if err != nil {
		return 0, err
	}
	// One prepared statement per shape of the statement's text: how many
	// blobs, whether an attempt is recorded, the order of their bytes.
	name := fmt.Sprintf("npugrade_intake_%d_%t_", len(r.blobs), r.attempt)
	for _, k := range blobOrder(r.blobs) {
		name += strconv.Itoa(k)
	}
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var id int64
	err = conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres connection is a %T, not pgx's", driverConn)
		}
		sd, err := c.Conn().Prepare(ctx, name, query)
		if err != nil {
			return err
		}
		rr := c.Conn().PgConn().ExecPrepared(ctx, sd.Name, values, formats, nil)
		got := false
		for rr.NextRow() {
			if !got {
				id, err = strconv.ParseInt(string(rr.Values()[0]), 10, 64)
				got = true
			}
		}
		if _, cerr := rr.Close(); cerr != nil {
			return cerr
		}
		if err == nil && !got {
			err = fmt.Errorf("the intake statement returned no job id")
		}
		return err
	})
	return id, err
}

// pgParams encodes a statement's arguments for pgconn: []byte as binary
// (a bytea's binary form is its bytes), everything else as text; a nil
// pointer is NULL.
func pgParams(args []any) (values [][]byte, formats []int16, err error) {
	values, formats = make([][]byte, len(args)), make([]int16, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case []byte:
			values[i], formats[i] = v, 1
		case string:
			values[i] = append([]byte{}, v...) // never nil: "" is not NULL
		case *string:
			if v != nil {
				values[i] = append([]byte{}, *v...)
			}
		case int:
			values[i] = strconv.AppendInt(nil, int64(v), 10)
		case int64:
			values[i] = strconv.AppendInt(nil, v, 10)
		case time.Time:
			// Microseconds, truncated as pgx's own encoding does.
			values[i] = v.UTC().Truncate(time.Microsecond).AppendFormat(nil, "2006-01-02 15:04:05.999999Z07:00")
		default:
			return nil, nil, fmt.Errorf("intake argument %d: no Postgres text encoding for %T", i, a)
		}
	}
	return values, formats, nil
}
