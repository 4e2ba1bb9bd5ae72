// Package pgtest gives each test its own real, migrated PostgreSQL
// database, copied from a template rather than migrated, and dropped when
// the test ends. It needs PostgreSQL 13 or newer (DROP DATABASE ... FORCE).
//
//	func TestFacts(t *testing.T) {
//		t.Parallel()
//		pool := pgtest.Pool(t) // fresh database, all migrations applied
//		logger := pgtest.Logger(t)
//		_, err := pool.Exec(t.Context(), "INSERT INTO stackbone_platform.memory_facts ...")
//		...
//	}
//
// URL gives the same fresh database as a URL (for code that opens its own
// connections, or a subprocess); EmptyURL gives a fresh database without the
// migrations, for tests of migrating; Logger routes slog through t.Log.
//
// Which server (chosen once per test process):
//
//  1. STACKBONE_TEST_DATABASE_URL, a postgres:// URL to a server where the
//     user may CREATE DATABASE (its own database is only used to administer);
//  2. else a server on 127.0.0.1:5432 as user postgres, if one answers
//     within a second;
//  3. else a private cluster (postgres/pgcluster, fsync off) in
//     $TMPDIR/stackbone-testpg-<uid>, shared by all test processes and left
//     running afterwards so later runs start instantly. Stop it with
//     pg_ctl stop -D $TMPDIR/stackbone-testpg-<uid>/data.
//
// STACKBONE_TEST_PG=private skips 1 and 2, to exercise the private cluster on
// a machine that has a server. STACKBONE_TEST_PG_DIR moves the private
// cluster; on a tmpfs (/dev/shm/stackbone-testpg) a database copy took 12 ms
// instead of 50-300 ms on this project's ext4 build VM, where creating the
// ~300 files of each copy right after dropping others is the cost.
//
// Speed: the migrations are applied once, to a template database named after
// a hash of the migration files (stackbone_tmpl_<hash>), built by one process
// under an advisory lock while the others wait. Every test database is a
// copy (CREATE DATABASE stackbone_test_<unix time>_<random> TEMPLATE ...).
// A template left half-built by a killed process is rebuilt; test databases
// older than an hour, left by killed runs, are dropped on first use.
// Templates of older migration sets are left in place.
package pgtest
