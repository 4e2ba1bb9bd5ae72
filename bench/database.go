package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/migrations"
)

// Database creates a fresh database for the run on the server at adminURL,
// applies the migrations and opens a pool of at most maxConns connections
// (0: pgxpool's default). drop closes the pool and drops the database.
func Database(ctx context.Context, adminURL string, maxConns int) (pool *pgxpool.Pool, drop func(), err error) {
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
