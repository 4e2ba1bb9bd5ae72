package studio_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/provider/providertest"
)

// seedCalls writes n ended calls through SQL, one second apart, spread
// over three agents, the three directions and two outcomes.
func (b *box) seedCalls(n int, t0 time.Time) {
	b.t.Helper()
	_, err := b.pool.Exec(context.Background(), `INSERT INTO stackbone_platform.voice_calls
		(id, direction, agent_id, phone_number, status, started_at, ended_at, outcome, duration_seconds)
		SELECT 'call_' || lpad(i::text, 6, '0'), (ARRAY['inbound','outbound','browser'])[i % 3 + 1],
		       (ARRAY['support','guarded','receptionist'])[i % 3 + 1], '+346' || lpad((i % 100)::text, 8, '0'), 'ended',
		       $2::timestamptz + i * interval '1 second', $2::timestamptz + i * interval '1 second' + interval '30 seconds',
		       CASE WHEN i % 2 = 0 THEN 'completed' ELSE 'caller_hangup' END, 30
		FROM generate_series(1, $1) AS i`, n, t0)
	if err != nil {
		b.t.Fatal(err)
	}
}

type callRow struct {
	ID          string    `json:"id"`
	Direction   string    `json:"direction"`
	Agent       string    `json:"agent"`
	PhoneNumber *string   `json:"phoneNumber"`
	Outcome     *string   `json:"outcome"`
	StartedAt   time.Time `json:"startedAt"`
}

// GET /api/voice/calls pages by keyset through every call exactly once,
// newest first, and filters by direction, agent, outcome, number and time.
func TestCallsListPagesAndFilters(t *testing.T) {
	b := newBox(t)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	b.seedCalls(10000, t0)
	seen := map[string]bool{}
	var prev time.Time
	before := ""
	for pages := 0; ; pages++ {
		var page []callRow
		if st, code := b.do(adminKey, "GET", "/api/voice/calls?limit=200&before="+before, nil, &page); st != 200 {
			t.Fatalf("page %d: %d %s", pages, st, code)
		}
		for _, c := range page {
			if seen[c.ID] || (!prev.IsZero() && c.StartedAt.After(prev)) {
				t.Fatalf("page %d: %s repeated or out of order", pages, c.ID)
			}
			seen[c.ID], prev = true, c.StartedAt
		}
		if len(page) < 200 {
			break
		}
		before = page[len(page)-1].ID
	}
	if len(seen) != 10000 {
		t.Fatalf("paged through %d calls", len(seen))
	}

	q := url.Values{"direction": {"outbound"}, "agent": {"guarded"}, "outcome": {"completed"}, "number": {"+34600000010"},
		"from": {t0.Add(1000 * time.Second).Format(time.RFC3339)}, "to": {t0.Add(5000 * time.Second).Format(time.RFC3339)}}
	var got []callRow
	if st, code := b.do(adminKey, "GET", "/api/voice/calls?"+q.Encode(), nil, &got); st != 200 {
		t.Fatalf("filtered: %d %s", st, code)
	}
	// i % 3 == 1 (outbound, guarded), i % 2 == 0, i % 100 == 10, 1000 <= i < 5000.
	want := 0
	for i := 1000; i < 5000; i++ {
		if i%3 == 1 && i%2 == 0 && i%100 == 10 {
			want++
		}
	}
	if len(got) != want || want == 0 {
		t.Fatalf("filtered %d calls, want %d", len(got), want)
	}
	for _, c := range got {
		if c.Direction != "outbound" || c.Agent != "guarded" || *c.Outcome != "completed" || *c.PhoneNumber != "+34600000010" ||
			c.StartedAt.Before(t0.Add(1000*time.Second)) || !c.StartedAt.Before(t0.Add(5000*time.Second)) {
			t.Fatalf("a call outside the filter: %+v", c)
		}
	}
	for _, bad := range []string{"direction=sideways", "limit=0", "limit=201", "limit=x", "from=yesterday", "to=2026-13-01"} {
		if st, code := b.do(adminKey, "GET", "/api/voice/calls?"+bad, nil, nil); st != 400 || code != "voice_invalid_request" {
			t.Fatalf("%s: %d %s", bad, st, code)
		}
	}
	// The planner answers a page from the index, not by sorting the table.
	b.noSort(`SELECT id FROM stackbone_platform.voice_calls WHERE agent_id = 'support' ORDER BY started_at DESC, id DESC LIMIT 50`)
	b.noSort(`SELECT id FROM stackbone_platform.voice_calls ORDER BY started_at DESC, id DESC LIMIT 50`)
	b.noSort(`SELECT id FROM stackbone_platform.voice_calls WHERE phone_number = '+34600000010' ORDER BY started_at DESC, id DESC LIMIT 50`)
}

// noSort fails when PostgreSQL would sort rows to answer query (the page
// should come off an index).
func (b *box) noSort(query string) {
	b.t.Helper()
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `ANALYZE`); err != nil {
		b.t.Fatal(err)
	}
	rows, err := b.pool.Query(ctx, `EXPLAIN `+query)
	if err != nil {
		b.t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		b.t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); strings.Contains(plan, "Sort") {
		b.t.Fatalf("%s sorts:\n%s", query, plan)
	}
}

// GET /api/sessions pages by keyset too, and filters by agent and status.
func TestSessionsListPages(t *testing.T) {
	b := newBox(t)
	_, err := b.pool.Exec(context.Background(), `INSERT INTO stackbone_platform.sessions
		(id, kind, agent_id, status, turns, preview, created_at, last_activity_at)
		SELECT 'sess_' || lpad(i::text, 6, '0'), 'session', (ARRAY['support','guarded'])[i % 2 + 1],
		       CASE WHEN i % 5 = 0 THEN 'held' ELSE 'completed' END, 1, 'hello ' || i,
		       now() - interval '1 day', now() - (i % 1000) * interval '1 second'
		FROM generate_series(1, 3000) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	before := ""
	for {
		var page []struct{ ID, Agent, Status string }
		if st, code := b.do(adminKey, "GET", "/api/sessions?agent=guarded&status=held&limit=50&before="+before, nil, &page); st != 200 {
			t.Fatalf("%d %s", st, code)
		}
		for _, s := range page {
			if seen[s.ID] || s.Agent != "guarded" || s.Status != "held" {
				t.Fatalf("%+v repeated or outside the filter", s)
			}
			seen[s.ID] = true
		}
		if len(page) < 50 {
			break
		}
		before = page[len(page)-1].ID
	}
	// i % 2 == 1 and i % 5 == 0: 300 of 3000.
	if len(seen) != 300 {
		t.Fatalf("paged through %d sessions", len(seen))
	}
	b.noSort(`SELECT id FROM stackbone_platform.sessions ORDER BY last_activity_at DESC, id DESC LIMIT 50`)
	b.noSort(`SELECT id FROM stackbone_platform.sessions WHERE agent_id = 'support' ORDER BY last_activity_at DESC, id DESC LIMIT 50`)
}

// The rows of Sessions, Calls and Runs open from the keyboard: Tab reaches
// a row, Enter opens it.
func TestListRowsOpenFromTheKeyboard(t *testing.T) {
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Hello."})
	b.chat("support", "k-1", "crm/1", "Hi")
	b.insertCall("call_key", "inbound", "receptionist", "+34600111222", "completed", time.Now().Add(-time.Minute), `[]`, `{"read":true,"save":true}`, `[]`)
	p := b.open(t)
	p.signIn(adminKey)
	for _, screen := range []struct{ hash, table, detail string }{
		{"#/sessions", "table.sessions", `location.hash.startsWith("#/sessions/") && !!document.getElementById("turns")`},
		{"#/calls", "table.calls", `location.hash === "#/calls/call_key" && !!document.getElementById("heard")`},
		{"#/runs", "table.runs", `location.hash.startsWith("#/runs/") && !!document.getElementById("run")`},
	} {
		p.goTo(screen.hash)
		p.waitFor(`document.querySelector("`+screen.table+`").dataset.rows === "1"`, "the row of "+screen.hash)
		p.js(`document.activeElement && document.activeElement.blur()`)
		p.tabTo(screen.table+" tbody tr", 40)
		p.press("Enter")
		p.waitFor(`document.getElementById("root").dataset.state === "ready" && `+screen.detail, "the row of "+screen.hash+" opened with Enter")
	}
}
