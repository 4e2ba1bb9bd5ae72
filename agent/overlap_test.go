package agent_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
)

// A kept session's next turn on the box that served the last one asks the
// model while its claim waits on PostgreSQL; nothing reaches the client
// before the claim holds, and a claim refused (another turn took the
// session) ends the turn with that error and no event, leaving the other
// turn's claim alone.
func TestSessionTurnAsksTheModelBeforeItsClaimReturns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "Noted."} })
	e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("one")})
	id := agent.SessionID("session", "plain", "", "k")

	// Another turn (of another box, say) is about to take the session: its
	// transaction holds the row.
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	if _, err := tx.Exec(e.ctx, `UPDATE stackbone_platform.sessions SET status = 'running', running_since = now() WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []agent.Event
	done := make(chan error, 1)
	go func() {
		_, err := e.rt.Turn(e.ctx, agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("two")}, func(ev agent.Event) error {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
			return nil
		})
		done <- err
	}()
	// The model has the whole conversation while the claim waits for the row.
	deadline := time.Now().Add(20 * time.Second)
	for len(e.model.ChatRequests()) < 2 || !claimWaits(t, e) {
		if time.Now().After(deadline) {
			t.Fatalf("no overlap: %d model requests, claim waiting %v", len(e.model.ChatRequests()), claimWaits(t, e))
		}
		time.Sleep(2 * time.Millisecond)
	}
	want := []string{"system: You are plain.", "user: one", "assistant: Noted.", "user: two"}
	if got := e.sent(1); !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, agent.ErrSessionBusy) {
		t.Fatalf("turn on a session another turn took: %v", err)
	}
	if len(events) != 0 {
		t.Fatalf("a refused turn streamed %d events: %+v", len(events), events)
	}
	var status string
	var turns int
	if err := e.pool.QueryRow(e.ctx, `SELECT status, turns FROM stackbone_platform.sessions WHERE id = $1`, id).Scan(&status, &turns); err != nil {
		t.Fatal(err)
	}
	if status != "running" || turns != 1 {
		t.Fatalf("the other turn's claim: status %s, turns %d", status, turns)
	}
}

// claimWaits says whether a backend of the test's database waits for a
// lock (the claim behind the test's transaction).
func claimWaits(t *testing.T, e *env) bool {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A box's cached conversation that another box moved on is never answered
// from: the claim finds a newer checkpoint, the model request made from the
// cache is dropped unread, and the turn starts again from the checkpoint.
// The client sees one answer, the one made from the whole conversation.
func TestSessionTurnAfterAnotherBoxStartsFromTheCheckpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		last := req.Messages[len(req.Messages)-1].Content
		if last == "three" && len(req.Messages) < 6 {
			return providertest.Reply{Content: "answer from a stale copy"}
		}
		return providertest.Reply{Content: "re: " + last}
	})
	reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: e.model.URL()}}, nil)
	other := agent.New(agent.Config{Pool: e.pool, Agents: e.cfg.Agents, Models: reg, Memory: e.mem, Settings: e.settings, Logger: pgtest.Logger(t)})

	e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("one")})
	if _, err := other.Turn(e.ctx, agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("two")}, func(agent.Event) error { return nil }); err != nil {
		t.Fatal(err)
	}
	res, evs, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("three")})
	if err != nil {
		t.Fatal(err)
	}
	var streamed string
	for _, ev := range evs {
		if ev.Kind == agent.EventTextDelta {
			streamed += ev.Text
		}
	}
	if res.Text != "re: three" || streamed != "re: three" {
		t.Fatalf("answer %q, streamed %q", res.Text, streamed)
	}
	reqs := e.model.ChatRequests()
	if n := len(reqs); n != 4 {
		t.Fatalf("%d model requests, want 4 (one, two, three from the cache, three again)", n)
	}
	want := []string{"system: You are plain.", "user: one", "assistant: re: one", "user: two", "assistant: re: two", "user: three"}
	if got := e.sent(3); !slices.Equal(got, want) {
		t.Fatalf("restarted turn sent %q, want %q", got, want)
	}
	d, err := e.rt.GetSession(e.ctx, agent.SessionID("session", "plain", "", "k"))
	if err != nil || d.Turns != 3 || d.Status != "completed" || len(d.Transcript) != 3 || d.Transcript[2].Reply != "re: three" {
		t.Fatalf("session: %+v %v", d, err)
	}
	run, err := runs.NewStore(e.pool).Get(e.ctx, res.RunID)
	if err != nil || run.Metadata["droppedModelRequests"] != float64(1) {
		t.Fatalf("the restarted turn's run: %+v %v", run.Metadata, err)
	}
	// And the next turn, from the refreshed cache, carries all of it.
	e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("four")})
	if got := e.sent(-1); len(got) != 8 || got[6] != "assistant: re: three" {
		t.Fatalf("fourth turn sent %q", got)
	}
}

// An overlapped claim gives its PostgreSQL connection back as soon as its
// answer is in, not when the model starts answering: a slow model must not
// hold the pool.
func TestOverlappedClaimDoesNotHoldAConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	e.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if req.Messages[len(req.Messages)-1].Content == "slow" {
			return providertest.Reply{Gate: gate, Content: "at last"}
		}
		return providertest.Reply{Content: "Noted."}
	})
	e.mustTurn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("one")})
	done := make(chan error, 1)
	go func() {
		_, _, err := e.turn(agent.TurnRequest{Agent: "plain", SessionKey: "k", Messages: user("slow")})
		done <- err
	}()
	id := agent.SessionID("session", "plain", "", "k")
	deadline := time.Now().Add(20 * time.Second)
	for {
		var status string
		if err := e.pool.QueryRow(e.ctx, `SELECT status FROM stackbone_platform.sessions WHERE id = $1`, id).Scan(&status); err != nil {
			t.Fatal(err)
		}
		// The query above has returned its own connection.
		if len(e.model.ChatRequests()) == 2 && status == "running" && e.pool.Stat().AcquiredConns() == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("while the model thinks: status %s, %d connections held", status, e.pool.Stat().AcquiredConns())
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
