package voice

import (
	"context"
	"encoding/json"
)

// complete is the call's one completion, whatever ended it: commit what
// was heard of a turn in progress, wait for the turns' metrics, record the
// call, and with save on run one memory add with the heard transcript. A
// failed save is recorded and not retried.
func (c *Call) complete(end End) {
	ctx := context.Background()
	if c.playout != nil {
		c.endAssistant(true)
	}
	c.turns.Wait()
	if end.Outcome == "" {
		end.Outcome = OutcomeCompleted
	}
	c.end = end
	c.mu.Lock()
	metrics := c.metrics
	c.mu.Unlock()
	ended := c.clk.Now()
	duration := ended.Sub(c.started).Seconds()
	close(c.stopPersist)
	<-c.persisted
	entries := c.transcript.Entries()
	erased := c.erased(ctx)
	if erased {
		// The person was erased while the call went on: nothing heard is
		// kept, saved or sent, and the call's end names nobody.
		entries = nil
		if r := c.rec.Swap(nil); r != nil {
			r.take.Discard()
		}
		c.report.Off, c.report.Identity = "the person was erased during the call", ""
	}
	c.keepRecording(ctx, entries)
	c.m.saveHeard(ctx, &c.report, c.info.Agent, snapshot{Instructions: c.view.Value.Instructions, UserID: c.sel.Value},
		entries, c.started, duration, end.Outcome, c.info.ID)
	tr, _ := json.Marshal(entries)
	if entries == nil {
		tr = []byte("[]")
	}
	mem, _ := json.Marshal(c.report)
	met, _ := json.Marshal(metrics)
	if metrics == nil {
		met = []byte("[]")
	}
	c.mu.Lock()
	answeredBy, decisionMs := c.answeredBy, c.decisionMs
	c.mu.Unlock()
	usage := c.finalUsage(ctx, ended)
	usageJSON, costJSON, cost := c.m.priced(usage)
	// Who answered goes in again with the end: its own write runs beside
	// the call and may not have landed yet.
	event := func() any {
		e := c.endedEvent(ended, duration, len(entries)).(callEvent)
		if erased {
			e.PhoneNumber = ""
		}
		return e
	}
	tag, err := c.m.execEvent(ctx, eventEnded, event, map[string]any{"transcript": orNone(entries)}, `WITH gone AS (DELETE FROM stackbone_platform.voice_call_entries WHERE call_id = $1)
		UPDATE stackbone_platform.voice_calls SET status = 'ended', ended_at = $2, outcome = $3,
		duration_seconds = $4, transcript = CASE WHEN erased_at IS NULL THEN $5::jsonb ELSE '[]' END,
		memory = CASE WHEN erased_at IS NULL THEN $6::jsonb ELSE $6::jsonb - 'identity' END, metrics = $7, end_reason = NULLIF($8, ''),
		answered_by = COALESCE(NULLIF($9, ''), answered_by), answer_decision_ms = COALESCE(answer_decision_ms, NULLIF($10, 0)),
		usage = $11, cost = $12
		WHERE id = $1 AND status <> 'ended'`, // not if another box closed it as lost meanwhile
		c.info.ID, ended, string(end.Outcome), duration, tr, mem, met, end.Reason, answeredBy, decisionMs, usageJSON, costJSON)
	if err != nil {
		c.m.log.Warn("voice: record call end", "call", c.info.ID, "error", err)
	} else if tag.RowsAffected() > 0 {
		c.m.countCost(c.info.Agent, usage, cost)
	}
	c.m.log.Info("call ended", "call", c.info.ID, "agent", c.info.Agent, "outcome", end.Outcome, "turns", len(entries),
		"saved", c.report.Saved, "save_error", c.report.SaveError)
}

// erased reports whether the call's person was erased while it went on
// (memory's delete-all, on any box).
func (c *Call) erased(ctx context.Context) bool {
	var erased bool
	_ = c.m.cfg.Pool.QueryRow(ctx, `SELECT erased_at IS NOT NULL FROM stackbone_platform.voice_calls WHERE id = $1`, c.info.ID).Scan(&erased)
	return erased
}
