package voice

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/identity"
)

// DialRequest asks a transport to place an outbound call.
type DialRequest struct {
	Agent      string
	To         string
	Trunk      string
	Identities identity.Set
}

// Dialer places outbound calls (the SIP trunks).
type Dialer interface {
	// Dial opens the call (Manager.Open, so the recall is ready for the
	// greeting), starts ringing and returns the call's id at once. Errors
	// wrap ErrInvalidDial (the request is wrong), ErrNoTrunk or
	// ErrAtCapacity.
	Dial(ctx context.Context, req DialRequest) (callID string, err error)
}

// SetDialer gives the manager its outbound transport.
func (m *Manager) SetDialer(d Dialer) {
	m.mu.Lock()
	m.dialer = d
	m.mu.Unlock()
}

// CallRecord is one call as the API shows it.
type CallRecord struct {
	ID              string           `json:"id"`
	Direction       string           `json:"direction"`
	Agent           string           `json:"agent"`
	PhoneNumber     *string          `json:"phoneNumber"`
	Trunk           *string          `json:"trunk"`
	Status          string           `json:"status"`
	StartedAt       time.Time        `json:"startedAt"`
	AnsweredAt      *time.Time       `json:"answeredAt"`
	EndedAt         *time.Time       `json:"endedAt"`
	Outcome         *string          `json:"outcome"`
	DurationSeconds *float64         `json:"durationSeconds"`
	Transcript      []Entry          `json:"transcript,omitempty"`
	Memory          *MemoryReport    `json:"memory,omitempty"`
	Metrics         []map[string]any `json:"metrics,omitempty"`
}

// Register mounts the calls routes.
func (m *Manager) Register(srv *api.Server) {
	srv.Route("GET /api/voice/calls", auth.ScopeVoice, m.list)
	srv.Route("GET /api/voice/calls/{id}", auth.ScopeVoice, m.get)
	srv.Route("POST /api/voice/calls", auth.ScopeVoice, m.dial)
}

// Get reads one call, or ErrNotFound.
func (m *Manager) Get(ctx context.Context, id string) (CallRecord, error) {
	var c CallRecord
	var tr, mem, met []byte
	err := m.cfg.Pool.QueryRow(ctx, `SELECT id, direction, agent_id, phone_number, trunk, status, started_at, answered_at,
		ended_at, outcome, duration_seconds, transcript, memory, metrics FROM stackbone_platform.voice_calls WHERE id = $1`, id).
		Scan(&c.ID, &c.Direction, &c.Agent, &c.PhoneNumber, &c.Trunk, &c.Status, &c.StartedAt, &c.AnsweredAt, &c.EndedAt,
			&c.Outcome, &c.DurationSeconds, &tr, &mem, &met)
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
	return c, nil
}

func (m *Manager) list(w http.ResponseWriter, r *http.Request) {
	rows, err := m.cfg.Pool.Query(r.Context(), `SELECT id, direction, agent_id, phone_number, trunk, status, started_at,
		answered_at, ended_at, outcome, duration_seconds FROM stackbone_platform.voice_calls ORDER BY started_at DESC, id LIMIT 200`)
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, "unavailable", "the calls table is unavailable")
		return
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CallRecord, error) {
		var c CallRecord
		err := row.Scan(&c.ID, &c.Direction, &c.Agent, &c.PhoneNumber, &c.Trunk, &c.Status, &c.StartedAt, &c.AnsweredAt,
			&c.EndedAt, &c.Outcome, &c.DurationSeconds)
		return c, err
	})
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, "unavailable", "the calls table is unavailable")
		return
	}
	if out == nil {
		out = []CallRecord{}
	}
	api.WriteData(w, http.StatusOK, out)
}

func (m *Manager) get(w http.ResponseWriter, r *http.Request) {
	c, err := m.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		api.WriteError(w, http.StatusNotFound, "call_not_found", "no call with that id")
		return
	}
	if err != nil {
		api.WriteError(w, http.StatusServiceUnavailable, "unavailable", "the calls table is unavailable")
		return
	}
	api.WriteData(w, http.StatusOK, c)
}

func (m *Manager) dial(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Agent      string          `json:"agent"`
		To         string          `json:"to"`
		Trunk      string          `json:"trunk"`
		Identities json.RawMessage `json:"identities"`
	}
	if err := api.Decode(w, r, 64<<10, &b); err != nil {
		api.WriteError(w, http.StatusBadRequest, "voice_invalid_request", err.Error())
		return
	}
	if b.Agent == "" || b.To == "" {
		api.WriteError(w, http.StatusBadRequest, "voice_invalid_request", "agent and to are required")
		return
	}
	if _, ok := m.cfg.Agents[b.Agent]; !ok {
		api.WriteError(w, http.StatusNotFound, "agent_not_found", "no agent named "+b.Agent)
		return
	}
	ids, err := identity.ParseJSONValue(b.Identities, nil)
	if err != nil {
		api.WriteError(w, http.StatusBadRequest, "voice_invalid_request", err.Error())
		return
	}
	m.mu.Lock()
	d := m.dialer
	m.mu.Unlock()
	if d == nil {
		api.WriteError(w, http.StatusServiceUnavailable, "voice_no_trunk", "no outbound trunk is configured")
		return
	}
	id, err := d.Dial(r.Context(), DialRequest{Agent: b.Agent, To: b.To, Trunk: b.Trunk, Identities: ids})
	if err != nil {
		status, code := http.StatusBadGateway, "voice_dial_failed"
		switch {
		case errors.Is(err, ErrInvalidDial):
			status, code = http.StatusBadRequest, "voice_invalid_request"
		case errors.Is(err, ErrNoTrunk):
			status, code = http.StatusServiceUnavailable, "voice_no_trunk"
		case errors.Is(err, ErrAtCapacity):
			status, code = http.StatusServiceUnavailable, "voice_at_capacity"
		}
		api.WriteError(w, status, code, err.Error())
		return
	}
	api.WriteData(w, http.StatusAccepted, map[string]string{"callId": id})
}
