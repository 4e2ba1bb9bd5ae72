package voice

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Events publishes what happens to calls (package webhooks).
type Events interface {
	// Emit records an event of type typ in tx, so it exists only if tx
	// commits. data is for every subscriber; content's fields (the heard
	// transcript) only for those that asked for them. An error leaves tx
	// usable; the call goes on and the error is logged.
	Emit(ctx context.Context, tx pgx.Tx, typ string, data, content any) error
	// Wanted reports whether anyone takes events of typ: when nobody
	// does, the call's change is written alone, without a transaction.
	Wanted(ctx context.Context, typ string) bool
}

// Call event types.
const (
	eventStarted  = "call.started"
	eventAnswered = "call.answered"
	eventEnded    = "call.ended"
)

// callEvent is the data of a call's events.
type callEvent struct {
	CallID      string         `json:"callId"`
	AgentID     string         `json:"agentId"`
	Direction   string         `json:"direction"`
	PhoneNumber string         `json:"phoneNumber,omitempty"`
	Trunk       string         `json:"trunk,omitempty"`
	StartedAt   time.Time      `json:"startedAt"`
	AnsweredAt  *time.Time     `json:"answeredAt,omitempty"`
	EndedAt     *time.Time     `json:"endedAt,omitempty"`
	Outcome     string         `json:"outcome,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	Duration    *float64       `json:"durationSeconds,omitempty"`
	Turns       *int           `json:"turns,omitempty"`
	Memory      *memoryOutcome `json:"memory,omitempty"`
	// AnsweredBy is who answered a screened call (human, voicemail, ivr,
	// fax, unknown); absent when the call was not screened.
	AnsweredBy string `json:"answeredBy,omitempty"`
}

// EndedCall is what Config.Ended is told of a call that ended.
type EndedCall struct {
	ID, Agent string
	// Outcome is how it ended (an Outcome); AnsweredBy who answered a
	// screened call ("" when it was not screened).
	Outcome, AnsweredBy string
	// Answered is whether it was answered.
	Answered bool
}

// memoryOutcome is what the call's memory save did.
type memoryOutcome struct {
	Saved     bool   `json:"saved"`
	SaveError string `json:"saveError,omitempty"`
}

func (c *Call) event() callEvent {
	return callEvent{CallID: c.info.ID, AgentID: c.info.Agent, Direction: c.info.Direction,
		PhoneNumber: c.info.PhoneNumber, Trunk: c.info.Trunk, StartedAt: c.started}
}

// execEvent runs one statement on the calls table and, when it changed a
// row and someone takes events of typ, records the event in the same
// transaction, so an event exists exactly when its change does. When
// nobody does the statement runs alone: one round trip, where a
// transaction with its event takes four (a call's setup waits on it).
func (m *Manager) execEvent(ctx context.Context, typ string, data func() any, content any, sql string, args ...any) (pgconn.CommandTag, error) {
	return m.writeEvent(ctx, false, typ, data, content, sql, args...)
}

// writeEvent is execEvent; with lazy the transaction commits without
// waiting for its write-ahead log to reach the disk (synchronous_commit
// off for it).
//
// An incoming call's start (its ringing record, inbound or from a browser)
// is written so: the answer then does not queue behind other calls'
// flushes, and the record is durable before the caller hears anything, as
// the answer's update commits synchronously and the log is written in
// order, so its flush carries the start's. Only a crash of PostgreSQL
// itself within that moment can lose a start, and then of a call nobody
// has heard yet. An outbound call's is not: it is what keeps an attempt
// from being dialled twice (ErrCallExists) when the job that dials it runs
// again after a crash.
func (m *Manager) writeEvent(ctx context.Context, lazy bool, typ string, data func() any, content any, sql string, args ...any) (pgconn.CommandTag, error) {
	ended := typ == eventEnded && m.cfg.Ended != nil
	if (m.cfg.Events == nil || !m.cfg.Events.Wanted(ctx, typ)) && !ended {
		if !lazy {
			return m.cfg.Pool.Exec(ctx, sql, args...)
		}
		return m.execLazy(ctx, sql, args...)
	}
	var tag pgconn.CommandTag
	err := pgx.BeginFunc(ctx, m.cfg.Pool, func(tx pgx.Tx) error {
		var err error
		if lazy {
			if _, err = tx.Exec(ctx, lazyCommit); err != nil {
				return err
			}
		}
		if tag, err = tx.Exec(ctx, sql, args...); err != nil || tag.RowsAffected() == 0 {
			return err
		}
		d := data()
		if m.cfg.Events != nil {
			if err := m.cfg.Events.Emit(ctx, tx, typ, d, content); err != nil {
				m.log.Warn("voice: event not recorded", "type", typ, "error", err)
			}
		}
		if e, ok := d.(callEvent); ok && ended {
			// What follows a call's end (its analysis) is queued with it.
			if err := m.cfg.Ended(ctx, tx, EndedCall{ID: e.CallID, Agent: e.AgentID, Outcome: e.Outcome,
				AnsweredBy: e.AnsweredBy, Answered: e.AnsweredAt != nil}); err != nil {
				m.log.Warn("voice: after the call's end", "call", e.CallID, "error", err)
			}
		}
		return nil
	})
	return tag, err
}

// endedEvent is the data of call.ended (the transcript goes as content).
func (c *Call) endedEvent(ended time.Time, duration float64, turns int) any {
	e := c.event()
	e.AnsweredAt, e.EndedAt = c.answered, &ended
	e.Outcome, e.Reason, e.Duration, e.Turns = string(c.end.Outcome), c.end.Reason, &duration, &turns
	e.Memory = &memoryOutcome{c.report.Saved, c.report.SaveError}
	c.mu.Lock()
	e.AnsweredBy = c.answeredBy
	c.mu.Unlock()
	return e
}

// orNone is entries, or an empty list for a call where nothing was heard.
func orNone(entries []Entry) []Entry {
	if entries == nil {
		return []Entry{}
	}
	return entries
}

// lazyCommit makes a transaction's commit return before its log is flushed.
const lazyCommit = `SET LOCAL synchronous_commit = off`

// execLazy runs one statement in a transaction that commits lazily
// (lazyCommit), in one round trip.
func (m *Manager) execLazy(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var b pgx.Batch
	b.Queue(`BEGIN`)
	b.Queue(lazyCommit)
	b.Queue(sql, args...)
	b.Queue(`COMMIT`)
	br := m.cfg.Pool.SendBatch(ctx, &b)
	defer br.Close()
	var tag pgconn.CommandTag
	for i := range b.Len() {
		t, err := br.Exec()
		if err != nil {
			return tag, err
		}
		if i == 2 {
			tag = t
		}
	}
	return tag, br.Close()
}
