// Package storetest gives each test its own real, migrated PostgreSQL
// database, created in milliseconds and dropped when the test ends.
//
//	func TestAdd(t *testing.T) {
//		t.Parallel()
//		pool := storetest.Pool(t) // fresh database, all migrations applied
//		store := memory.NewStore(pool, storetest.Logger(t))
//		...
//	}
//
// Which server (chosen once per test process):
//
//  1. STACKBONE_TEST_DATABASE_URL, a postgres:// URL to a server where the
//     user may CREATE DATABASE (its own database is only used to administer);
//  2. else a server on 127.0.0.1:5432 as user postgres, if one answers
//     within a second;
//  3. else a private cluster (store/pgcluster, fsync off) in
//     $TMPDIR/stackbone-testpg-<uid>, shared by all test processes and left
//     running afterwards so later runs start instantly. Stop it with
//     pg_ctl stop -D $TMPDIR/stackbone-testpg-<uid>/data.
//
// STACKBONE_TEST_PG=private skips 1 and 2, to exercise the private cluster on
// a machine that has a server.
//
// Speed: the migrations are applied once, to a template database named after
// a hash of the migration files (stackbone_tmpl_<hash>), built by one process
// under an advisory lock while the others wait. Every test database is a
// copy (CREATE DATABASE stackbone_test_<unix time>_<random> TEMPLATE ...).
// A template left half-built by a killed process is rebuilt; test databases
// older than an hour, left by killed runs, are dropped on first use.
// Templates of older migration sets are left in place.
package storetest
