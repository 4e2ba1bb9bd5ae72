package costs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/identity"
)

// Errors of the reports.
var (
	// ErrNotFound: no text session has that id.
	ErrNotFound = fault.New(fault.NotFound, "not_found", "costs: no such session")
	// ErrUnavailable: the database did not answer.
	ErrUnavailable = fault.New(fault.Unavailable, "costs_unavailable", "costs: the database did not answer")
)

// PartText is the model tokens of text turns (the text wires), in totals.
const PartText = "text"

// Reports reads what calls and text sessions cost. The calls' costs are
// the ones recorded with each call's end; text turns are priced from their
// runs by the table in force.
type Reports struct {
	pool  *pgxpool.Pool
	table *Table
}

// NewReports returns the reports on pool, pricing text turns by table.
func NewReports(pool *pgxpool.Pool, table *Table) *Reports {
	return &Reports{pool: pool, table: table}
}

// Register mounts GET /api/costs (runs:read) and GET
// /api/costs/sessions/{id} (sessions:read).
func (r *Reports) Register(srv *api.Server) {
	srv.Route("GET /api/costs", auth.ScopeRunsRead, r.totalsRoute)
	srv.Route("GET /api/costs/sessions/{id}", auth.ScopeSessionsRead, r.sessionRoute)
}

// TotalsUsage is what the calls and text turns of a total used.
type TotalsUsage struct {
	Tokens
	TextInputTokens        int64   `json:"textInputTokens"`
	TextOutputTokens       int64   `json:"textOutputTokens"`
	SpeechToTextSeconds    float64 `json:"speechToTextSeconds"`
	TextToSpeechCharacters int64   `json:"textToSpeechCharacters"`
	TelephonySeconds       float64 `json:"telephonySeconds"`
}

// TotalsCost is a total's cost per part: a part is nil when some of its
// usage has no price (Unpriced names it; Priced sums what is priced).
type TotalsCost struct {
	Model        *float64 `json:"model"`
	SpeechToText *float64 `json:"speechToText"`
	TextToSpeech *float64 `json:"textToSpeech"`
	Telephony    *float64 `json:"telephony"`
	Text         *float64 `json:"text"`
	Total        *float64 `json:"total"`
	Priced       float64  `json:"priced"`
	Unpriced     []string `json:"unpriced"`
	textUnpriced bool
}

// Total is the calls and text turns of one agent or one day (UTC).
type Total struct {
	Key      string      `json:"key"`
	Currency string      `json:"currency"`
	Calls    int64       `json:"calls"`
	Sessions int64       `json:"sessions"`
	Usage    TotalsUsage `json:"usage"`
	Cost     TotalsCost  `json:"cost"`
}

// TotalsFilter narrows Totals.
type TotalsFilter struct {
	// By is "agent" or "day" (UTC).
	By string
	// From and To bound the calls' and turns' start: From <= start < To;
	// zero: unbounded.
	From, To time.Time
	// Agent keeps one agent's calls and turns; "": every agent.
	Agent string
}

// Totals returns the totals by agent or by day, in key order, one per key
// and currency (a change of the table's currency starts new rows).
func (r *Reports) Totals(ctx context.Context, f TotalsFilter) ([]Total, error) {
	key := "agent_id"
	if f.By == "day" {
		key = "to_char(started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	rows, err := r.pool.Query(ctx, `SELECT `+key+`, cost->>'currency', count(*),
		coalesce(sum((usage->'model'->>'inputTokens')::bigint), 0), coalesce(sum((usage->'model'->>'outputTokens')::bigint), 0),
		coalesce(sum((usage->'speechToText'->>'seconds')::float8), 0), coalesce(sum((usage->'textToSpeech'->>'characters')::bigint), 0),
		coalesce(sum((usage->'telephony'->>'seconds')::float8), 0),
		sum((cost->>'model')::float8), sum((cost->>'speechToText')::float8), sum((cost->>'textToSpeech')::float8),
		sum((cost->>'telephony')::float8),
		bool_or(cost->'unpriced' ? 'model'), bool_or(cost->'unpriced' ? 'speechToText'),
		bool_or(cost->'unpriced' ? 'textToSpeech'), bool_or(cost->'unpriced' ? 'telephony')
		FROM stackbone_platform.voice_calls
		WHERE cost IS NOT NULL AND ($1::timestamptz IS NULL OR started_at >= $1) AND ($2::timestamptz IS NULL OR started_at < $2)
		  AND ($3 = '' OR agent_id = $3)
		GROUP BY 1, 2`, nullTime(f.From), nullTime(f.To), f.Agent)
	if err != nil {
		return nil, fmt.Errorf("costs: totals: %w", err)
	}
	type rowKey struct{ key, currency string }
	totals := map[rowKey]*Total{}
	var t Total
	var parts [4]*float64
	var unpriced [4]bool
	_, err = pgx.ForEachRow(rows, []any{&t.Key, &t.Currency, &t.Calls, &t.Usage.InputTokens, &t.Usage.OutputTokens,
		&t.Usage.SpeechToTextSeconds, &t.Usage.TextToSpeechCharacters, &t.Usage.TelephonySeconds,
		&parts[0], &parts[1], &parts[2], &parts[3], &unpriced[0], &unpriced[1], &unpriced[2], &unpriced[3]}, func() error {
		row := t
		for i, part := range Parts {
			v := parts[i]
			if v == nil {
				zero := 0.0
				v = &zero
			}
			row.Cost.Priced += *v
			if unpriced[i] {
				row.Cost.Unpriced = append(row.Cost.Unpriced, part)
				v = nil
			}
			row.Cost.setPart(part, v)
		}
		totals[rowKey{row.Key, row.Currency}] = &row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("costs: totals: %w", err)
	}
	if err := r.addText(ctx, f, key, func(k string) *Total {
		rk := rowKey{k, r.table.Currency()}
		if totals[rk] == nil {
			totals[rk] = &Total{Key: k, Currency: r.table.Currency()}
		}
		return totals[rk]
	}); err != nil {
		return nil, err
	}
	out := make([]Total, 0, len(totals))
	for _, t := range totals {
		t.Cost.finish()
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Currency < out[j].Currency
	})
	return out, nil
}

// addText adds the text turns' tokens, priced by the table, to the totals
// row of their key.
func (r *Reports) addText(ctx context.Context, f TotalsFilter, key string, row func(string) *Total) error {
	// Per key and model for the tokens; per key alone (model NULL) for
	// the sessions, so a session whose turns two models answered counts
	// once.
	rows, err := r.pool.Query(ctx, `SELECT `+key+`, model, sum(input_tokens), sum(output_tokens),
		count(DISTINCT metadata->>'session')
		FROM stackbone_platform.runs
		WHERE kind = 'agent_turn' AND coalesce(metadata->>'wire', '') <> 'voice' AND agent_id IS NOT NULL AND model IS NOT NULL
		  AND ($1::timestamptz IS NULL OR started_at >= $1) AND ($2::timestamptz IS NULL OR started_at < $2)
		  AND ($3 = '' OR agent_id = $3)
		GROUP BY GROUPING SETS ((1, 2), (1))`, nullTime(f.From), nullTime(f.To), f.Agent)
	if err != nil {
		return fmt.Errorf("costs: text totals: %w", err)
	}
	var k string
	var model *string
	var n Tokens
	var sessions int64
	_, err = pgx.ForEachRow(rows, []any{&k, &model, &n.InputTokens, &n.OutputTokens, &sessions}, func() error {
		t := row(k)
		if model == nil {
			t.Sessions = sessions
			return nil
		}
		t.Usage.TextInputTokens += n.InputTokens
		t.Usage.TextOutputTokens += n.OutputTokens
		v := r.table.Price(Usage{Model: ModelUsage{ByModel: map[string]Tokens{*model: n}}}).Model
		switch {
		case v == nil:
			t.Cost.Text = nil
			t.Cost.textUnpriced = true
		case !t.Cost.textUnpriced:
			sum := *v
			if t.Cost.Text != nil {
				sum += *t.Cost.Text
			}
			t.Cost.Text = &sum
		}
		if v != nil {
			t.Cost.Priced += *v
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("costs: text totals: %w", err)
	}
	return nil
}

func (c *TotalsCost) setPart(part string, v *float64) {
	switch part {
	case PartModel:
		c.Model = v
	case PartSpeechToText:
		c.SpeechToText = v
	case PartTextToSpeech:
		c.TextToSpeech = v
	case PartTelephony:
		c.Telephony = v
	}
}

// finish settles the text part and the total once every row was added.
func (c *TotalsCost) finish() {
	if c.Unpriced == nil {
		c.Unpriced = []string{}
	}
	if c.textUnpriced {
		c.Unpriced = append(c.Unpriced, PartText)
	} else if c.Text == nil {
		zero := 0.0
		c.Text = &zero
	}
	if len(c.Unpriced) == 0 {
		total := c.Priced
		c.Total = &total
	}
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// SessionCost is what a text session's turns used and cost.
type SessionCost struct {
	SessionID string `json:"sessionId"`
	AgentID   string `json:"agentId"`
	Turns     int64  `json:"turns"`
	Usage     Usage  `json:"usage"`
	Cost      Cost   `json:"cost"`
}

// Session returns the usage and cost of a text session's turns, from
// their runs, priced by the table. Errors: ErrNotFound.
func (r *Reports) Session(ctx context.Context, id string) (SessionCost, error) {
	var agentID string
	err := r.pool.QueryRow(ctx, `SELECT agent_id FROM stackbone_platform.sessions WHERE id = $1`, id).Scan(&agentID)
	if errors.Is(err, pgx.ErrNoRows) {
		return SessionCost{}, ErrNotFound
	}
	if err != nil {
		return SessionCost{}, fmt.Errorf("costs: session: %w", err)
	}
	s := SessionCost{SessionID: id, AgentID: agentID, Usage: NewUsage()}
	rows, err := r.pool.Query(ctx, `SELECT model, count(*), sum(input_tokens), sum(output_tokens) FROM stackbone_platform.runs
		WHERE kind = 'agent_turn' AND metadata->>'session' = $1 AND model IS NOT NULL GROUP BY model`, id)
	if err != nil {
		return SessionCost{}, fmt.Errorf("costs: session: %w", err)
	}
	var model string
	var turns int64
	var n Tokens
	_, err = pgx.ForEachRow(rows, []any{&model, &turns, &n.InputTokens, &n.OutputTokens}, func() error {
		s.Turns += turns
		s.Usage.AddTokens(model, n)
		return nil
	})
	if err != nil {
		return SessionCost{}, fmt.Errorf("costs: session: %w", err)
	}
	s.Cost = r.table.Price(s.Usage)
	return s, nil
}

func (r *Reports) sessionRoute(w http.ResponseWriter, req *http.Request) error {
	s, err := r.Session(req.Context(), req.PathValue("id"))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fault.Hide(ErrUnavailable, err)
	}
	if err != nil {
		return err
	}
	api.WriteData(w, http.StatusOK, s)
	return nil
}

// Totals is the answer of GET /api/costs.
type Totals struct {
	By   string  `json:"by"`
	Rows []Total `json:"rows"`
}

func (r *Reports) totalsRoute(w http.ResponseWriter, req *http.Request) error {
	// Totals span every caller's calls: not for a key that acts for one
	// person.
	if identity.PolicyFrom(req.Context()).Restricted() {
		return fmt.Errorf("%w: cost totals span every person's calls", identity.ErrForbidden)
	}
	q := req.URL.Query()
	f := TotalsFilter{By: q.Get("by"), Agent: q.Get("agent")}
	switch f.By {
	case "":
		f.By = "agent"
	case "agent", "day":
	default:
		return fmt.Errorf("%w: by must be agent or day", api.ErrInvalidRequest)
	}
	for name, dst := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return fmt.Errorf("%w: %s must be an RFC 3339 time", api.ErrInvalidRequest, name)
			}
			*dst = t
		}
	}
	rows, err := r.Totals(req.Context(), f)
	if err != nil {
		return fault.Hide(ErrUnavailable, err)
	}
	api.WriteData(w, http.StatusOK, Totals{By: f.By, Rows: rows})
	return nil
}
