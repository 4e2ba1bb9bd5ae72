package voice

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/memory"
)

// snapshot is what a call's completion needs that the call record does not
// show: kept with the call when it opens, so another box can complete it.
type snapshot struct {
	Instructions *string `json:"instructions,omitempty"`
	UserID       string  `json:"userId,omitempty"`
}

// boxLostReason is the end reason of a call closed because its box died.
const boxLostReason = "the box carrying the call stopped without ending it"

// persist keeps the heard transcript in the database as it grows, so a
// crash loses at most the turn being committed. One goroutine per call
// writes each entry once, as a row of voice_call_entries (a turn costs its
// own entry, however long the call, and the call's row is not rewritten),
// with what the call has used so far; the calls' writes that meet go in
// one statement. The call's end folds the entries into its record. It
// stops (flushing) before the call's final record is written.
func (c *Call) persist() {
	defer close(c.persisted)
	written := 0
	for {
		select {
		case <-c.committedTurn:
		case <-c.stopPersist:
			return
		}
		entries := c.transcript.Since(written)
		if len(entries) == 0 {
			continue
		}
		w := heardWrite{call: c.info.ID, seq: written, usage: string(c.usageJSON())}
		for _, e := range entries {
			b, _ := json.Marshal(e)
			w.entries = append(w.entries, string(b))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.m.heard.Do(ctx, w)
		cancel()
		if err != nil {
			c.m.log.Warn("voice: persist heard transcript", "call", c.info.ID, "error", err)
			continue
		}
		written += len(entries)
	}
}

// heardWrite is one call's entries committed since its last write, the
// first numbered seq, and its usage by then.
type heardWrite struct {
	call    string
	seq     int
	entries []string
	usage   string
}

// writeHeard writes the calls' entries in one statement. A call already
// ended (another box closed it as lost and folded what it found) or whose
// person was erased takes no more; a write repeated after a lost reply
// adds nothing twice.
func (m *Manager) writeHeard(ctx context.Context, group []heardWrite) error {
	var (
		calls, entries []string
		seqs           []int32
		usages         []*string
	)
	for _, w := range group {
		for i, e := range w.entries {
			calls, seqs, entries = append(calls, w.call), append(seqs, int32(w.seq+i)), append(entries, e)
			var u *string
			if i == len(w.entries)-1 {
				u = &w.usage
			}
			usages = append(usages, u)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var b pgx.Batch
	b.Queue(customPlan) // each write's calls by key
	b.Queue(`INSERT INTO stackbone_platform.voice_call_entries (call_id, seq, entry, usage)
		SELECT g.call_id, g.seq, g.entry::jsonb, g.usage::jsonb
		FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) AS g(call_id, seq, entry, usage)
		WHERE EXISTS (SELECT 1 FROM stackbone_platform.voice_calls c WHERE c.id = g.call_id AND c.status <> 'ended'
			AND c.erased_at IS NULL)
		ON CONFLICT DO NOTHING`, calls, seqs, entries, usages)
	return m.cfg.Pool.SendBatch(ctx, &b).Close()
}

// turnCommitted wakes the persister; a wake already pending covers this
// turn too.
func (c *Call) turnCommitted() {
	select {
	case c.committedTurn <- struct{}{}:
	default:
	}
}

// Run keeps the leases of the calls this box carries and closes calls
// whose box died: every third of the lease it renews its own calls' leases
// and looks for calls in progress whose lease ran out, which it closes as
// box_lost and completes from their persisted heard transcript (once: of
// boxes racing for one call, one wins). It returns when ctx ends.
func (m *Manager) Run(ctx context.Context) {
	every := m.cfg.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.recoverLost(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m.renewLeases(ctx)
	}
}

func (m *Manager) renewLeases(ctx context.Context) {
	m.mu.Lock()
	ids := make([]string, 0, len(m.calls))
	for id := range m.calls {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	var b pgx.Batch
	b.Queue(customPlan) // the box's calls by key, not a scan of every call ever made
	b.Queue(`UPDATE stackbone_platform.voice_calls SET lease_until = now() + make_interval(secs => $2)
		WHERE id = ANY($1) AND status <> 'ended'`, ids, m.cfg.LeaseTTL.Seconds())
	if err := m.cfg.Pool.SendBatch(ctx, &b).Close(); err != nil && ctx.Err() == nil {
		m.log.Warn("voice: renew call leases", "calls", len(ids), "error", err)
	}
}

// customPlan, first in a batch (one transaction), has the batch's
// statements planned for their arguments each time, not by a plan the
// connection cached: for a statement on a set of keys, one made while the
// table was small scans the whole table, and keeps doing so as the table
// grows (every call or run ever made) until the next ANALYZE.
const customPlan = `SELECT set_config('plan_cache_mode', 'force_custom_plan', true)`

// recoverLost closes the calls whose lease ran out, and finishes the saves
// of lost calls whose recovering box died before it saved, a few at a time.
func (m *Manager) recoverLost(ctx context.Context) {
	rows, err := m.cfg.Pool.Query(ctx, `SELECT id FROM stackbone_platform.voice_calls
		WHERE (status <> 'ended' OR save_pending) AND lease_until < now() ORDER BY lease_until LIMIT 100`)
	if err != nil {
		if ctx.Err() == nil {
			m.log.Warn("voice: look for lost calls", "error", err)
		}
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, id := range ids {
		if err := m.recoverCall(ctx, id); err != nil && ctx.Err() == nil {
			m.log.Warn("voice: recover lost call", "call", id, "error", err)
		}
	}
}

// errNotLost: another box closed the call first, or its box renewed it.
var errNotLost = errors.New("voice: the call is not lost")

// recoverCall claims a lost call in one transaction (of boxes racing, one
// gets the row): it ends the record as box_lost with its save pending,
// folds the persisted entries into it and takes the call's lease for the
// save. It then saves the persisted heard transcript once, renewing that
// lease meanwhile, and clears the pending save with what memory did. A box that dies between the two leaves the
// save pending under a lease that runs out: the next box claims it again
// (the record's end stays as first recorded) and saves; the save's
// idempotency key returns a save that had already happened.
func (m *Manager) recoverCall(ctx context.Context, id string) error {
	var (
		agentID string
		started time.Time
		lastAt  time.Time
		tr, mem []byte
		snapRaw []byte
		usedRaw []byte
		ev      callEvent
	)
	ttl := m.cfg.LeaseTTL.Seconds()
	err := pgx.BeginFunc(ctx, m.cfg.Pool, func(tx pgx.Tx) error {
		// The row is locked before the entries are read: an entry its box
		// was adding is either in (it committed first) or refused (it
		// finds the call ended).
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM stackbone_platform.voice_calls
			WHERE id = $1 AND (status <> 'ended' OR save_pending) AND lease_until < now() FOR UPDATE`, id).Scan(&one); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `WITH e AS (DELETE FROM stackbone_platform.voice_call_entries WHERE call_id = $1 RETURNING seq, entry, usage)
		UPDATE stackbone_platform.voice_calls c SET status = 'ended', outcome = 'box_lost',
		save_pending = true, lease_until = now() + make_interval(secs => $3),
		transcript = c.transcript || coalesce((SELECT jsonb_agg(e.entry ORDER BY e.seq) FROM e), '[]'),
		usage = coalesce((SELECT e.usage FROM e WHERE e.usage IS NOT NULL ORDER BY e.seq DESC LIMIT 1), c.usage),
		memory = jsonb_set(coalesce(c.memory, '{}'), '{savePending}', 'true'),
		end_reason = CASE WHEN c.status = 'ended' THEN c.end_reason ELSE $2 END,
		ended_at = CASE WHEN c.status = 'ended' THEN c.ended_at
			ELSE greatest(c.lease_until - make_interval(secs => $3), c.started_at) END,
		duration_seconds = CASE WHEN c.status = 'ended' THEN c.duration_seconds
			ELSE extract(epoch FROM greatest(c.lease_until - make_interval(secs => $3), c.started_at) - c.started_at) END
		WHERE id = $1
		RETURNING agent_id, started_at, ended_at, transcript, memory, snapshot, direction, coalesce(phone_number, ''),
		  coalesce(trunk, ''), answered_at, usage`, id, boxLostReason, ttl).
			Scan(&agentID, &started, &lastAt, &tr, &mem, &snapRaw, &ev.Direction, &ev.PhoneNumber, &ev.Trunk, &ev.AnsweredAt, &usedRaw)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotLost
	}
	if err != nil {
		return err
	}
	var entries []Entry
	var report MemoryReport
	var snap snapshot
	_ = json.Unmarshal(tr, &entries)
	_ = json.Unmarshal(mem, &report)
	_ = json.Unmarshal(snapRaw, &snap)
	stopRenew := m.holdSaveLease(ctx, id)
	report.SavePending = false
	m.saveHeard(ctx, &report, agentID, snap, entries, started, lastAt.Sub(started).Seconds(), OutcomeBoxLost, id)
	stopRenew()
	mem, _ = json.Marshal(report)
	// The outcome comes from the save, so it is written even when ctx ended
	// (a stopping box) while the save ran.
	duration := lastAt.Sub(started).Seconds()
	turns := len(entries)
	ev.CallID, ev.AgentID, ev.StartedAt, ev.EndedAt = id, agentID, started, &lastAt
	ev.Outcome, ev.Reason, ev.Duration, ev.Turns = string(OutcomeBoxLost), boxLostReason, &duration, &turns
	ev.Memory = &memoryOutcome{report.Saved, report.SaveError}
	// What the call used up to its last persisted turn, and its line up
	// to the end recorded, priced with the call.ended that goes with the
	// save's outcome, once: only the box that clears the pending save
	// records them.
	used := costs.NewUsage()
	_ = json.Unmarshal(usedRaw, &used)
	used.Telephony = lineUsage(ev.Direction, ev.Trunk, ev.AnsweredAt, lastAt)
	usageJSON, costJSON, cost := m.priced(used)
	tag, err := m.execEvent(context.WithoutCancel(ctx), eventEnded, func() any { return ev }, map[string]any{"transcript": orNone(entries)},
		`UPDATE stackbone_platform.voice_calls SET memory = $2, save_pending = false, usage = $3, cost = $4 WHERE id = $1 AND save_pending`,
		id, mem, usageJSON, costJSON)
	if err != nil {
		return err
	}
	if tag.RowsAffected() > 0 {
		m.countCost(agentID, used, cost)
	}
	m.log.Info("call ended", "call", id, "agent", agentID, "outcome", OutcomeBoxLost, "turns", len(entries),
		"saved", report.Saved, "save_error", report.SaveError, "recoveredBy", m.cfg.BoxID)
	return nil
}

// holdSaveLease renews the lease on call id's pending save every third of
// the lease until the returned stop is called, so no other box takes the
// save over while this one is still at it. (The record's box_id stays the
// box that carried the call.)
func (m *Manager) holdSaveLease(ctx context.Context, id string) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(m.cfg.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if _, err := m.cfg.Pool.Exec(context.WithoutCancel(ctx), `UPDATE stackbone_platform.voice_calls
				SET lease_until = now() + make_interval(secs => $2) WHERE id = $1 AND save_pending`,
				id, m.cfg.LeaseTTL.Seconds()); err != nil {
				m.log.Warn("voice: renew the lease of a pending save", "call", id, "error", err)
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// saveHeard is the one memory save of a call, whoever completes it: with
// memory on and something heard, one add with the heard transcript and the
// call record; a failed save is recorded in report and not retried.
func (m *Manager) saveHeard(ctx context.Context, report *MemoryReport, agentID string, snap snapshot, entries []Entry,
	started time.Time, duration float64, outcome Outcome, callID string) {
	switch {
	case report.Off != "" || !report.Save:
		report.NotSavedReason = report.Off
		if report.NotSavedReason == "" {
			report.NotSavedReason = "save is off"
		}
		return
	case len(entries) == 0:
		report.NotSavedReason = "nothing was said and heard"
		return
	}
	msgs := make([]memory.Message, len(entries))
	for i, e := range entries {
		msgs[i] = memory.Message{Role: e.Role, Content: e.Text}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.SaveTimeout)
	defer cancel()
	out := string(outcome)
	_, err := m.cfg.Memory.Add(sctx, memory.AddRequest{
		AgentID: agentID, UserID: snap.UserID, Transcript: memory.Transcript{Messages: msgs},
		Instructions: snap.Instructions,
		Call:         memory.CallMeta{StartedAt: &started, DurationSeconds: &duration, Outcome: &out, RunID: &callID},
		// A box that completes a call another box saved just before it
		// died gets that save back instead of saving twice.
		IdempotencyKey: "call:" + callID,
	})
	if err != nil {
		report.SaveError = fault.Code(err)
		if report.SaveError == "" {
			report.SaveError = "memory_unavailable"
		}
		return
	}
	report.Saved = true
}
