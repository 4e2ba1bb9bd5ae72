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
}

// Register mounts the calls routes.
func (m *Manager) Register(srv *api.Server) {
	srv.Route("GET /api/voice/calls", auth.ScopeVoice, m.list)
	srv.Route("GET /api/voice/calls/{id}", auth.ScopeVoice, m.get)
}

// Get reads one call, or ErrNotFound.
func (m *Manager) Get(ctx context.Context, id string) (CallRecord, error) {
	var c CallRecord
	var tr, mem, met []byte
	err := m.cfg.Pool.QueryRow(ctx, `SELECT id, direction, agent_id, phone_number, trunk, status, started_at, answered_at,
		ended_at, outcome, duration_seconds, transcript, memory, metrics, end_reason FROM stackbone_platform.voice_calls WHERE id = $1`, id).
		Scan(&c.ID, &c.Direction, &c.Agent, &c.PhoneNumber, &c.Trunk, &c.Status, &c.StartedAt, &c.AnsweredAt, &c.EndedAt,
			&c.Outcome, &c.DurationSeconds, &tr, &mem, &met, &c.EndReason)
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
