package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/internal/groupcommit"
)

// MaxGroup is the most runs one group commit writes.
const MaxGroup = 256

// Writer writes runs by group commit (internal/groupcommit): runs handed
// to Write while a group is being written wait and go together in the next
// one, as one statement in one transaction, so concurrent turns share a
// round trip and a commit instead of paying one each. Write returns once
// its run committed, so a caller that answers after Write loses nothing if
// the box then crashes. The commit does not wait for the disk
// (synchronous_commit off): a crash of PostgreSQL itself can lose the runs
// of its last moments (at most three times wal_writer_delay, 600 ms by
// default), which are history, never a conversation's state. At most one
// group is in flight; with one writer at a time a group is one run and
// costs what an insert costs. A Writer is safe for concurrent use.
type Writer struct {
	pool  *pgxpool.Pool
	group *groupcommit.Group[queued]
}

type queued struct {
	run  Run
	meta []byte
}

// NewWriter returns a Writer on pool.
func NewWriter(pool *pgxpool.Pool) *Writer {
	w := &Writer{pool: pool}
	w.group = groupcommit.New(MaxGroup, w.insert)
	return w
}

// Write writes r in the next group and returns once it committed.
// Metadata must hold ids, counts and codes only. The write is not
// cancelled with ctx once queued (it is another caller's too): it ends
// within the pool's own timeouts.
func (w *Writer) Write(ctx context.Context, r Run) error {
	if r.ID == uuid.Nil {
		r.ID = uuid.New()
	}
	meta, err := json.Marshal(orEmpty(r.Metadata))
	if err != nil {
		return fmt.Errorf("runs: metadata: %w", err)
	}
	return w.group.Do(ctx, queued{run: r, meta: meta})
}

// insertGroupSQL writes a group as one statement over column arrays, the
// same text for any group size (one prepared statement).
const insertGroupSQL = `
	INSERT INTO stackbone_platform.runs
	  (id, kind, agent_id, status, model, input_tokens, output_tokens, cost_usd, error_code,
	   started_at, finished_at, duration_ms, metadata)
	SELECT id, kind, NULLIF(agent_id, ''), status, NULLIF(model, ''), input_tokens, output_tokens, cost_usd, NULLIF(error_code, ''),
	   started_at, finished_at, duration_ms, metadata::jsonb
	FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::float8[], $9::text[],
	   $10::timestamptz[], $11::timestamptz[], $12::int[], $13::text[])
	  AS g(id, kind, agent_id, status, model, input_tokens, output_tokens, cost_usd, error_code,
	   started_at, finished_at, duration_ms, metadata)`

func (w *Writer) insert(ctx context.Context, group []queued) error {
	n := len(group)
	if n == 1 {
		// Alone: the plain statement, cheaper to encode than arrays.
		var b pgx.Batch
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
		b.Queue(insertSQL, insertArgs(group[0].run, group[0].meta)...)
		if err := w.pool.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("runs: insert: %w", err)
		}
		return nil
	}
	var (
		ids                             = make([]uuid.UUID, n)
		kinds, agents, statuses, models = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		inTok, outTok                   = make([]int32, n), make([]int32, n)
		costs                           = make([]*float64, n)
		codes                           = make([]string, n)
		started                         = make([]time.Time, n)
		finished                        = make([]*time.Time, n)
		durations                       = make([]*int32, n)
		metas                           = make([]string, n)
	)
	for i, q := range group {
		r := q.run
		ids[i], kinds[i], agents[i], statuses[i], models[i] = r.ID, r.Kind, r.AgentID, r.Status, r.Model
		inTok[i], outTok[i], costs[i], codes[i] = int32(r.InputTokens), int32(r.OutputTokens), r.CostUSD, r.ErrorCode
		started[i], finished[i], metas[i] = r.StartedAt, r.FinishedAt, string(q.meta)
		if r.DurationMS != nil {
			d := int32(*r.DurationMS)
			durations[i] = &d
		}
	}
	var b pgx.Batch
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(insertGroupSQL, ids, kinds, agents, statuses, models, inTok, outTok, costs, codes, started, finished, durations, metas)
	if err := w.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("runs: insert %d: %w", n, err)
	}
	return nil
}
