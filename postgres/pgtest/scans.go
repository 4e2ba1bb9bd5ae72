package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// OneConnection opens a pool of a single connection on a brand new,
// migrated database (see URL), so every statement of the test shares one
// backend: its plan cache, and its statistics for SeqRead.
func OneConnection(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// SeqRead is the number of rows sequential scans of table (schema
// qualified) have read so far, counting the statements the pool's
// connection ran (with a pool of one connection, OneConnection, all of
// the test's): a statement that finds its rows by key adds none.
func SeqRead(t testing.TB, pool *pgxpool.Pool, table string) int64 {
	t.Helper()
	seq, _ := reads(t, pool, table)
	return seq
}

// RowsRead is SeqRead and the rows of table fetched through its indexes:
// a statement that scans an index over more rows than it needs (all of a
// campaign's contacts to update a few) adds them too.
func RowsRead(t testing.TB, pool *pgxpool.Pool, table string) int64 {
	t.Helper()
	seq, fetched := reads(t, pool, table)
	return seq + fetched
}

func reads(t testing.TB, pool *pgxpool.Pool, table string) (seq, fetched int64) {
	t.Helper()
	ctx := context.Background()
	// The connection's counts reach the shared view once it is idle
	// after this.
	if _, err := pool.Exec(ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatalf("pgtest: flush statistics: %v", err)
	}
	if err := pool.QueryRow(ctx, `SELECT coalesce(seq_tup_read, 0), coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables
		WHERE relid = $1::regclass`, table).Scan(&seq, &fetched); err != nil {
		t.Fatalf("pgtest: reads of %s: %v", table, err)
	}
	return seq, fetched
}
