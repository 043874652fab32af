// Package migrations holds the versioned SQL that owns npugrade's schema,
// one folder per dialect (the dialects differ in types and in how rows are
// claimed, so one file with conditionals would be harder to read than two).
// Files are named NNNNN_name.sql and applied in order; store.Migrate
// records each version in schema_migrations.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// FS returns the migrations of one dialect ("postgres" or "sqlite").
func FS(dialect string) (fs.FS, error) {
	switch dialect {
	case "postgres", "sqlite":
		return fs.Sub(files, dialect)
	}
	return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
}
