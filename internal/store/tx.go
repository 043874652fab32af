package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/npugrade/npugrade/internal/domain"
)

// Tx is a transaction owned by the store: writes that must commit together
// (a submission and its job, a score and the job's completion) are methods
// of Tx, and DB.InTx begins, commits and rolls it back. Nothing of the
// database library leaves the package.
type Tx struct {
	db *DB
	g  *gorm.DB
}

// InTx runs fn in one transaction: committed when fn returns nil, rolled
// back otherwise. Database errors come back translated into the domain's
// codes (see translate).
func (db *DB) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	return translate(db.gorm.WithContext(ctx).Transaction(func(g *gorm.DB) error {
		return fn(&Tx{db: db, g: g})
	}))
}

// Errors the store returns, with the domain's codes: callers test them with
// errors.Is or domain.ErrorCode, never with the database library's errors.
var (
	// ErrNotFound is wrapped by lookups that find nothing (ENOTFOUND).
	ErrNotFound error = &domain.Error{Code: domain.ENOTFOUND, Message: "not found"}
	// ErrConflict is wrapped when a write breaks a uniqueness rule (ECONFLICT).
	ErrConflict error = &domain.Error{Code: domain.ECONFLICT, Message: "already exists"}
)

// translate maps the database library's errors to the store's: a missing
// row to ErrNotFound, a duplicate key to ErrConflict. The original stays in
// the chain for logs.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict):
		return err
	case errors.Is(err, gorm.ErrRecordNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// RawExec runs a hand-written statement. Tests seed and alter tables with
// it; code outside package store never calls it (TestStoreIsSealed).
func (db *DB) RawExec(ctx context.Context, sql string, args ...any) error {
	err := db.gorm.WithContext(ctx).Exec(sql, args...).Error
	db.auth.forget() // it may have changed a token or a user
	return translate(err)
}

// RawExec runs a hand-written statement inside tx (tests only, as DB.RawExec).
func (tx *Tx) RawExec(sql string, args ...any) error {
	return translate(tx.g.Exec(sql, args...).Error)
}

// RawScan runs a hand-written query and scans its rows into dest (a
// pointer to a struct, a slice of structs or a scalar). Tests inspect
// tables with it; code outside package store never calls it.
func (db *DB) RawScan(ctx context.Context, dest any, sql string, args ...any) error {
	return translate(db.gorm.WithContext(ctx).Raw(sql, args...).Scan(dest).Error)
}

// RawInsert inserts rows (column → value) into table in batches, inside
// tx. Tests seed large tables with it; code outside package store never
// calls it.
func (tx *Tx) RawInsert(table string, rows []map[string]any) error {
	return translate(tx.g.Table(table).CreateInBatches(rows, 500).Error)
}

// RawScan runs a hand-written query inside tx (tests only, as DB.RawScan).
func (tx *Tx) RawScan(dest any, sql string, args ...any) error {
	return translate(tx.g.Raw(sql, args...).Scan(dest).Error)
}
