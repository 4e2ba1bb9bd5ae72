// Package jobs is the box's background work queue: River on the box's own
// Postgres, with its tables in stackbone_platform, so several boxes share
// one queue safely. Packages with background work (document ingest, learning
// runs) register their workers on a Registry; cmd/stackbone starts one
// client for all of them.
//
//	reg := jobs.NewRegistry()
//	river.AddWorker(reg.Workers(), &ingestWorker{...})
//	client, err := jobs.NewClient(pool, reg, logger)
//	client.Start(ctx)
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// Schema holds River's tables.
const Schema = "stackbone_platform"

// Migrate brings River's own tables up to date in Schema. migrations.Apply
// calls it after the box's migrations.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: Schema, Logger: logger})
	if err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	return nil
}

// Registry collects workers and queues before the client starts.
type Registry struct {
	workers *river.Workers
	queues  map[string]river.QueueConfig
}

// NewRegistry returns an empty registry with the default queue.
func NewRegistry() *Registry {
	return &Registry{workers: river.NewWorkers(), queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}}}
}

// Workers is where packages add their workers (river.AddWorker).
func (r *Registry) Workers() *river.Workers { return r.workers }

// Queue declares a queue with its concurrency.
func (r *Registry) Queue(name string, maxWorkers int) {
	r.queues[name] = river.QueueConfig{MaxWorkers: maxWorkers}
}

// RescueAfter is when a job still marked running (its box died) is handed
// to another box: past the longest job timeout of the box's workers (10
// minutes for an ingest), well before River's default of an hour.
const RescueAfter = 15 * time.Minute

// Client is the River client type the box uses.
type Client = river.Client[pgx.Tx]

// NewClient returns a client working the registry's queues (call Start).
// With no workers registered it can still insert jobs.
func NewClient(pool *pgxpool.Pool, reg *Registry, logger *slog.Logger) (*Client, error) {
	return NewBoxClient(pool, reg, logger, "")
}

// NewInserter returns a client that only inserts jobs (in the caller's
// transaction, with InsertTx): for a package that queues work another
// client runs.
func NewInserter(pool *pgxpool.Pool, logger *slog.Logger) (*Client, error) {
	c, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: Schema, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return c, nil
}

// NewBoxClient is NewClient for the box boxID, whose jobs Heartbeat hands
// back to the queue within seconds if the box dies ("" picks an id and
// leaves the rescue to River's window).
func NewBoxClient(pool *pgxpool.Pool, reg *Registry, logger *slog.Logger, boxID string) (*Client, error) {
	cfg := &river.Config{Schema: Schema, Logger: logger, Workers: reg.workers, Queues: reg.queues,
		RescueStuckJobsAfter: RescueAfter, ID: boxID, Middleware: []rivertype.Middleware{&tracing{}}}
	c, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return c, nil
}
