package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// insertIntakeOne writes one upload's rows (insertIntakeRows).
func (db *DB) insertIntakeOne(ctx context.Context, r intakeRows) (int64, error) {
	ids, err := db.insertIntakeRows(ctx, []intakeRows{r})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// insertIntakeRows writes uploads' rows by intakeStatement and returns
// their jobs' ids in order.
func (db *DB) insertIntakeRows(ctx context.Context, rows []intakeRows) ([]int64, error) {
	name, query, args := intakeStatement(rows)
	bySub := make(map[string]int64, len(rows))
	err := db.execIntake(ctx, name, query, args, func(v [][]byte) error {
		id, err := strconv.ParseInt(string(v[0]), 10, 64)
		bySub[string(v[1])] = id
		return err
	})
	if err != nil {
		// Unwrapped: rowErr finds a duplicate key by the driver's error
		// type itself, not through a wrapping.
		return nil, err
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		id, ok := bySub[r.sub.ID]
		if !ok {
			return nil, fmt.Errorf("the intake statement returned no job for submission %s", r.sub.ID)
		}
		ids[i] = id
	}
	return ids, nil
}

// execIntake runs an intake statement, prepared once per connection
// under its name, on a connection of the pool and hands each row it
// returns to row. It goes through the pool connection's own pgx
// connection with its arguments already encoded — text for strings,
// numbers and times, the blobs as binary bytea, which is the bytes as
// they are: through database/sql, pgx encoded every argument into a
// per-query buffer that doubled its way up to the blobs' size, ~500 KB of
// garbage and one more copy of the blobs per 135 KB upload.
func (db *DB) execIntake(ctx context.Context, name, query string, args []any, row func([][]byte) error) error {
	values, formats, err := pgParams(args)
	if err != nil {
		return err
	}
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres connection is a %T, not pgx's", driverConn)
		}
		sd, err := c.Conn().Prepare(ctx, name, query)
		if err != nil {
			return err
		}
		pc := c.Conn().PgConn()
		pc.Frontend().Send(bindRoom(bindSize(sd.Name, values, formats)))
		// With the statement's description at hand, no Describe per
		// execution.
		rr := pc.ExecStatement(ctx, sd, values, formats, nil)
		for rr.NextRow() {
			if err == nil {
				err = row(rr.Values())
			}
		}
		if _, cerr := rr.Close(); cerr != nil {
			return cerr
		}
		return err
	})
}

// bindRoom is a message that sends nothing: it makes room in pgx's send
// buffer for the Bind message that follows it. pgx shrinks that buffer
// to 1 KB after every larger message and then grows it by appending, so
// that a 135 KB upload's Bind cost two reallocations and copies of what
// it held, as much CPU as copying the message itself; grown once to the
// message's size, it costs one allocation.
type bindRoom int

func (bindRoom) Frontend() {}

func (n bindRoom) Encode(dst []byte) ([]byte, error) { return slices.Grow(dst, int(n)), nil }

func (bindRoom) Decode([]byte) error { return errors.New("bindRoom is never received") }

// bindSize is the size of the Bind message of a statement's arguments,
// with room for the short messages after it (Execute, Sync).
func bindSize(stmt string, values [][]byte, formats []int16) int {
	n := 1 + 4 + 1 + len(stmt) + 1 + 2 + 2*len(formats) + 2 + 2 + 64
	for _, v := range values {
		n += 4 + len(v)
	}
	return n
}

// pgParams encodes a statement's arguments for pgconn: []byte as binary
// (a bytea's binary form is its bytes), everything else as text, all the
// text into one buffer; a nil pointer is NULL.
func pgParams(args []any) (values [][]byte, formats []int16, err error) {
	values, formats = make([][]byte, len(args)), make([]int16, len(args))
	size := 0
	for _, a := range args {
		switch v := a.(type) {
		case string:
			size += len(v)
		case *string:
			if v != nil {
				size += len(*v)
			}
		default:
			size += 40 // a number or a time
		}
	}
	// Never nil, so that "" is an empty value, not NULL. Were it to grow,
	// the values cut before keep the bytes they have.
	buf := make([]byte, 0, size)
	for i, a := range args {
		start := len(buf)
		switch v := a.(type) {
		case []byte:
			values[i], formats[i] = v, 1
			continue
		case string:
			buf = append(buf, v...)
		case *string:
			if v == nil {
				continue
			}
			buf = append(buf, *v...)
		case int:
			buf = strconv.AppendInt(buf, int64(v), 10)
		case int64:
			buf = strconv.AppendInt(buf, v, 10)
		case time.Time:
			// Microseconds, truncated as pgx's own encoding does.
			buf = v.UTC().Truncate(time.Microsecond).AppendFormat(buf, "2006-01-02 15:04:05.999999Z07:00")
		default:
			return nil, nil, fmt.Errorf("intake argument %d: no Postgres text encoding for %T", i, a)
		}
		values[i] = buf[start:len(buf):len(buf)]
	}
	return values, formats, nil
}
