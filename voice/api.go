package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/analysis"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/postgres/notify"
	"github.com/stackbone/box/recordings"
)

// CallRecord is one call as the API shows it.
type CallRecord struct {
	ID          string     `json:"id"`
	Direction   string     `json:"direction"`
	Agent       string     `json:"agent"`
	PhoneNumber *string    `json:"phoneNumber"`
	Trunk       *string    `json:"trunk"`
	Status      string     `json:"status"`
	StartedAt   time.Time  `json:"startedAt"`
	AnsweredAt  *time.Time `json:"answeredAt"`
	EndedAt     *time.Time `json:"endedAt"`
	Outcome     *Outcome   `json:"outcome"`
	// EndReason says why a call failed or ended early, when known.
	EndReason       *string          `json:"endReason,omitempty"`
	DurationSeconds *float64         `json:"durationSeconds"`
	Transcript      []Entry          `json:"transcript,omitempty"`
	Memory          *MemoryReport    `json:"memory,omitempty"`
	Metrics         []map[string]any `json:"metrics,omitempty"`
	// AnsweredBy is who answered a screened call (human, voicemail, ivr,
	// fax, unknown), AnswerDecisionMs how long after the answer the box
	// knew; null when the call was not screened.
	AnsweredBy       *string `json:"answeredBy"`
	AnswerDecisionMs *int64  `json:"answerDecisionMs"`
	// Recording describes the call's recording (GET
	// /api/voice/calls/{id}/recording), absent when it has none.
	Recording *recordings.Info `json:"recording,omitempty"`
	// Analysis is what the post-call analysis found, absent until it ran
	// (or when the agent has none).
	Analysis *analysis.Result `json:"analysis,omitempty"`
	// Usage is what the call used per part, as far as recorded (kept as
	// the call goes, final once it ended); Cost is its price by the price
	// table, null until the call ended. Absent on calls older than both.
	Usage *costs.Usage `json:"usage,omitempty"`
	Cost  *costs.Cost  `json:"cost,omitempty"`
}

// Register mounts the calls routes.
func (m *Manager) Register(srv *api.Server) {
	srv.Route("GET /api/voice/calls", auth.ScopeVoice, m.list)
	srv.Route("GET /api/voice/calls/{id}", auth.ScopeVoice, m.get)
	srv.Route("POST /api/voice/calls/{id}/hangup", auth.ScopeVoice, m.hangupRoute)
	srv.Route("GET /api/voice/calls/{id}/recording", auth.ScopeVoice, m.recordingRoute)
}

// recordingRoute serves a call's recording (audio/ogg or audio/wav; byte
// ranges where the store can seek, so a player can jump in it).
func (m *Manager) recordingRoute(w http.ResponseWriter, r *http.Request) error {
	if m.cfg.Recorder == nil {
		return fmt.Errorf("%w: this box keeps no recordings", ErrNotFound)
	}
	id := r.PathValue("id")
	if err := m.Admit(r.Context(), id); err != nil {
		return err
	}
	rc, in, err := m.cfg.Recorder.Open(r.Context(), id)
	if errors.Is(err, recordings.ErrNotFound) {
		return fmt.Errorf("%w: the call has no recording", ErrNotFound)
	}
	if err != nil {
		return fault.Hide(ErrUnavailable, err)
	}
	defer rc.Close()
	w.Header().Set("Content-Type", recordings.ContentType(in.Format))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": id + "." + in.Format}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, no-store")
	if rs, ok := rc.(io.ReadSeeker); ok {
		http.ServeContent(w, r, "", in.CreatedAt, rs)
		return nil
	}
	w.Header().Set("Content-Length", strconv.FormatInt(in.SizeBytes, 10))
	if _, err := io.Copy(w, rc); err != nil {
		m.log.Warn("voice: recording download cut short", "call", id, "error", err)
	}
	return nil
}

// NotifyHangup is the notify topic that asks the box carrying a call to
// end it (its detail: the call's id).
const NotifyHangup = "hangup"

// Hangup ends call id from outside, ringing or running, as
// operator_hangup: at once when this box carries it, else through the box
// that does (NotifyHangup). Errors: ErrNotFound, ErrCallEnded,
// ErrUnavailable.
func (m *Manager) Hangup(ctx context.Context, id string) error {
	if m.HangupLocal(id) {
		return nil
	}
	var status string
	err := m.cfg.Pool.QueryRow(ctx, `SELECT status FROM stackbone_platform.voice_calls WHERE id = $1`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if status == "ended" {
		return ErrCallEnded
	}
	if err := notify.Send(ctx, m.cfg.Pool, NotifyHangup, id); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// HangupLocal ends call id as operator_hangup when this box carries it,
// and reports whether it does (the NotifyHangup subscriber).
func (m *Manager) HangupLocal(id string) bool {
	m.mu.Lock()
	c := m.calls[id]
	m.mu.Unlock()
	if c == nil {
		return false
	}
	c.End(OutcomeOperatorHangup, "ended from outside")
	return true
}

func (m *Manager) hangupRoute(w http.ResponseWriter, r *http.Request) error {
	err := m.Hangup(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: no call with that id", ErrNotFound)
	case errors.Is(err, ErrCallEnded):
		return fmt.Errorf("%w: the call has ended", ErrCallEnded)
	case err != nil:
		return fault.Hide(ErrUnavailable, err)
	}
	api.WriteData(w, http.StatusAccepted, map[string]string{"id": r.PathValue("id"), "status": "ending"})
	return nil
}

// Get reads one call, or ErrNotFound.
func (m *Manager) Get(ctx context.Context, id string) (CallRecord, error) {
	var c CallRecord
	var tr, mem, met []byte
	err := m.cfg.Pool.QueryRow(ctx, `SELECT id, direction, agent_id, phone_number, trunk, status, started_at, answered_at,
		ended_at, outcome, duration_seconds, stackbone_platform.heard_transcript(voice_calls), memory, metrics, end_reason,
		answered_by, answer_decision_ms, analysis,
		CASE WHEN status = 'ended' THEN usage ELSE coalesce((SELECT e.usage FROM stackbone_platform.voice_call_entries e
			WHERE e.call_id = voice_calls.id AND e.usage IS NOT NULL ORDER BY e.seq DESC LIMIT 1), usage) END, cost
		FROM stackbone_platform.voice_calls WHERE id = $1`, id).
		Scan(&c.ID, &c.Direction, &c.Agent, &c.PhoneNumber, &c.Trunk, &c.Status, &c.StartedAt, &c.AnsweredAt, &c.EndedAt,
			&c.Outcome, &c.DurationSeconds, &tr, &mem, &met, &c.EndReason, &c.AnsweredBy, &c.AnswerDecisionMs, &c.Analysis,
			&c.Usage, &c.Cost)
	if errors.Is(err, pgx.ErrNoRows) {
		return CallRecord{}, ErrNotFound
	}
	if err != nil {
		return CallRecord{}, err
	}
	c.Transcript = []Entry{}
	c.Memory = &MemoryReport{}
	_ = json.Unmarshal(tr, &c.Transcript)
	_ = json.Unmarshal(mem, c.Memory)
	_ = json.Unmarshal(met, &c.Metrics)
	if m.cfg.Recorder != nil {
		if in, err := m.cfg.Recorder.Get(ctx, id); err == nil {
			c.Recording = &in
		}
	}
	return c, nil
}

// Admit checks that the caller (identity.PolicyFrom(ctx)) may act on call
// id: a trusted key may act on any call; a key restricted to a person only
// on a call whose every identity it admits (a call opened without one
// belongs to no restricted key). Errors: ErrNotFound, identity.ErrForbidden,
// ErrUnavailable.
func (m *Manager) Admit(ctx context.Context, id string) error {
	p := identity.PolicyFrom(ctx)
	if !p.Restricted() {
		return nil
	}
	var ids identity.Set
	err := m.cfg.Pool.QueryRow(ctx, `SELECT identities FROM stackbone_platform.voice_calls WHERE id = $1`, id).Scan(&ids)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("%w: the call was opened for no identity this key may act for", identity.ErrForbidden)
	}
	_, err = p.Admit(ids)
	return err
}

// CallFilter narrows ListCalls. Zero values do not filter.
type CallFilter struct {
	Direction string
	Agent     string
	Status    string
	Outcome   string
	// Number is an exact phone number.
	Number string
	// From and To bound started_at: From <= started_at < To.
	From, To time.Time
	// Before lists the calls after this one in the list's order (the last
	// id of the previous page: a keyset cursor). An unknown id gives an
	// empty page.
	Before string
	// Limit defaults to 50, at most 200.
	Limit int
	// Success keeps the calls whose analysis judged every criterion passed
	// (true) or not (false).
	Success *bool
	// Fields keeps the calls whose analysis fields hold these values.
	Fields map[string]any
}

// ListCalls returns calls newest first, without transcripts.
func (m *Manager) ListCalls(ctx context.Context, f CallFilter) ([]CallRecord, error) {
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 50
	}
	rows, err := m.cfg.Pool.Query(ctx, `SELECT id, direction, agent_id, phone_number, trunk, status, started_at,
		answered_at, ended_at, outcome, duration_seconds, answered_by, answer_decision_ms, analysis, usage, cost
		FROM stackbone_platform.voice_calls
		WHERE ($1 = '' OR direction = $1) AND ($2 = '' OR agent_id = $2) AND ($3 = '' OR status = $3)
		  AND ($4 = '' OR outcome = $4) AND ($5 = '' OR phone_number = $5)
		  AND ($6::timestamptz IS NULL OR started_at >= $6) AND ($7::timestamptz IS NULL OR started_at < $7)
		  AND ($8 = '' OR (started_at, id) < (SELECT started_at, id FROM stackbone_platform.voice_calls WHERE id = $8))
		  AND ($10::boolean IS NULL OR (analysis->>'success')::boolean = $10)
		  AND ($11::jsonb IS NULL OR analysis->'fields' @> $11)
		ORDER BY started_at DESC, id DESC LIMIT $9`,
		f.Direction, f.Agent, f.Status, f.Outcome, f.Number, nullTime(f.From), nullTime(f.To), f.Before, f.Limit, f.Success, fieldsFilter(f.Fields))
	if err != nil {
		return nil, fmt.Errorf("voice: list calls: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CallRecord, error) {
		var c CallRecord
		err := row.Scan(&c.ID, &c.Direction, &c.Agent, &c.PhoneNumber, &c.Trunk, &c.Status, &c.StartedAt, &c.AnsweredAt,
			&c.EndedAt, &c.Outcome, &c.DurationSeconds, &c.AnsweredBy, &c.AnswerDecisionMs, &c.Analysis, &c.Usage, &c.Cost)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("voice: list calls: %w", err)
	}
	if out == nil {
		out = []CallRecord{}
	}
	return out, nil
}

// fieldsFilter is the JSON object analysis fields must contain, nil for
// no filter.
func fieldsFilter(fields map[string]any) any {
	if len(fields) == 0 {
		return nil
	}
	b, _ := json.Marshal(fields)
	return b
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// list serves GET /api/voice/calls?direction=&agent=&status=&outcome=&number=
// &from=&to=&before=&limit= (times RFC 3339; before is the last call id of
// the previous page).
func (m *Manager) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := CallFilter{Direction: q.Get("direction"), Agent: q.Get("agent"), Status: q.Get("status"),
		Outcome: q.Get("outcome"), Number: q.Get("number"), Before: q.Get("before"), Limit: 50}
	if f.Direction != "" && f.Direction != Inbound && f.Direction != Outbound && f.Direction != Browser {
		return fmt.Errorf("%w: direction must be inbound, outbound or browser", ErrInvalidRequest)
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			return fmt.Errorf("%w: limit must be a number from 1 to 200", ErrInvalidRequest)
		}
		f.Limit = n
	}
	switch q.Get("success") {
	case "":
	case "true", "false":
		v := q.Get("success") == "true"
		f.Success = &v
	default:
		return fmt.Errorf("%w: success must be true or false", ErrInvalidRequest)
	}
	for key, vals := range q {
		name, ok := strings.CutPrefix(key, "field.")
		if !ok {
			continue
		}
		if name == "" || len(vals) != 1 || len(f.Fields) >= 10 {
			return fmt.Errorf("%w: field.NAME=VALUE filters by an analysis field, once per field, at most 10", ErrInvalidRequest)
		}
		if f.Fields == nil {
			f.Fields = map[string]any{}
		}
		f.Fields[name] = fieldValue(vals[0])
	}
	for name, dst := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return fmt.Errorf("%w: %s must be an RFC 3339 time", ErrInvalidRequest, name)
			}
			*dst = t
		}
	}
	out, err := m.ListCalls(r.Context(), f)
	if err != nil {
		return fault.Hide(ErrUnavailable, err)
	}
	api.WriteData(w, http.StatusOK, out)
	return nil
}

// fieldValue reads a field filter's value: true, false, null and numbers
// as themselves, anything else as a string.
func fieldValue(v string) any {
	var out any
	if v == "true" || v == "false" || v == "null" || strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '-' }) < 0 {
		if json.Unmarshal([]byte(v), &out) == nil {
			return out
		}
	}
	return v
}

func (m *Manager) get(w http.ResponseWriter, r *http.Request) error {
	c, err := m.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w: no call with that id", ErrNotFound)
	}
	if err != nil {
		return fault.Hide(ErrUnavailable, err)
	}
	api.WriteData(w, http.StatusOK, c)
	return nil
}
