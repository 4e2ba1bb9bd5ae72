package runs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/runs"
)

// TestWriterGroupsConcurrentRuns: runs written at once by many callers are
// each in the table, field for field, the moment their Write returns.
func TestWriterGroupsConcurrentRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	w := runs.NewWriter(pool)
	store := runs.NewStore(pool)
	start := time.Now().UTC().Truncate(time.Millisecond)
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := runs.Run{ID: uuid.New(), Kind: "agent_turn", Status: runs.StatusSucceeded, StartedAt: start,
				InputTokens: i, OutputTokens: 2 * i, Metadata: map[string]any{"i": i}}
			if i%2 == 0 {
				cost, ms, end := float64(i)/1000, i, start.Add(time.Duration(i)*time.Millisecond)
				r.AgentID, r.Model, r.CostUSD, r.DurationMS, r.FinishedAt = "support", "openai/m", &cost, &ms, &end
			} else {
				r.Status, r.ErrorCode = runs.StatusFailed, "provider_failed"
			}
			if err := w.Write(ctx, r); err != nil {
				errs <- err
				return
			}
			got, err := store.Get(ctx, r.ID)
			if err != nil {
				errs <- fmt.Errorf("run %d after its Write returned: %w", i, err)
				return
			}
			ok := got.Kind == r.Kind && got.Status == r.Status && got.AgentID == r.AgentID && got.Model == r.Model &&
				got.InputTokens == i && got.OutputTokens == 2*i && got.ErrorCode == r.ErrorCode &&
				got.StartedAt.Equal(start) && got.Metadata["i"] == float64(i)
			if i%2 == 0 {
				ok = ok && got.CostUSD != nil && *got.CostUSD == float64(i)/1000 && got.DurationMS != nil && *got.DurationMS == i &&
					got.FinishedAt != nil && got.FinishedAt.Equal(*r.FinishedAt)
			} else {
				ok = ok && got.CostUSD == nil && got.DurationMS == nil && got.FinishedAt == nil
			}
			if !ok {
				errs <- fmt.Errorf("run %d: wrote %+v, read %+v", i, r, got)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var count int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.runs`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("%d runs in the table, want %d", count, n)
	}
}

// Metadata merged into many runs at once, twice into each, is in its run
// the moment its merge returns, beside the keys the run had and the other
// merge's.
func TestMergesOfManyRunsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	w := runs.NewWriter(pool)
	store := runs.NewStore(pool)
	const n = 100
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = uuid.New()
		if err := w.Write(ctx, runs.Run{ID: ids[i], Kind: "agent_turn", Status: runs.StatusSucceeded, StartedAt: time.Now(),
			Metadata: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := 0; i < 2*n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := ids[i%n]
			if err := store.MergeMetadata(ctx, id, map[string]any{fmt.Sprintf("k%d", i/n): i}); err != nil {
				errs <- err
				return
			}
			got, err := store.Get(ctx, id)
			if err != nil {
				errs <- err
				return
			}
			if got.Metadata[fmt.Sprintf("k%d", i/n)] != float64(i) || got.Metadata["i"] != float64(i%n) {
				errs <- fmt.Errorf("run %d after merge %d: %v", i%n, i, got.Metadata)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, id := range ids {
		got, _ := store.Get(ctx, id)
		if got.Metadata["k0"] != float64(i) || got.Metadata["k1"] != float64(i+n) || got.Metadata["i"] != float64(i) {
			t.Fatalf("run %d: %v, want both merges and its own key", i, got.Metadata)
		}
	}
}

// TestMergeReadsOnlyItsRuns: a merge finds its runs by their key however
// the table grew since the connection first merged. The connection merges
// while the table is tiny (its cached plan would then scan the table),
// the table grows to 20,000 runs, and the merges after read none of the
// others (the table's counted sequential reads stay put).
func TestMergeReadsOnlyItsRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OneConnection(t)
	w, store := runs.NewWriter(pool), runs.NewStore(pool)
	id := uuid.New()
	if err := w.Write(ctx, runs.Run{ID: id, Kind: "agent_turn", Status: runs.StatusSucceeded, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := store.MergeMetadata(ctx, id, map[string]any{"small": i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.runs (id, kind, status, started_at, metadata)
		SELECT gen_random_uuid(), 'agent_turn', 'succeeded', now(), '{}' FROM generate_series(1, 20000)`); err != nil {
		t.Fatal(err)
	}
	before := pgtest.SeqRead(t, pool, "stackbone_platform.runs")
	for i := range 5 {
		if err := store.MergeMetadata(ctx, id, map[string]any{"large": i}); err != nil {
			t.Fatal(err)
		}
	}
	if read := pgtest.SeqRead(t, pool, "stackbone_platform.runs") - before; read >= 20000 {
		t.Fatalf("5 merges into one run read %d runs in sequence: the table scanned", read)
	}
	got, err := store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata["small"] != float64(9) || got.Metadata["large"] != float64(4) {
		t.Fatalf("metadata %v, want small 9 and large 4", got.Metadata)
	}
}
