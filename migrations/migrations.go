// Package migrations holds the box's numbered SQL migrations and applies them.
//
// Each file NNN_name.sql is applied once, in its own transaction, and recorded
// in stackbone_platform.schema_migrations (goose's version table). Every table
// lives in the schema stackbone_platform or stackbone_checkpoints; nothing goes
// in public.
//
//	if err := migrations.Apply(ctx, databaseURL, logger); err != nil { ... }
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for goose
	"github.com/pressly/goose/v3"

	"github.com/stackbone/box/jobs"
)

//go:embed *.sql
var files embed.FS

// VersionTable records which migrations have been applied.
const VersionTable = "stackbone_platform.schema_migrations"

// Schemas are created before the first migration runs, so the version table
// has somewhere to live.
var Schemas = []string{"stackbone_platform", "stackbone_checkpoints"}

// advisoryLockKey is an arbitrary constant shared by every box process.
const advisoryLockKey int64 = 0x5742_0001

// FS returns the embedded migration files.
func FS() fs.FS { return files }

// Apply brings the database at databaseURL up to the newest migration. It is
// safe to call from several processes at once: goose holds a Postgres
// advisory lock while it works.
func Apply(ctx context.Context, databaseURL string, logger *slog.Logger) error {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return fmt.Errorf("migrations: open: %w", err)
	}
	defer db.Close()
	// One lock around schema creation and the migrations themselves, so boxes
	// and test processes starting together do not race on CREATE SCHEMA.
	lockConn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrations: connect: %w", err)
	}
	defer lockConn.Close()
	if _, err := lockConn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", advisoryLockKey); err != nil {
		return fmt.Errorf("migrations: lock: %w", err)
	}
	defer lockConn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", advisoryLockKey)
	for _, s := range Schemas {
		if _, err := lockConn.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+s); err != nil {
			return fmt.Errorf("migrations: create schema %s: %w", s, err)
		}
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithTableName(VersionTable))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	results, err := p.Up(ctx)
	for _, r := range results {
		if logger != nil && r.Error == nil {
			logger.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "duration", r.Duration)
		}
	}
	if err != nil {
		var pe *goose.PartialError
		if errors.As(err, &pe) && pe.Failed != nil {
			return fmt.Errorf("migrations: %s: %w", pe.Failed.Source.Path, pe.Err)
		}
		return fmt.Errorf("migrations: %w", err)
	}
	// River's job tables, by River's own migrator, in the same schema.
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	defer pool.Close()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return jobs.Migrate(ctx, pool, logger)
}

// Pending reports how many migrations the database at databaseURL lacks.
func Pending(ctx context.Context, databaseURL string) (int, error) {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return 0, fmt.Errorf("migrations: open: %w", err)
	}
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithTableName(VersionTable))
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	// Status would create the version table; a database never migrated has
	// every migration pending and must stay untouched here.
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", VersionTable).Scan(&exists); err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	if !exists {
		return len(p.ListSources()), nil
	}
	st, err := p.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrations: %w", err)
	}
	n := 0
	for _, s := range st {
		if s.State == goose.StatePending {
			n++
		}
	}
	return n, nil
}
