package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/internal/realtime"
	"github.com/stackbone/box/migrations"
)

// Database creates a fresh database for the run on the server at adminURL,
// applies the migrations and opens a pool of at most maxConns connections
// (0: pgxpool's default). drop closes the pool and drops the database.
func Database(ctx context.Context, adminURL string, maxConns int) (pool *pgxpool.Pool, drop func(), err error) {
	return database(ctx, adminURL, maxConns, false)
}

// database is Database; with rt (the run's stand-ins at real-time
// priority), each backend the pool opens on this machine runs at it too
// (raiseBackend).
func database(ctx context.Context, adminURL string, maxConns int, rt bool) (pool *pgxpool.Pool, drop func(), err error) {
	dbURL, dropDB, err := FreshDatabase(ctx, adminURL)
	if err != nil {
		return nil, nil, err
	}
	if err := migrations.Apply(ctx, dbURL, nil); err != nil {
		dropDB()
		return nil, nil, err
	}
	pcfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		dropDB()
		return nil, nil, err
	}
	if maxConns > 0 {
		pcfg.MaxConns = int32(maxConns)
	}
	if rt {
		pcfg.AfterConnect = raiseBackend
	}
	pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		dropDB()
		return nil, nil, err
	}
	return pool, func() { pool.Close(); dropDB() }, nil
}

// FreshDatabase creates a database for the run on the server at adminURL and
// returns its URL and a function that drops it.
func FreshDatabase(ctx context.Context, adminURL string) (string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "stackbone_bench_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("bench: connect: %w", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		return "", nil, fmt.Errorf("bench: create database: %w", err)
	}
	u, err := withDatabase(adminURL, name)
	if err != nil {
		admin.Close(ctx)
		return "", nil, err
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.Exec(dctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(dctx)
	}
	return u, drop, nil
}

// withDatabase returns the connection string with another database name.
func withDatabase(connString, name string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("bench: database URL: %w", err)
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return connString + " dbname=" + name, nil
}

// warmPool opens every connection pool may hold before a run measures, as
// a box that has been taking calls has them open: otherwise the first step
// under load pays for PostgreSQL starting a backend process per connection
// (milliseconds of CPU each on both sides) inside its measurement window.
func warmPool(ctx context.Context, pool *pgxpool.Pool) error {
	conns := make([]*pgxpool.Conn, 0, pool.Config().MaxConns)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("bench: warm the pool: %w", err)
		}
		conns = append(conns, c)
	}
	return nil
}

// Backends raised and left ordinary by raiseBackend, for the report.
var backendsRaised, backendsOrdinary atomic.Int64

// raiseBackend gives a connection's PostgreSQL backend, when it runs on
// this machine, the real-time priority of the run's stand-ins for the
// network and the model. They stand for what a deployed box does not
// share its processors with; at real-time priority beside an ordinary
// database they would starve it, and every call's setup (its record and
// recall) would wait on them. A backend elsewhere, or a refusal, leaves
// it as it is (counted in backendsOrdinary).
func raiseBackend(_ context.Context, conn *pgx.Conn) error {
	pid := int(conn.PgConn().PID())
	if !localConn(conn.PgConn().Conn()) || !isPostgres(pid) || realtime.RaiseProcess(pid) != nil {
		backendsOrdinary.Add(1)
		return nil
	}
	backendsRaised.Add(1)
	return nil
}

// localConn reports whether c is to a server on this machine.
func localConn(c net.Conn) bool {
	switch a := c.RemoteAddr().(type) {
	case *net.UnixAddr:
		return true
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	}
	return false
}

// isPostgres reports whether the process pid of this machine is a
// PostgreSQL server process.
func isPostgres(pid int) bool {
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return err == nil && strings.TrimSpace(string(comm)) == "postgres"
}

// backendsNote says, for a report's setup, at which priority the run's
// database backends ran.
func backendsNote() string {
	raised, ordinary := backendsRaised.Load(), backendsOrdinary.Load()
	switch {
	case raised == 0 && ordinary == 0:
		return ""
	case ordinary == 0:
		return "; the run's PostgreSQL backends at the same priority as the stand-ins (they stand for what a deployed box does not share its processors with, and would starve the database the box waits on)"
	default:
		return fmt.Sprintf("; %d of the run's PostgreSQL backends at ordinary priority (the database elsewhere, or raising it refused), %d raised", ordinary, raised)
	}
}
