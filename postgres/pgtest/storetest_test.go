package pgtest

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/migrations"
)

// adminConn opens a connection of its own to the admin database of the
// server the tests use.
func adminConn(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), setup(t).adminURL.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestParallelDatabasesAreIsolatedAndDropped(t *testing.T) {
	var (
		mu    sync.Mutex
		names []string
	)
	// Registered first, so it runs last: after both subtests' cleanups
	// dropped their databases.
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, shared.adminURL.String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if len(names) != 2 || names[0] == names[1] {
			t.Fatalf("want two distinct databases, got %q", names)
		}
		for _, n := range names {
			var exists bool
			if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", n).Scan(&exists); err != nil {
				t.Fatal(err)
			}
			if exists {
				t.Errorf("database %s still exists after its test's cleanup", n)
			}
		}
	})

	// Both subtests write before either reads, so a shared database would
	// show the other's row.
	var wrote sync.WaitGroup
	wrote.Add(2)
	bothWrote := make(chan struct{})
	go func() { wrote.Wait(); close(bothWrote) }()

	for _, who := range []string{"a", "b"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			done := sync.OnceFunc(wrote.Done)
			defer done() // a failing subtest must not hold up its partner
			ctx := t.Context()
			pool := Pool(t)
			mu.Lock()
			names = append(names, pool.Config().ConnConfig.Database)
			mu.Unlock()

			var table *string
			if err := pool.QueryRow(ctx, "SELECT to_regclass('stackbone_platform.memory_facts')::text").Scan(&table); err != nil || table == nil {
				t.Fatalf("memory_facts missing: %v", err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.memory_facts
				(id, agent_id, user_id, content, created_at, updated_at)
				VALUES (gen_random_uuid(), 'agent', $1, 'fact', now(), now())`, who); err != nil {
				t.Fatal(err)
			}
			done()
			select {
			case <-bothWrote:
			case <-time.After(30 * time.Second):
				t.Log("the other subtest did not write within 30s (run with -parallel 1?); checking this database alone")
			}
			rows, err := pool.Query(ctx, "SELECT user_id FROM stackbone_platform.memory_facts")
			if err != nil {
				t.Fatal(err)
			}
			users, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(users, []string{who}) {
				t.Fatalf("rows in %s's database: %q, want only its own", who, users)
			}
		})
	}
}

func TestURLIsMigrated(t *testing.T) {
	t.Parallel()
	u := URL(t)
	n, err := migrations.Pending(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d migrations pending in a fresh test database", n)
	}
}

func TestEmptyURLHasNoMigrations(t *testing.T) {
	t.Parallel()
	u := EmptyURL(t)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var schemas int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'stackbone%'").Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 {
		t.Fatalf("%d stackbone schemas in an empty database", schemas)
	}
}

func TestIncompleteTemplateIsRebuilt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := setup(t)
	conn := adminConn(t)
	name := "stackbone_tmpl_rebuildtest_" + strings.ToLower(rand.Text()[:10])
	drop := func(n string) {
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(n)+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { drop(name) })
	// What a process killed during migrations leaves: the database, without
	// the completion mark.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	if err := srv.ensureTemplate(ctx, name, Logger(t)); err != nil {
		t.Fatal(err)
	}
	if _, complete, err := srv.templateState(ctx, conn, name); err != nil || !complete {
		t.Fatalf("template complete = %v, %v", complete, err)
	}
	copyName := name + "_copy"
	t.Cleanup(func() { drop(copyName) })
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(copyName)+" TEMPLATE "+ident(name)); err != nil {
		t.Fatal(err)
	}
	n, err := migrations.Pending(ctx, dbURL(srv.adminURL, copyName))
	if err != nil || n != 0 {
		t.Fatalf("rebuilt template: %d pending, %v", n, err)
	}
}

func TestCreateWaitsForTemplateSessions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := setup(t)
	conn := adminConn(t)
	tmpl := "stackbone_tmpl_busytest_" + strings.ToLower(rand.Text()[:10])
	var made []string
	t.Cleanup(func() {
		for _, n := range append(made, tmpl) {
			if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(n)+" WITH (FORCE)"); err != nil {
				t.Error(err)
			}
		}
	})
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(tmpl)+" TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	// A session on the template, like a migration connection that has not
	// quite gone yet, makes CREATE DATABASE fail with 55006 until it ends.
	busy, err := pgx.Connect(ctx, dbURL(srv.adminURL, tmpl))
	if err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(300*time.Millisecond, func() { busy.Close(context.Background()) })
	defer timer.Stop()
	began := time.Now()
	name, err := srv.createDatabase(ctx, tmpl)
	if err != nil {
		t.Fatalf("create while the template was busy: %v", err)
	}
	made = append(made, name)
	if waited := time.Since(began); waited < 250*time.Millisecond {
		t.Fatalf("created after %v, before the template session ended", waited)
	}
}

// BenchmarkCreateDatabase measures what a test pays for its database:
// copying the template, and dropping the copy afterwards.
func BenchmarkCreateDatabase(b *testing.B) {
	srv := setup(b)
	ctx := context.Background()
	var creates, drops []time.Duration
	for b.Loop() {
		t0 := time.Now()
		name, err := srv.createDatabase(ctx, srv.template)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := srv.admin.Exec(ctx, "DROP DATABASE "+ident(name)+" WITH (FORCE)"); err != nil {
			b.Fatal(err)
		}
		creates = append(creates, t1.Sub(t0))
		drops = append(drops, time.Since(t1))
	}
	b.ReportMetric(p50(creates), "create-p50-ms")
	b.ReportMetric(p50(drops), "drop-p50-ms")
}

func p50(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2]) / float64(time.Millisecond)
}
