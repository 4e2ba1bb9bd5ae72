// Package runs owns run history: one row for every model-backed unit of
// work, written only through this package (agent turns, memory
// extractions, memory stores' session reports and learning runs, RAG
// ingests; each package names its own kind). A run records ids, model,
// token usage, cost, timing, tool names and an error code, and never
// prompt or response content. Store.Register serves /api/runs.
//
//	rec := runs.NewStore(pool)
//	err := rec.Insert(ctx, runs.Run{ID: id, Kind: runs.KindMemoryExtraction, ...})
//
// Writer writes runs of many concurrent callers by group commit: each
// Write returns once its run committed, in one statement with the others
// that arrived meanwhile.
//
//	w := runs.NewWriter(pool)
//	err := w.Write(ctx, run) // committed (not yet flushed to disk) when nil
package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/internal/groupcommit"
)

// Errors returned by the store.
var (
	ErrNotFound = fault.New(fault.NotFound, "not_found", "runs: not found")
)

// Kinds of run.
const (
	KindMemoryExtraction = "memory_extraction"
)

// Statuses of a run.
const (
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Run is one row of run history.
type Run struct {
	ID           uuid.UUID      `json:"id"`
	Kind         string         `json:"kind"`
	AgentID      string         `json:"agentId,omitempty"`
	Status       string         `json:"status"`
	Model        string         `json:"model,omitempty"`
	InputTokens  int            `json:"inputTokens"`
	OutputTokens int            `json:"outputTokens"`
	CostUSD      *float64       `json:"costUsd"`
	ErrorCode    string         `json:"errorCode,omitempty"`
	StartedAt    time.Time      `json:"startedAt"`
	FinishedAt   *time.Time     `json:"finishedAt"`
	DurationMS   *int           `json:"durationMs"`
	Metadata     map[string]any `json:"metadata"`
}

// Store reads and writes run history.
type Store struct {
	pool   *pgxpool.Pool
	merges *groupcommit.Group[merge]
}

type merge struct {
	id   uuid.UUID
	meta map[string]any
}

// NewStore returns a Store on pool.
func NewStore(pool *pgxpool.Pool) *Store {
	s := &Store{pool: pool}
	s.merges = groupcommit.New(MaxGroup, s.mergeGroup)
	return s
}

// Insert writes a run, usually once it has finished. Metadata must hold ids,
// counts and codes only, never prompt or response text.
func (s *Store) Insert(ctx context.Context, r Run) error { return InsertWith(ctx, s.pool, r) }

// Execer runs a statement: a pool, a connection or a transaction.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// The statement that writes one run: every writer of the runs table goes
// through InsertWith, QueueInsert or a Writer (insertGroupSQL, the same
// columns).
const insertSQL = `
	INSERT INTO stackbone_platform.runs
	  (id, kind, agent_id, status, model, input_tokens, output_tokens, cost_usd, error_code,
	   started_at, finished_at, duration_ms, metadata)
	VALUES ($1, $2, NULLIF($3, ''), $4, NULLIF($5, ''), $6, $7, $8, NULLIF($9, ''), $10, $11, $12, $13)`

func insertArgs(r Run, meta []byte) []any {
	return []any{r.ID, r.Kind, r.AgentID, r.Status, r.Model, r.InputTokens, r.OutputTokens, r.CostUSD, r.ErrorCode,
		r.StartedAt, r.FinishedAt, r.DurationMS, meta}
}

// QueueInsert queues the write of a run on a batch, so it commits in the
// same round trip and transaction as the work it records.
func QueueInsert(b *pgx.Batch, r Run) {
	if r.ID == uuid.Nil {
		r.ID = uuid.New()
	}
	meta, err := json.Marshal(orEmpty(r.Metadata))
	if err != nil {
		meta = []byte("{}")
	}
	b.Queue(insertSQL, insertArgs(r, meta)...)
}

// InsertWith writes a run through db, so it can commit in the same
// transaction as the work it records.
func InsertWith(ctx context.Context, db Execer, r Run) error {
	if r.ID == uuid.Nil {
		r.ID = uuid.New()
	}
	meta, err := json.Marshal(orEmpty(r.Metadata))
	if err != nil {
		return fmt.Errorf("runs: metadata: %w", err)
	}
	_, err = db.Exec(ctx, insertSQL, insertArgs(r, meta)...)
	if err != nil {
		return fmt.Errorf("runs: insert: %w", err)
	}
	return nil
}

// Filter narrows List. Zero values do not filter.
type Filter struct {
	Kind    string
	AgentID string
	Status  string
	// Before lists runs started strictly before this run (a cursor).
	Before uuid.UUID
	// Limit defaults to 50, at most 200.
	Limit int
}

// List returns runs newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Run, error) {
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 50
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, kind, coalesce(agent_id, ''), status, coalesce(model, ''), input_tokens, output_tokens,
		       cost_usd::float8, coalesce(error_code, ''), started_at, finished_at, duration_ms, metadata
		FROM stackbone_platform.runs
		WHERE ($1 = '' OR kind = $1) AND ($2 = '' OR agent_id = $2) AND ($3 = '' OR status = $3)
		  AND ($4::uuid IS NULL OR (started_at, id) < (SELECT started_at, id FROM stackbone_platform.runs WHERE id = $4))
		ORDER BY started_at DESC, id DESC
		LIMIT $5`, f.Kind, f.AgentID, f.Status, nullUUID(f.Before), f.Limit)
	if err != nil {
		return nil, fmt.Errorf("runs: list: %w", err)
	}
	return pgx.CollectRows(rows, scanRun)
}

// Get returns one run or ErrNotFound.
func (s *Store) Get(ctx context.Context, id uuid.UUID) (Run, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, kind, coalesce(agent_id, ''), status, coalesce(model, ''), input_tokens, output_tokens,
		       cost_usd::float8, coalesce(error_code, ''), started_at, finished_at, duration_ms, metadata
		FROM stackbone_platform.runs WHERE id = $1`, id)
	if err != nil {
		return Run{}, fmt.Errorf("runs: get: %w", err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return Run{}, ErrNotFound
	}
	return r, err
}

func scanRun(row pgx.CollectableRow) (Run, error) {
	var r Run
	err := row.Scan(&r.ID, &r.Kind, &r.AgentID, &r.Status, &r.Model, &r.InputTokens, &r.OutputTokens,
		&r.CostUSD, &r.ErrorCode, &r.StartedAt, &r.FinishedAt, &r.DurationMS, &r.Metadata)
	if err != nil {
		return Run{}, fmt.Errorf("runs: scan: %w", err)
	}
	return r, nil
}

func nullUUID(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return id
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Cancel marks a finished run cancelled after the fact, merging m into its
// metadata: a voice answer generated ahead of its turn and then abandoned
// (the caller went on) never reached anyone, whatever the model did.
func (s *Store) Cancel(ctx context.Context, id uuid.UUID, m map[string]any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("runs: metadata: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE stackbone_platform.runs SET status = $2, metadata = metadata || $3 WHERE id = $1`,
		id, StatusCancelled, b); err != nil {
		return fmt.Errorf("runs: cancel: %w", err)
	}
	return nil
}

// MergeMetadata adds keys to a run's metadata (per-turn voice metrics known
// only once audio played). It never holds content. Concurrent merges go in
// one statement (group commit), and like the runs themselves the commit
// does not wait for the disk: they are history.
func (s *Store) MergeMetadata(ctx context.Context, id uuid.UUID, m map[string]any) error {
	if _, err := json.Marshal(m); err != nil {
		return fmt.Errorf("runs: metadata: %w", err)
	}
	if err := s.merges.Do(ctx, merge{id: id, meta: m}); err != nil {
		return fmt.Errorf("runs: merge metadata: %w", err)
	}
	return nil
}

func (s *Store) mergeGroup(ctx context.Context, group []merge) error {
	// A run merged twice in one group takes its merges in order, as one.
	var ids []uuid.UUID
	byID := map[uuid.UUID]map[string]any{}
	for _, m := range group {
		into, ok := byID[m.id]
		if !ok {
			into = map[string]any{}
			byID[m.id] = into
			ids = append(ids, m.id)
		}
		maps.Copy(into, m.meta)
	}
	metas := make([]string, len(ids))
	for i, id := range ids {
		b, _ := json.Marshal(byID[id])
		metas[i] = string(b)
	}
	var b pgx.Batch
	// A plan made for these ids, not one cached for any: a connection's
	// generic plan, made while the table was small, hash-joins a scan of
	// the whole table, and keeps doing so as the table grows until the
	// next ANALYZE (on a new box under load, minutes of scans growing with
	// every run).
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_custom_plan', true)`)
	b.Queue(`UPDATE stackbone_platform.runs r SET metadata = r.metadata || g.meta::jsonb
		FROM unnest($1::uuid[], $2::text[]) AS g(id, meta) WHERE r.id = g.id`, ids, metas)
	return s.pool.SendBatch(ctx, &b).Close()
}
