package agent

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// historyCacheBytes bounds the conversations kept in memory (an estimate
// of their text); the least recently used go first.
const historyCacheBytes = 32 << 20

// historyCache keeps the conversation of the sessions this box served
// lately, so that the next turn on one can ask the model while its claim is
// still on its way to PostgreSQL (see Runtime.overlapClaim). An entry is
// only a guess: the claim reads the session's latest checkpoint (its step
// and when it was written), and a turn uses the entry only when both match,
// so a turn served by another box, or anything else that moved the
// session, is never answered from a stale copy.
type historyCache struct {
	mu    sync.Mutex
	max   int
	size  int
	lru   list.List // of *cachedHistory, most recent first
	items map[string]*list.Element
}

// cachedHistory is a session's conversation as of one checkpoint.
type cachedHistory struct {
	id   string
	step int
	at   time.Time // the checkpoint's created_at
	msgs []Message // never modified: a turn appends to a copy
	size int
}

func (c *historyCache) get(id string) (cachedHistory, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[id]
	if !ok {
		return cachedHistory{}, false
	}
	c.lru.MoveToFront(e)
	return *e.Value.(*cachedHistory), true
}

func (c *historyCache) put(id string, step int, at time.Time, msgs []Message) {
	h := &cachedHistory{id: id, step: step, at: at, msgs: slices.Clip(msgs), size: historySize(msgs)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
	if h.size > c.max {
		return
	}
	if c.items == nil {
		c.items = map[string]*list.Element{}
	}
	c.items[id] = c.lru.PushFront(h)
	c.size += h.size
	for c.size > c.max {
		c.dropLocked(c.lru.Back().Value.(*cachedHistory).id)
	}
}

func (c *historyCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(id)
}

func (c *historyCache) dropLocked(id string) {
	if e, ok := c.items[id]; ok {
		c.size -= e.Value.(*cachedHistory).size
		c.lru.Remove(e)
		delete(c.items, id)
	}
}

// historySize estimates the memory a conversation holds.
func historySize(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += 128 + len(m.ID) + len(m.Content) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			n += 64 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
	}
	return n
}

// claimResult is what an overlapped claim found.
type claimResult struct {
	turns int
	step  int       // the latest checkpoint's step; -1 when not read
	at    time.Time // and when it was written
	err   error
}

// sendClaim sends the claim of a kept session, as claimAndLoad does, with
// a read of its latest checkpoint's step and time instead of the
// checkpoint itself; readClaim reads the answer. The two halves let a turn
// ask the model while PostgreSQL works: SendBatch has written the batch to
// the connection when it returns.
func (r *Runtime) sendClaim(ctx context.Context, id, agentName string) pgx.BatchResults {
	var b pgx.Batch
	queueClaim(&b, id, agentName, r.staleBefore())
	b.Queue(`SELECT step, created_at FROM stackbone_checkpoints.checkpoints WHERE session_id = $1
		ORDER BY step DESC LIMIT 1`, id)
	return r.cfg.Pool.SendBatch(ctx, &b)
}

// readClaim reads what sendClaim sent and closes br.
func (r *Runtime) readClaim(ctx context.Context, br pgx.BatchResults, id, agentName string) claimResult {
	defer br.Close()
	res := claimResult{step: -1}
	if _, err := br.Exec(); err != nil {
		res.err = storageErr("claim session", err)
		return res
	}
	if err := br.QueryRow().Scan(&res.turns); err != nil {
		if !errors.Is(err, pgx.ErrNoRows) {
			res.err = storageErr("claim session", err)
			return res
		}
		// Not claimed: claim again, which says why (held or busy), or
		// succeeds when the turn that held it has just ended; the
		// checkpoint is then read afresh (step -1).
		br.Close()
		res.turns, res.err = r.claim(ctx, id, kindSession, agentName, false)
		return res
	}
	r.leases.hold(id)
	switch err := br.QueryRow().Scan(&res.step, &res.at); {
	case errors.Is(err, pgx.ErrNoRows):
		res.step = 0
	case err != nil:
		res.step = -1 // claimed; the turn reads the checkpoint itself
	}
	return res
}

// errStaleHistory: the cached conversation a turn started the model on is
// not the session's latest checkpoint. The turn holds the claim and starts
// again from the checkpoint.
var errStaleHistory = errors.New("agent: the cached conversation is not the latest checkpoint")

// claimFailed is a claim's error met by an overlapped turn: the turn ends
// with it, as a turn whose claim failed before the model was asked does,
// and nothing of it is recorded.
type claimFailed struct{ err error }

func (e claimFailed) Error() string { return e.err.Error() }
func (e claimFailed) Unwrap() error { return e.err }

// overlapClaim starts a kept session's turn from the conversation this box
// cached at the session's last turn, with the claim running beside the
// model request instead of before it: a turn then waits for PostgreSQL only
// as long as the model takes to start answering. It returns false when the
// session is not cached (or the cached copy cannot take msgs); the turn then
// claims and loads first. Before the first event of the answer reaches the
// client, callModel waits for the claim (t.confirm): a claim refused (busy,
// held) ends the turn with that error, and a checkpoint other than the
// cached one ends the model request and starts the turn again from the
// checkpoint (Turn, errStaleHistory). A refused or restarted request may
// have cost the provider's input tokens; both are rare (two clients on one
// session at once, or a session moving between boxes).
func (t *turn) overlapClaim(ctx context.Context, msgs []Message) ([]Message, bool) {
	r := t.rt
	cached, ok := r.history.get(t.sessionID)
	if !ok {
		return nil, false
	}
	fresh, err := newMessages(cached.msgs, slices.Clone(msgs), t.isServer)
	if err != nil || len(fresh) == 0 {
		return nil, false // the checkpoint path says what is wrong, from the checkpoint
	}
	// Neither half is cancelled with the turn: a claim PostgreSQL has made
	// is read, and released by the turn's end, not left to go stale. The
	// batch goes out from here, at once; its answer is read as soon as it
	// comes, so the connection returns to the pool then, not when the
	// model (seconds, for some) starts answering.
	ctx = context.WithoutCancel(ctx)
	br := r.sendClaim(ctx, t.sessionID, t.agentName)
	done := make(chan claimResult, 1)
	id, agentName := t.sessionID, t.agentName
	go func() { done <- r.readClaim(ctx, br, id, agentName) }()
	t.history, t.step = cached.msgs, cached.step+1
	t.confirm = func() error {
		c := <-done
		if c.err != nil {
			return claimFailed{c.err}
		}
		t.turnNo = c.turns + 1
		if c.step != cached.step || !c.at.Equal(cached.at) {
			return errStaleHistory
		}
		return nil
	}
	return fresh, true
}

// restartFromCheckpoint starts a turn whose overlapped claim found the
// cache stale again from the session's checkpoint: the claim is held.
func (t *turn) restartFromCheckpoint(ctx context.Context, msgs []Message) error {
	r := t.rt
	r.history.drop(t.sessionID)
	hist, _, step, err := r.loadCheckpoint(ctx, t.sessionID)
	if err == nil {
		t.history, t.step = hist, step+1
		msgs, err = newMessages(hist, msgs, t.isServer)
	}
	if err == nil && len(msgs) == 0 {
		err = fmt.Errorf("%w: there is no new message to answer", ErrInvalidRequest)
	}
	if err != nil {
		r.release(context.WithoutCancel(ctx), t.sessionID, StatusCompleted)
		return err
	}
	t.startWith(msgs)
	t.added, t.usage = 0, Usage{}
	return nil
}
