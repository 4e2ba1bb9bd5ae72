package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/runs"
)

// Session kinds.
const (
	kindSession      = "session"
	kindConversation = "conversation"
)

// Session statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusHeld      = "held"
	StatusFailed    = "failed"
)

// SessionID derives a session's id from its kind, agent, identity address
// and key, so the same key always names the same session for the same
// person, and two customers reusing a key get two sessions. The id is for
// operators; no wire returns it.
func SessionID(kind, agent, address, key string) string {
	h := sha256.New()
	for _, part := range []string{kind, agent, address, key} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return "ses_" + hex.EncodeToString(h.Sum(nil))[:32]
}

// pending is a held tool call and the snapshot it was taken under, kept in
// the checkpoint so a decision recovers them from server-owned state.
type pending struct {
	Call          ToolCall       `json:"call"`
	MessageID     string         `json:"messageId"`
	IdentityKey   string         `json:"identityKey,omitempty"`
	IdentityValue string         `json:"identityValue,omitempty"`
	Memory        memorySnapshot `json:"memory"`
	Tools         []Tool         `json:"tools,omitempty"`
}

// claimSQL claims a session ($1, of kind $2 and agent $3) for a turn,
// creating it on first use: it is free when its last turn ended, or when
// the turn running on it stopped renewing its lease before $4. It returns
// the session's turns so far, or no row when the session is not free.
const claimSQL = `
	INSERT INTO stackbone_platform.sessions AS s (id, kind, agent_id, status, running_since)
	VALUES ($1, $2, $3, 'running', now())
	ON CONFLICT (id) DO UPDATE SET status = 'running', running_since = now()
	WHERE s.status IN ('completed', 'failed') OR (s.status = 'running' AND s.running_since < $4)
	RETURNING turns`

// queueClaim queues the claim of a kept session in a batch. The claim is a
// lease, not conversation state: it need not wait for the disk. After a
// database crash a lost lease only means the session is free, which a
// stale lease would also become.
func queueClaim(b *pgx.Batch, id, agentName string, stale time.Time) {
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(claimSQL, id, kindSession, agentName, stale)
}

// claim marks the session running for this turn, creating it on first use.
// It returns the number of turns so far, or ErrDecisionPending or
// ErrSessionBusy. wantHeld claims a held session (a decision) instead.
func (r *Runtime) claim(ctx context.Context, id, kind, agentName string, wantHeld bool) (int, error) {
	stale := r.staleBefore()
	var turns int
	var err error
	if wantHeld {
		err = r.cfg.Pool.QueryRow(ctx, `
			UPDATE stackbone_platform.sessions SET status = 'running', running_since = now()
			WHERE id = $1 AND status = 'held' RETURNING turns`, id).Scan(&turns)
	} else {
		err = r.cfg.Pool.QueryRow(ctx, claimSQL, id, kind, agentName, stale).Scan(&turns)
	}
	if err == nil {
		r.leases.hold(id)
		return turns, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, storageErr("claim session", err)
	}
	var status string
	err = r.cfg.Pool.QueryRow(ctx, `SELECT status FROM stackbone_platform.sessions WHERE id = $1`, id).Scan(&status)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return 0, ErrSessionNotFound
	case err != nil:
		return 0, storageErr("read session", err)
	case wantHeld:
		return 0, fmt.Errorf("%w (the session is %s)", ErrNoDecisionPending, status)
	case status == StatusHeld:
		return 0, fmt.Errorf("%w: a held tool call waits for a person's decision on this session", ErrDecisionPending)
	}
	return 0, fmt.Errorf("%w: another turn on this session is still running", ErrSessionBusy)
}

// release ends a claim without a checkpoint: the turn failed or was
// cancelled, and the session is open again (held stays held).
func (r *Runtime) release(ctx context.Context, id, status string) {
	defer r.leases.drop(id)
	_, err := r.cfg.Pool.Exec(ctx, `UPDATE stackbone_platform.sessions SET status = $2, running_since = NULL,
		last_activity_at = now() WHERE id = $1`, id, status)
	if err != nil {
		r.log.Warn("agent: release session", "session", id, "error", err)
	}
}

// claimAndLoad claims a kept session and loads its checkpoint in one round
// trip. It returns the turns so far, the messages and the last step, or the
// errors of claim.
func (r *Runtime) claimAndLoad(ctx context.Context, id, agentName string) (int, []Message, int, error) {
	var b pgx.Batch
	queueClaim(&b, id, agentName, r.staleBefore())
	b.Queue(`SELECT step, messages, pending FROM stackbone_checkpoints.checkpoints WHERE session_id = $1 ORDER BY step`, id)
	br := r.cfg.Pool.SendBatch(ctx, &b)
	var turns int
	if _, err := br.Exec(); err != nil {
		br.Close()
		return 0, nil, 0, storageErr("claim session", err)
	}
	err := br.QueryRow().Scan(&turns)
	if err != nil {
		br.Close()
		if errors.Is(err, pgx.ErrNoRows) {
			// Not claimed: claim again, which says why (held or busy), or
			// succeeds when the turn that held it has just ended.
			turns, err := r.claim(ctx, id, kindSession, agentName, false)
			if err != nil {
				return 0, nil, 0, err
			}
			msgs, _, step, err := r.loadCheckpoint(ctx, id)
			if err != nil {
				r.release(context.WithoutCancel(ctx), id, StatusFailed)
				return 0, nil, 0, err
			}
			return turns, msgs, step, nil
		}
		return 0, nil, 0, storageErr("claim session", err)
	}
	r.leases.hold(id)
	rows, err := br.Query()
	if err != nil {
		br.Close()
		r.release(context.WithoutCancel(ctx), id, StatusFailed)
		return 0, nil, 0, storageErr("load checkpoint", err)
	}
	msgs, _, step, err := scanCheckpoint(rows)
	br.Close()
	if err != nil {
		r.release(context.WithoutCancel(ctx), id, StatusFailed)
		return 0, nil, 0, err
	}
	return turns, msgs, step, nil
}

// loadCheckpoint returns the session's messages and the pending held call
// of its latest step, if any.
func (r *Runtime) loadCheckpoint(ctx context.Context, id string) ([]Message, *pending, int, error) {
	rows, err := r.cfg.Pool.Query(ctx, `SELECT step, messages, pending FROM stackbone_checkpoints.checkpoints
		WHERE session_id = $1 ORDER BY step`, id)
	if err != nil {
		return nil, nil, 0, storageErr("load checkpoint", err)
	}
	return scanCheckpoint(rows)
}

// scanCheckpoint reads checkpoint rows: the messages of every step in order
// and the pending call of the last one.
func scanCheckpoint(rows pgx.Rows) ([]Message, *pending, int, error) {
	var msgs []Message
	var last *pending
	var step int
	var raw, rawPending []byte
	_, err := pgx.ForEachRow(rows, []any{&step, &raw, &rawPending}, func() error {
		var m []Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		msgs = append(msgs, m...)
		last = nil
		if rawPending != nil {
			last = &pending{}
			return json.Unmarshal(rawPending, last)
		}
		return nil
	})
	if err != nil {
		return nil, nil, 0, storageErr("load checkpoint", err)
	}
	return msgs, last, step, nil
}

// turnRecord is what one finished turn writes.
type turnRecord struct {
	sessionID  string
	kind       string
	turn       int       // this turn's number, 1-based
	step       int       // the checkpoint step to write, for kept sessions
	history    []Message // the conversation before this step, for the cache
	appended   []Message
	held       *pending
	status     string
	userText   string
	replyText  string
	preview    string
	run        runs.Run
	durationMS int
}

// persist writes a finished turn in one pipelined batch (one implicit
// transaction, one round trip): the run, and for sessions the checkpoint,
// the transcript row and the session row.
func (r *Runtime) persist(ctx context.Context, t turnRecord) error {
	if t.sessionID != "" {
		defer r.leases.drop(t.sessionID) // the session's status is final from here
	} else if r.cfg.Runs != nil {
		// Only the run: it joins the next group commit.
		return r.writeRun(ctx, t.run)
	}
	var b pgx.Batch
	var written time.Time // the checkpoint's created_at
	if t.kind != kindSession {
		// Without a checkpoint, the rows are history and grouping, not the
		// conversation: the commit need not wait for the disk. A crash can
		// lose the last few milliseconds of them, never a session's state.
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	queueRun(&b, t.run)
	if t.sessionID != "" {
		if t.kind == kindSession {
			msgs, err := json.Marshal(t.appended)
			if err != nil {
				return storageErr("encode checkpoint", err)
			}
			var pend []byte
			if t.held != nil {
				if pend, err = json.Marshal(t.held); err != nil {
					return storageErr("encode checkpoint", err)
				}
			}
			b.Queue(`INSERT INTO stackbone_checkpoints.checkpoints (session_id, step, messages, pending) VALUES ($1, $2, $3, $4)
				RETURNING created_at`, t.sessionID, t.step, msgs, pend).QueryRow(func(row pgx.Row) error { return row.Scan(&written) })
		}
		// A decision resumes a held turn: its reply continues the turn's,
		// as the next step, so it is separated as steps are.
		b.Queue(`INSERT INTO stackbone_platform.session_turns
			  (session_id, turn, run_id, status, user_text, reply_text, input_tokens, output_tokens, duration_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (session_id, turn) DO UPDATE SET run_id = excluded.run_id, status = excluded.status,
			  reply_text = concat_ws($10, NULLIF(session_turns.reply_text, ''), NULLIF(excluded.reply_text, '')),
			  input_tokens = session_turns.input_tokens + excluded.input_tokens,
			  output_tokens = session_turns.output_tokens + excluded.output_tokens,
			  duration_ms = session_turns.duration_ms + excluded.duration_ms`,
			t.sessionID, t.turn, t.run.ID, t.run.Status, t.userText, t.replyText, t.run.InputTokens, t.run.OutputTokens, t.durationMS,
			StepSeparator)
		b.Queue(`UPDATE stackbone_platform.sessions SET status = $2, running_since = NULL, turns = $3,
			  input_tokens = input_tokens + $4, output_tokens = output_tokens + $5, last_activity_at = now(),
			  preview = coalesce(preview, NULLIF($6, ''))
			WHERE id = $1`, t.sessionID, t.status, t.turn, t.run.InputTokens, t.run.OutputTokens, t.preview)
	}
	if err := r.cfg.Pool.SendBatch(ctx, &b).Close(); err != nil {
		if t.kind == kindSession {
			r.history.drop(t.sessionID)
		}
		return storageErr("save turn", err)
	}
	if t.kind == kindSession {
		if t.held != nil {
			r.history.drop(t.sessionID) // a decision reads the checkpoint
		} else {
			r.history.put(t.sessionID, t.step, written, slices.Concat(t.history, t.appended))
		}
	}
	return nil
}

func queueRun(b *pgx.Batch, r runs.Run) { runs.QueueInsert(b, r) }

// previewOf is the first user message of a conversation (its parts in
// order), clipped.
func previewOf(parts ...[]Message) string {
	for _, msgs := range parts {
		for _, m := range msgs {
			if m.Role == RoleUser && m.Content != "" {
				if utf8.RuneCountInString(m.Content) > 200 {
					return string([]rune(m.Content)[:200]) + "…"
				}
				return m.Content
			}
		}
	}
	return ""
}

// SessionSummary is one row of GET /api/sessions.
type SessionSummary struct {
	ID             string    `json:"id"`
	Kind           string    `json:"kind"`
	Agent          string    `json:"agent"`
	Status         string    `json:"status"`
	Turns          int       `json:"turns"`
	InputTokens    int64     `json:"inputTokens"`
	OutputTokens   int64     `json:"outputTokens"`
	Preview        string    `json:"preview"`
	CreatedAt      time.Time `json:"createdAt"`
	LastActivityAt time.Time `json:"lastActivityAt"`
}

// SessionTurn is one turn of a session's transcript.
type SessionTurn struct {
	Turn         int       `json:"turn"`
	RunID        uuid.UUID `json:"runId"`
	Status       string    `json:"status"`
	User         string    `json:"user"`
	Reply        string    `json:"reply"`
	InputTokens  int       `json:"inputTokens"`
	OutputTokens int       `json:"outputTokens"`
	DurationMS   int       `json:"durationMs"`
	At           time.Time `json:"at"`
}

// SessionDetail is GET /api/sessions/{id}.
type SessionDetail struct {
	SessionSummary
	Transcript []SessionTurn `json:"transcript"`
	// Pending is the held tool call waiting for a decision.
	Pending *ToolCall `json:"pending"`
}

// SessionFilter narrows ListSessions.
type SessionFilter struct {
	Agent  string
	Status string
	// Before lists the sessions after this one in the list's order (the
	// last id of the previous page: a keyset cursor). An unknown id gives
	// an empty page.
	Before string
	Limit  int
}

// ListSessions returns sessions newest activity first.
func (r *Runtime) ListSessions(ctx context.Context, f SessionFilter) ([]SessionSummary, error) {
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 50
	}
	rows, err := r.cfg.Pool.Query(ctx, `
		SELECT id, kind, agent_id, status, turns, input_tokens, output_tokens, coalesce(preview, ''), created_at, last_activity_at
		FROM stackbone_platform.sessions
		WHERE ($1 = '' OR agent_id = $1) AND ($2 = '' OR status = $2)
		  AND ($4 = '' OR (last_activity_at, id) < (SELECT last_activity_at, id FROM stackbone_platform.sessions WHERE id = $4))
		ORDER BY last_activity_at DESC, id DESC LIMIT $3`, f.Agent, f.Status, f.Limit, f.Before)
	if err != nil {
		return nil, storageErr("list sessions", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SessionSummary])
	if err != nil {
		return nil, storageErr("list sessions", err)
	}
	if out == nil {
		out = []SessionSummary{}
	}
	return out, nil
}

// GetSession returns a session with its transcript, or ErrSessionNotFound.
func (r *Runtime) GetSession(ctx context.Context, id string) (SessionDetail, error) {
	rows, err := r.cfg.Pool.Query(ctx, `
		SELECT id, kind, agent_id, status, turns, input_tokens, output_tokens, coalesce(preview, ''), created_at, last_activity_at
		FROM stackbone_platform.sessions WHERE id = $1`, id)
	if err != nil {
		return SessionDetail{}, storageErr("get session", err)
	}
	sum, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[SessionSummary])
	if errors.Is(err, pgx.ErrNoRows) {
		return SessionDetail{}, ErrSessionNotFound
	}
	if err != nil {
		return SessionDetail{}, storageErr("get session", err)
	}
	d := SessionDetail{SessionSummary: sum}
	rows, err = r.cfg.Pool.Query(ctx, `
		SELECT turn, run_id, status, user_text, reply_text, input_tokens, output_tokens, duration_ms, created_at
		FROM stackbone_platform.session_turns WHERE session_id = $1 ORDER BY turn`, id)
	if err != nil {
		return SessionDetail{}, storageErr("get transcript", err)
	}
	if d.Transcript, err = pgx.CollectRows(rows, pgx.RowToStructByPos[SessionTurn]); err != nil {
		return SessionDetail{}, storageErr("get transcript", err)
	}
	if d.Transcript == nil {
		d.Transcript = []SessionTurn{}
	}
	if sum.Status == StatusHeld {
		_, p, _, err := r.loadCheckpoint(ctx, id)
		if err != nil {
			return SessionDetail{}, err
		}
		if p != nil {
			d.Pending = &p.Call
		}
	}
	return d, nil
}

// writeRun writes a run of its own (a stateless turn's, a failed turn's):
// by group commit when the runtime has a writer.
func (r *Runtime) writeRun(ctx context.Context, run runs.Run) error {
	var err error
	if r.cfg.Runs != nil {
		err = r.cfg.Runs.Write(ctx, run)
	} else {
		var b pgx.Batch
		queueRun(&b, run)
		err = r.cfg.Pool.SendBatch(ctx, &b).Close()
	}
	if err != nil {
		return storageErr("save run", err)
	}
	return nil
}

// storageErr is a storage failure: its message names the operation only,
// so no database text reaches a wire; the cause stays for logs and errors.Is.
func storageErr(op string, cause error) error {
	return fault.Hide(fmt.Errorf("%w: %s", ErrStorage, op), cause)
}
