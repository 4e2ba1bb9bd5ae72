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
