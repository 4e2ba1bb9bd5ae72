package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/migrations"
	"github.com/stackbone/box/postgres/pgcluster"
)

// Environment variables that choose the server.
const (
	// EnvDatabaseURL names a server where tests may CREATE DATABASE, as a
	// postgres:// URL; its database is used for administration only.
	EnvDatabaseURL = "STACKBONE_TEST_DATABASE_URL"
	// EnvServer set to "private" skips EnvDatabaseURL and 127.0.0.1:5432 and
	// uses the private cluster, to test that path on a machine that has a
	// server. Empty or "auto" is the normal order.
	EnvServer = "STACKBONE_TEST_PG"
	// EnvPrivateDir overrides where the private cluster lives (default
	// $TMPDIR/stackbone-testpg-<uid>); a tmpfs such as /dev/shm/... makes
	// database copies cheaper where the disk is slow to create files.
	EnvPrivateDir = "STACKBONE_TEST_PG_DIR"
)

// Errors behind a failed setup; tests see them through t.Fatal.
var (
	// ErrBadEnv means EnvDatabaseURL is not a postgres:// URL or EnvServer
	// has an unknown value.
	ErrBadEnv = errors.New("pgtest: bad environment")
	// ErrNoServer means no PostgreSQL was reachable and none could be started.
	ErrNoServer = errors.New("pgtest: no PostgreSQL for tests: set " + EnvDatabaseURL + ", run a server on 127.0.0.1:5432 (user postgres), or install the PostgreSQL binaries")
)

const (
	// localURL is the conventional developer server, tried before starting
	// a private cluster.
	localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	// templatePrefix and testPrefix name the databases this package creates;
	// nothing else on the server is touched.
	templatePrefix = "stackbone_tmpl_"
	testPrefix     = "stackbone_test_"
	// templateDone is the template's database comment once it is fully
	// migrated. A template without it was left by a process that died while
	// building it, and is rebuilt.
	templateDone = "stackbone pgtest template: complete"
	// templateLockKey serialises template builds across processes (a
	// Postgres advisory lock, held in the admin database).
	templateLockKey int64 = 0x5742_0002
	// staleAfter is the age after which a test database is taken as left by
	// a killed run and dropped.
	staleAfter = time.Hour
)

// server is the per-process choice of PostgreSQL and its template. It is
// package state on purpose: go test runs each package's tests in one
// process, and choosing the server and building the template once per
// process is what makes a fresh database per test cheap.
type server struct {
	admin    *pgxpool.Pool // to the admin database; lives as long as the process
	adminURL *url.URL
	template string
	source   string
}

var (
	setupOnce sync.Once
	shared    *server
	setupErr  error
)

// URL returns the URL of a brand new database for this test, already
// migrated, and drops the database (WITH (FORCE)) when the test ends.
// Parallel tests each get their own.
//
// The server is chosen once per process: EnvDatabaseURL if set, else a server
// on 127.0.0.1:5432 as user postgres if one answers within a second, else a
// private cluster (see privateDir). EnvServer=private forces the last.
func URL(t testing.TB) string {
	t.Helper()
	srv := setup(t)
	return srv.newDatabase(t, srv.template)
}

// EmptyURL is URL without the migrations: a brand new database with no
// schema, for tests of migrating itself. Dropped when the test ends.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return setup(t).newDatabase(t, "template0")
}

// newDatabase copies template into a new database that t's cleanup drops.
func (s *server) newDatabase(t testing.TB, template string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name, err := s.createDatabase(ctx, template)
	if err != nil {
		t.Fatalf("pgtest: create test database on %s: %v", s.source, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	return dbURL(s.adminURL, name)
}

// Pool opens a pool on a brand new, migrated database for this test (see
// URL) and closes it when the test ends, before the database is dropped.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := URL(t)
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// setup chooses the server and builds the template, once per process. The
// first test to get here does the work (and logs through its Logger); the
// others wait for it.
func setup(t testing.TB) *server {
	t.Helper()
	setupOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		shared, setupErr = newServer(ctx, Logger(t))
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func newServer(ctx context.Context, logger *slog.Logger) (*server, error) {
	began := time.Now()
	adminURL, source, err := chooseServer(ctx, logger)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(adminURL.String())
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	cfg.MaxConns = 4
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	srv := &server{admin: admin, adminURL: adminURL, source: source}
	if srv.template, err = templateName(); err != nil {
		admin.Close()
		return nil, err
	}
	if err := srv.ensureTemplate(ctx, srv.template, logger); err != nil {
		admin.Close()
		return nil, err
	}
	srv.dropStale(ctx, logger)
	logger.Info("pgtest: ready", "server", source, "template", srv.template, "duration", time.Since(began).Round(time.Millisecond))
	return srv, nil
}

// chooseServer returns the URL of an admin database on the server to use
// and a description of where it came from.
func chooseServer(ctx context.Context, logger *slog.Logger) (*url.URL, string, error) {
	switch mode := os.Getenv(EnvServer); mode {
	case "private":
		return privateCluster(ctx, logger)
	case "", "auto":
	default:
		return nil, "", fmt.Errorf("%w: %s=%q, want \"private\", \"auto\" or empty", ErrBadEnv, EnvServer, mode)
	}
	if raw := os.Getenv(EnvDatabaseURL); raw != "" {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, "", fmt.Errorf("%w: %s must be a postgres:// URL", ErrBadEnv, EnvDatabaseURL)
		}
		if err := ping(ctx, u.String(), 10*time.Second); err != nil {
			return nil, "", fmt.Errorf("pgtest: %s: %w", EnvDatabaseURL, err)
		}
		return u, EnvDatabaseURL, nil
	}
	if err := ping(ctx, localURL, time.Second); err == nil {
		u, _ := url.Parse(localURL)
		return u, "127.0.0.1:5432", nil
	} else {
		logger.Info("pgtest: no server on 127.0.0.1:5432, using a private cluster", "err", err)
	}
	return privateCluster(ctx, logger)
}

// privateDir holds the private cluster that all test processes of this user
// share (EnvPrivateDir overrides it). It is left running when the tests end, so the next run (and the
// other packages' test processes running beside this one) reuse it instead
// of paying initdb and start-up each time; stop it with
// `pg_ctl stop -D <dir>/data` (as user postgres when running as root) or
// just delete the directory after stopping it.
func privateDir() string {
	if d := os.Getenv(EnvPrivateDir); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "stackbone-testpg-"+strconv.Itoa(os.Getuid()))
}

// privateCluster starts (or reuses) the shared private cluster. pgcluster
// holds an flock on its directory while it initialises or starts the
// server, so test processes of parallel packages never initdb at once and
// all end up on the same server.
func privateCluster(ctx context.Context, logger *slog.Logger) (*url.URL, string, error) {
	if _, err := pgcluster.FindBinDir(); err != nil {
		return nil, "", fmt.Errorf("%w (%v)", ErrNoServer, err)
	}
	dir := privateDir()
	c, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir, NoSync: true, Logger: logger})
	if err != nil {
		return nil, "", err
	}
	u, err := url.Parse(c.URL("postgres"))
	if err != nil {
		return nil, "", fmt.Errorf("pgtest: %w", err)
	}
	return u, "private cluster in " + dir, nil
}

func ping(ctx context.Context, rawURL string, timeout time.Duration) error {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = timeout
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// templateName names the template after the migrations it holds, so a
// change to any migration file gets a new template and an unchanged set
// reuses the existing one across runs and processes.
func templateName() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		if err != nil {
			return err
		}
		// NUL separators keep name/content boundaries unambiguous.
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("pgtest: hash migrations: %w", err)
	}
	return templatePrefix + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// templateState reports whether the template exists and is complete.
func (s *server) templateState(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, name string) (exists, complete bool, err error) {
	var comment *string
	err = q.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).Scan(&comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("pgtest: %w", err)
	}
	return true, comment != nil && *comment == templateDone, nil
}

// ensureTemplate makes sure the migrated template database exists. One
// process builds it under an advisory lock while the others wait; a
// template left incomplete by a process that died mid-build is dropped and
// rebuilt.
func (s *server) ensureTemplate(ctx context.Context, name string, logger *slog.Logger) error {
	if _, complete, err := s.templateState(ctx, s.admin, name); err != nil || complete {
		return err
	}
	// A connection of its own, not the pool's: closing it releases the lock
	// whatever happens, and no pooled session is left holding it.
	conn, err := pgx.Connect(ctx, s.adminURL.String())
	if err != nil {
		return fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return fmt.Errorf("pgtest: template lock: %w", err)
	}
	exists, complete, err := s.templateState(ctx, conn, name)
	if err != nil || complete {
		return err // another process built it while we waited
	}
	began := time.Now()
	if exists {
		logger.Warn("pgtest: rebuilding incomplete template", "template", name)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+ident(name)+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgtest: drop incomplete template: %w", err)
		}
	}
	// template0 never has sessions (so the copy cannot fail on them) and
	// holds nothing a local administrator may have added to template1.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE template0"); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P04" {
			// Advisory locks are per database: a process administering
			// through another database (STACKBONE_TEST_DATABASE_URL) is
			// building the same template. Let it finish.
			return s.awaitTemplate(ctx, conn, name)
		}
		return fmt.Errorf("pgtest: create template: %w", err)
	}
	if err := migrations.Apply(ctx, dbURL(s.adminURL, name), logger); err != nil {
		return fmt.Errorf("pgtest: migrate template: %w", err)
	}
	// No one needs to connect to the template again, and a session on it
	// (autovacuum, a curious psql) would make CREATE DATABASE ... TEMPLATE
	// fail. Copies are created with connections allowed.
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("pgtest: seal template: %w", err)
	}
	if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+ident(name)+" IS '"+templateDone+"'"); err != nil {
		return fmt.Errorf("pgtest: mark template: %w", err)
	}
	logger.Info("pgtest: built template", "template", name, "duration", time.Since(began).Round(time.Millisecond))
	return nil
}

// awaitTemplate polls until another process has completed the template.
func (s *server) awaitTemplate(ctx context.Context, conn *pgx.Conn, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if _, complete, err := s.templateState(ctx, conn, name); err != nil || complete {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgtest: template %s still incomplete: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createDatabase copies template into a new database and returns its
// name. The name carries its creation time, so dropStale can tell a
// database left by a killed run.
func (s *server) createDatabase(ctx context.Context, template string) (string, error) {
	var rnd [5]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("%s%d_%s", testPrefix, time.Now().Unix(), hex.EncodeToString(rnd[:]))
	stmt := "CREATE DATABASE " + ident(name) + " TEMPLATE " + ident(template)
	// CREATE DATABASE fails with object_in_use while any session is on the
	// template; the migration's own connections can take a moment to end
	// after the template was built.
	giveUp := time.Now().Add(10 * time.Second)
	backoff := 10 * time.Millisecond
	for {
		_, err := s.admin.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || time.Now().After(giveUp) {
			return name, err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// dropStale drops test databases older than staleAfter: runs killed before
// their cleanups ran leave them behind. Failures only log: another process
// may be dropping the same ones.
func (s *server) dropStale(ctx context.Context, logger *slog.Logger) {
	rows, err := s.admin.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'stackbone\_test\_%'`)
	if err != nil {
		logger.Warn("pgtest: list stale test databases", "err", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		logger.Warn("pgtest: list stale test databases", "err", err)
		return
	}
	dropped := 0
	for _, n := range names {
		ts, _, ok := strings.Cut(strings.TrimPrefix(n, testPrefix), "_")
		sec, err := strconv.ParseInt(ts, 10, 64)
		if !ok || err != nil || time.Since(time.Unix(sec, 0)) < staleAfter {
			continue
		}
		if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(n)+" WITH (FORCE)"); err != nil {
			logger.Warn("pgtest: drop stale test database", "database", n, "err", err)
			continue
		}
		dropped++
	}
	if dropped > 0 {
		logger.Info("pgtest: dropped stale test databases", "count", dropped)
	}
}

// dbURL is base pointed at database name.
func dbURL(base *url.URL, name string) string {
	u := *base
	u.Path = "/" + name
	u.RawPath = ""
	q := u.Query()
	if q.Has("dbname") {
		q.Del("dbname")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }
