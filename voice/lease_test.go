package voice

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/postgres/pgtest"
)

// TestCallStatementsFindTheirCallsByKey: the statements a box runs on
// the table of calls for the calls it carries (a call's heard entries
// beside a check of its row, the leases' renewal) find their rows by key
// however many calls the table came to hold since the connection first
// ran them. The connection runs each while the
// table holds one call (a plan cached then would scan the table), 20,000
// ended calls are added, and the runs after read none of them.
func TestCallStatementsFindTheirCallsByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OneConnection(t)
	m := &Manager{cfg: Config{Pool: pool, LeaseTTL: 30 * time.Second}, log: pgtest.Logger(t), calls: map[string]*Call{"call_open": nil}}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.voice_calls (id, direction, agent_id, status, started_at, lease_until)
		VALUES ('call_open', 'inbound', 'support', 'active', now(), now() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	write := func(seq int) {
		t.Helper()
		entry := fmt.Sprintf(`{"role":"user","text":"entry %d"}`, seq)
		if err := m.writeHeard(ctx, []heardWrite{{call: "call_open", seq: seq, entries: []string{entry}, usage: `{}`}}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := range 10 {
		write(seq)
		m.renewLeases(ctx)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.voice_calls (id, direction, agent_id, status, started_at)
		SELECT 'call_' || g, 'inbound', 'support', 'ended', now() FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		run  func(i int)
	}{
		{"writes of one call's entries", func(i int) { write(10 + i) }},
		{"renewals of the leases", func(int) { m.renewLeases(ctx) }},
	} {
		before := pgtest.SeqRead(t, pool, "stackbone_platform.voice_calls")
		for i := range 5 {
			s.run(i)
		}
		if read := pgtest.SeqRead(t, pool, "stackbone_platform.voice_calls") - before; read >= 20000 {
			t.Errorf("5 %s read %d calls in sequence: the table scanned", s.name, read)
		}
	}
	var n int
	var renewed bool
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM stackbone_platform.voice_call_entries WHERE call_id = 'call_open'),
		(SELECT lease_until > now() + interval '1 minute' FROM stackbone_platform.voice_calls WHERE id = 'call_open')`).Scan(&n, &renewed); err != nil {
		t.Fatal(err)
	}
	if n != 15 || renewed {
		t.Fatalf("%d entries written (want 15); lease renewed past a minute: %v (want its TTL of 30 s)", n, renewed)
	}
}

// TestRunTokensFindTheRunsByKey: the tokens of a call's failed turns, read
// from their runs as the call ends, are found by key however many runs the
// table came to hold since the connection first read them. It reads while
// the table holds nine runs (a plan cached then would scan the table),
// 20,000 runs are added, and the reads after read none of them.
func TestRunTokensFindTheRunsByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OneConnection(t)
	m := &Manager{cfg: Config{Pool: pool}}
	ids := []uuid.UUID{uuid.New(), uuid.New()}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.runs (id, kind, status, started_at, model, input_tokens, output_tokens)
		SELECT unnest($1::uuid[]), 'agent_turn', 'failed', now(), 'openai/m', 30, 7`, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.runs (id, kind, status, started_at, model, input_tokens)
		SELECT gen_random_uuid(), 'agent_turn', 'succeeded', now(), 'openai/m', 1 FROM generate_series(1, 7)`); err != nil {
		t.Fatal(err)
	}
	read := func() costs.Usage {
		t.Helper()
		var u costs.Usage
		if err := m.runTokens(ctx, ids, &u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	for range 10 {
		read()
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stackbone_platform.runs (id, kind, status, started_at, model, input_tokens)
		SELECT gen_random_uuid(), 'agent_turn', 'succeeded', now(), 'openai/m', 1 FROM generate_series(1, 20000)`); err != nil {
		t.Fatal(err)
	}
	before := pgtest.SeqRead(t, pool, "stackbone_platform.runs")
	var u costs.Usage
	for range 5 {
		u = read()
	}
	if n := pgtest.SeqRead(t, pool, "stackbone_platform.runs") - before; n >= 20000 {
		t.Fatalf("5 reads of two runs' tokens read %d runs in sequence: the table scanned", n)
	}
	if got := u.Model.ByModel["openai/m"]; got.InputTokens != 60 || got.OutputTokens != 14 {
		t.Fatalf("tokens %+v, want 60 in and 14 out", u.Model.ByModel)
	}
}
