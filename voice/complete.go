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
	tag, err := c.m.execEvent(ctx, eventEnded, func() any { return c.endedEvent(ended, duration, len(entries)) },
		map[string]any{"transcript": orNone(entries)}, `WITH gone AS (DELETE FROM stackbone_platform.voice_call_entries WHERE call_id = $1)
		UPDATE stackbone_platform.voice_calls SET status = 'ended', ended_at = $2, outcome = $3,
		duration_seconds = $4, transcript = $5, memory = $6, metrics = $7, end_reason = NULLIF($8, ''),
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
