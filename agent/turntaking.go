package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/config"
)

// The turn-taking settings Studio can override, by their API names (the
// members of TurnOverrides, the ?field= of a reset). Durations are
// milliseconds.
const (
	TurnVAD              = "vad"
	TurnEndpointingMode  = "endpointingMode"
	TurnDetection        = "turnDetection"
	TurnEagerness        = "eagerness"
	TurnMinEndpointDelay = "minEndpointDelayMs"
	TurnMaxEndpointDelay = "maxEndpointDelayMs"
	TurnInterruptionMode = "interruptionMode"
	TurnMinWords         = "minWords"
	TurnMinVoiced        = "minVoicedMs"
	TurnResumeAfter      = "resumeAfterMs"
	TurnImmediateAfter   = "immediateAfterMs"
	TurnBackchannels     = "backchannels"
)

// TurnOverrides are the stored Studio turn-taking settings of one agent;
// nil is not overridden. Each replaces the config's setting of the same
// name (voice.vad, voice.endpointing.mode, voice.turnDetection,
// voice.eagerness, voice.minEndpointDelay, voice.maxEndpointDelay,
// voice.interruption.*); durations are milliseconds.
type TurnOverrides struct {
	VAD                *string  `json:"vad,omitempty"`
	EndpointingMode    *string  `json:"endpointingMode,omitempty"`
	TurnDetection      *string  `json:"turnDetection,omitempty"`
	Eagerness          *string  `json:"eagerness,omitempty"`
	MinEndpointDelayMs *int64   `json:"minEndpointDelayMs,omitempty"`
	MaxEndpointDelayMs *int64   `json:"maxEndpointDelayMs,omitempty"`
	InterruptionMode   *string  `json:"interruptionMode,omitempty"`
	MinWords           *int64   `json:"minWords,omitempty"`
	MinVoicedMs        *int64   `json:"minVoicedMs,omitempty"`
	ResumeAfterMs      *int64   `json:"resumeAfterMs,omitempty"`
	ImmediateAfterMs   *int64   `json:"immediateAfterMs,omitempty"`
	Backchannels       []string `json:"backchannels,omitempty"`
}

// TurnTaking is what a call of an agent uses, each setting its config
// leaves unset filled with the default (voice.TurnTakingOf resolves it).
// The closed-clause, sentence and silence delays are not set directly:
// the endpointing rules derive them, kept between the two endpoint delays.
type TurnTaking struct {
	VAD             string `json:"vad"`
	EndpointingMode string `json:"endpointingMode"`
	TurnDetection   string `json:"turnDetection"`
	Eagerness       string `json:"eagerness"`
	// STTMode is the agent's speech-to-text mode, which turnDetection
	// provider needs to be live (realtime or deepgram); not overridable.
	STTMode             string   `json:"sttMode"`
	MinEndpointDelayMs  int64    `json:"minEndpointDelayMs"`
	MaxEndpointDelayMs  int64    `json:"maxEndpointDelayMs"`
	ClosedClauseDelayMs int64    `json:"closedClauseDelayMs"`
	SentenceDelayMs     int64    `json:"sentenceDelayMs"`
	SilenceDelayMs      int64    `json:"silenceDelayMs"`
	InterruptionMode    string   `json:"interruptionMode"`
	MinWords            int64    `json:"minWords"`
	MinVoicedMs         int64    `json:"minVoicedMs"`
	ResumeAfterMs       int64    `json:"resumeAfterMs"`
	ImmediateAfterMs    int64    `json:"immediateAfterMs"`
	Backchannels        []string `json:"backchannels"`
}

// TurnOrigins says where each overridable setting in force comes from:
// studio, code or default.
type TurnOrigins struct {
	VAD                string `json:"vad"`
	EndpointingMode    string `json:"endpointingMode"`
	TurnDetection      string `json:"turnDetection"`
	Eagerness          string `json:"eagerness"`
	MinEndpointDelayMs string `json:"minEndpointDelayMs"`
	MaxEndpointDelayMs string `json:"maxEndpointDelayMs"`
	InterruptionMode   string `json:"interruptionMode"`
	MinWords           string `json:"minWords"`
	MinVoicedMs        string `json:"minVoicedMs"`
	ResumeAfterMs      string `json:"resumeAfterMs"`
	ImmediateAfterMs   string `json:"immediateAfterMs"`
	Backchannels       string `json:"backchannels"`
}

// TurnTakingView is the turn-taking contract of one agent.
type TurnTakingView struct {
	AgentID   string        `json:"agentId"`
	Overrides TurnOverrides `json:"overrides"`
	Value     TurnTaking    `json:"value"`
	Origins   TurnOrigins   `json:"origins"`
	// UpdatedAt and UpdatedBy tell the latest change of an override, nil
	// when the agent has none.
	UpdatedAt *time.Time `json:"updatedAt"`
	UpdatedBy *string    `json:"updatedBy"`
}

// turnStored is an agent's row of the turn-taking table.
type turnStored struct {
	TurnOverrides
	at time.Time
	by string
}

// turnField is one overridable setting: its API name, how the config's
// problems name it, and where it lives in an override, a config and the
// origins.
type turnField struct {
	name string
	key  string // a word of the config's problem messages that names it
	// set reports whether o overrides it and whether the override is a
	// zero value (which the config reads as "the default", so it is no
	// setting to store).
	set      func(o *TurnOverrides) (set, zero bool)
	clear    func(o *TurnOverrides)
	inConfig func(v *config.AgentVoice) bool
	origin   func(o *TurnOrigins) *string
}

func strField(p func(o *TurnOverrides) **string) func(o *TurnOverrides) (bool, bool) {
	return func(o *TurnOverrides) (bool, bool) { v := *p(o); return v != nil, v != nil && *v == "" }
}

func numField(p func(o *TurnOverrides) **int64) func(o *TurnOverrides) (bool, bool) {
	return func(o *TurnOverrides) (bool, bool) { v := *p(o); return v != nil, v != nil && *v == 0 }
}

func interruptionSets(v *config.AgentVoice, f func(i *config.Interruption) bool) bool {
	return v.Interruption != nil && f(v.Interruption)
}

var turnFields = []turnField{
	{TurnVAD, "voice.vad", strField(func(o *TurnOverrides) **string { return &o.VAD }),
		func(o *TurnOverrides) { o.VAD = nil }, func(v *config.AgentVoice) bool { return v.VAD != "" },
		func(o *TurnOrigins) *string { return &o.VAD }},
	{TurnEndpointingMode, "voice.endpointing", strField(func(o *TurnOverrides) **string { return &o.EndpointingMode }),
		func(o *TurnOverrides) { o.EndpointingMode = nil }, func(v *config.AgentVoice) bool { return v.Endpointing != nil && v.Endpointing.Mode != "" },
		func(o *TurnOrigins) *string { return &o.EndpointingMode }},
	{TurnDetection, "voice.turnDetection", strField(func(o *TurnOverrides) **string { return &o.TurnDetection }),
		func(o *TurnOverrides) { o.TurnDetection = nil }, func(v *config.AgentVoice) bool { return v.TurnDetection != "" },
		func(o *TurnOrigins) *string { return &o.TurnDetection }},
	{TurnEagerness, "voice.eagerness", strField(func(o *TurnOverrides) **string { return &o.Eagerness }),
		func(o *TurnOverrides) { o.Eagerness = nil }, func(v *config.AgentVoice) bool { return v.Eagerness != "" },
		func(o *TurnOrigins) *string { return &o.Eagerness }},
	{TurnMinEndpointDelay, "minEndpointDelay", numField(func(o *TurnOverrides) **int64 { return &o.MinEndpointDelayMs }),
		func(o *TurnOverrides) { o.MinEndpointDelayMs = nil }, func(v *config.AgentVoice) bool { return v.MinEndpointDelay != 0 },
		func(o *TurnOrigins) *string { return &o.MinEndpointDelayMs }},
	{TurnMaxEndpointDelay, "maxEndpointDelay", numField(func(o *TurnOverrides) **int64 { return &o.MaxEndpointDelayMs }),
		func(o *TurnOverrides) { o.MaxEndpointDelayMs = nil }, func(v *config.AgentVoice) bool { return v.MaxEndpointDelay != 0 },
		func(o *TurnOrigins) *string { return &o.MaxEndpointDelayMs }},
	{TurnInterruptionMode, "interruption.mode", strField(func(o *TurnOverrides) **string { return &o.InterruptionMode }),
		func(o *TurnOverrides) { o.InterruptionMode = nil },
		func(v *config.AgentVoice) bool {
			return interruptionSets(v, func(i *config.Interruption) bool { return i.Mode != "" })
		},
		func(o *TurnOrigins) *string { return &o.InterruptionMode }},
	{TurnMinWords, "minWords", numField(func(o *TurnOverrides) **int64 { return &o.MinWords }),
		func(o *TurnOverrides) { o.MinWords = nil },
		func(v *config.AgentVoice) bool {
			return interruptionSets(v, func(i *config.Interruption) bool { return i.MinWords != 0 })
		},
		func(o *TurnOrigins) *string { return &o.MinWords }},
	{TurnMinVoiced, "minVoiced", numField(func(o *TurnOverrides) **int64 { return &o.MinVoicedMs }),
		func(o *TurnOverrides) { o.MinVoicedMs = nil },
		func(v *config.AgentVoice) bool {
			return interruptionSets(v, func(i *config.Interruption) bool { return i.MinVoiced != 0 })
		},
		func(o *TurnOrigins) *string { return &o.MinVoicedMs }},
	{TurnResumeAfter, "resumeAfter", numField(func(o *TurnOverrides) **int64 { return &o.ResumeAfterMs }),
		func(o *TurnOverrides) { o.ResumeAfterMs = nil },
		func(v *config.AgentVoice) bool {
			return interruptionSets(v, func(i *config.Interruption) bool { return i.ResumeAfter != 0 })
		},
		func(o *TurnOrigins) *string { return &o.ResumeAfterMs }},
	{TurnImmediateAfter, "immediateAfter", numField(func(o *TurnOverrides) **int64 { return &o.ImmediateAfterMs }),
		func(o *TurnOverrides) { o.ImmediateAfterMs = nil },
		func(v *config.AgentVoice) bool {
			return interruptionSets(v, func(i *config.Interruption) bool { return i.ImmediateAfter != 0 })
		},
		func(o *TurnOrigins) *string { return &o.ImmediateAfterMs }},
	{TurnBackchannels, "backchannels",
		func(o *TurnOverrides) (bool, bool) {
			return o.Backchannels != nil, o.Backchannels != nil && len(o.Backchannels) == 0
		},
		func(o *TurnOverrides) { o.Backchannels = nil },
		func(v *config.AgentVoice) bool {
			return interruptionSets(v, func(i *config.Interruption) bool { return len(i.Backchannels) > 0 })
		},
		func(o *TurnOrigins) *string { return &o.Backchannels }},
}

// turnFieldNames lists the settings for an error message.
func turnFieldNames() string {
	names := make([]string, len(turnFields))
	for i, f := range turnFields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

// fields are the names of the settings o overrides.
func (o TurnOverrides) fields() []string {
	var out []string
	for _, f := range turnFields {
		if set, _ := f.set(&o); set {
			out = append(out, f.name)
		}
	}
	return out
}

// merge is o with the settings p sets replaced; neither is changed.
func (o TurnOverrides) merge(p TurnOverrides) TurnOverrides {
	m := map[string]json.RawMessage{}
	for _, v := range []TurnOverrides{o, p} {
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &m)
	}
	b, _ := json.Marshal(m)
	var out TurnOverrides
	_ = json.Unmarshal(b, &out)
	return out
}

// millis is a duration of ms milliseconds, saturated far beyond any
// setting's limit so a huge value stays invalid instead of wrapping.
func millis(ms int64) time.Duration {
	const limit = int64(time.Hour / time.Millisecond)
	return time.Duration(min(max(ms, -limit), limit)) * time.Millisecond
}

// withTurnTaking is ag with the turn-taking settings o overrides. The
// config is not changed (Voice and its Endpointing and Interruption are
// copied).
func withTurnTaking(ag config.Agent, o TurnOverrides) config.Agent {
	if len(o.fields()) == 0 {
		return ag
	}
	v := config.AgentVoice{}
	if ag.Voice != nil {
		v = *ag.Voice
	}
	if o.VAD != nil {
		v.VAD = *o.VAD
	}
	if o.EndpointingMode != nil {
		e := config.Endpointing{}
		if v.Endpointing != nil {
			e = *v.Endpointing
		}
		e.Mode = *o.EndpointingMode
		v.Endpointing = &e
	}
	if o.TurnDetection != nil {
		v.TurnDetection = *o.TurnDetection
	}
	if o.Eagerness != nil {
		v.Eagerness = *o.Eagerness
	}
	if o.MinEndpointDelayMs != nil {
		v.MinEndpointDelay = millis(*o.MinEndpointDelayMs)
	}
	if o.MaxEndpointDelayMs != nil {
		v.MaxEndpointDelay = millis(*o.MaxEndpointDelayMs)
	}
	if o.InterruptionMode != nil || o.MinWords != nil || o.MinVoicedMs != nil || o.ResumeAfterMs != nil ||
		o.ImmediateAfterMs != nil || o.Backchannels != nil {
		in := config.Interruption{}
		if v.Interruption != nil {
			in = *v.Interruption
		}
		if o.InterruptionMode != nil {
			in.Mode = *o.InterruptionMode
		}
		if o.MinWords != nil {
			in.MinWords = int(min(max(*o.MinWords, -1), 1<<20))
		}
		if o.MinVoicedMs != nil {
			in.MinVoiced = millis(*o.MinVoicedMs)
		}
		if o.ResumeAfterMs != nil {
			in.ResumeAfter = millis(*o.ResumeAfterMs)
		}
		if o.ImmediateAfterMs != nil {
			in.ImmediateAfter = millis(*o.ImmediateAfterMs)
		}
		if o.Backchannels != nil {
			in.Backchannels = slices.Clone(o.Backchannels)
		}
		v.Interruption = &in
	}
	ag.Voice = &v
	return ag
}

// zeroProblems are the settings p sets to "" or 0 or [], which the
// config reads as "the default": no value to store.
func zeroProblems(p TurnOverrides) []string {
	var msgs []string
	for _, f := range turnFields {
		if set, zero := f.set(&p); set && zero {
			msgs = append(msgs, fmt.Sprintf("%s: an empty or zero value is no setting; DELETE ?field=%s goes back to the config's value", f.name, f.name))
		}
	}
	return msgs
}

// turnProblems checks ag with o by the config's rules (those Load applies
// to voice.vad, voice.endpointing, voice.interruption...), each problem
// named after the setting it is about, the ones in changed first.
func turnProblems(name string, ag config.Agent, o TurnOverrides, changed []string) []string {
	set := o.fields()
	var msgs []string
	for _, p := range config.TurnTakingProblems(name, withTurnTaking(ag, o)) {
		p = strings.TrimPrefix(p, "agent "+name+": ")
		field := ""
		for _, names := range [][]string{changed, set} {
			for _, f := range turnFields {
				if field == "" && slices.Contains(names, f.name) && strings.Contains(p, f.key) {
					field = f.name
				}
			}
		}
		if field == "" && len(changed) > 0 {
			// A rule between settings (turnDetection provider needs a
			// live sttMode, which the config sets).
			field = changed[0]
		}
		if field != "" {
			p = field + ": " + p
		}
		msgs = append(msgs, p)
	}
	return msgs
}

// turnTaking is ag's turn-taking with the stored overrides r, or the
// config's alone when they no longer pass its rules (the config changed
// since they were saved: sttMode is no longer live, say); applied says
// which.
func (s *ChainSettings) turnTaking(name string, ag config.Agent, r turnStored) (config.Agent, bool) {
	if len(r.fields()) == 0 {
		return ag, false
	}
	if msgs := turnProblems(name, ag, r.TurnOverrides, nil); len(msgs) > 0 {
		return ag, false
	}
	return withTurnTaking(ag, r.TurnOverrides), true
}

// warnLeftOut logs, once per read of the table, each agent whose
// turn-taking overrides are left out (see turnTaking).
func (s *ChainSettings) warnLeftOut(rows map[string]stored) {
	for name, r := range rows {
		ag, ok := s.agents[name]
		if !ok || len(r.turn.fields()) == 0 {
			continue
		}
		if _, applied := s.turnTaking(name, withChains(ag, r.ChainOverrides), r.turn); !applied {
			s.log.Warn("turn-taking overrides left out: they break the config's rules; reset or save them again",
				"agent", name, "fields", r.turn.fields())
		}
	}
}

// TurnTaking returns the turn-taking settings of a declared agent in
// force, with their origins, or ErrUnknownAgent or ErrStorage.
func (s *ChainSettings) TurnTaking(ctx context.Context, name string) (TurnTakingView, error) {
	if err := s.known(name); err != nil {
		return TurnTakingView{}, err
	}
	rows, err := s.cached(ctx)
	if err != nil {
		return TurnTakingView{}, err
	}
	return s.turnView(name, rows[name]), nil
}

// PutTurnTaking saves the settings p sets over the agent's stored ones;
// the agent with all of them must pass the config's rules (validateSTT
// and the interruption rules, see config.TurnTakingProblems). The change
// and the settings it touched go to the activity log. Errors:
// ErrUnknownAgent, ErrInvalidRequest naming each setting at fault
// (nothing saved), ErrStorage.
func (s *ChainSettings) PutTurnTaking(ctx context.Context, actor, name string, p TurnOverrides) (TurnTakingView, error) {
	if err := s.known(name); err != nil {
		return TurnTakingView{}, err
	}
	ag := s.agents[name]
	fields := p.fields()
	if len(fields) == 0 {
		return TurnTakingView{}, fmt.Errorf("%w: nothing to save: send one or more of %s", ErrInvalidRequest, turnFieldNames())
	}
	rows, err := s.cached(ctx)
	if err != nil {
		return TurnTakingView{}, err
	}
	// Checked with the chains in force (the speech-to-text chain).
	ag = withChains(ag, rows[name].ChainOverrides)
	row, err := s.commit(ctx, name, func(tx pgx.Tx) error {
		var now TurnOverrides
		var raw []byte
		err := tx.QueryRow(ctx, `SELECT settings FROM stackbone_platform.agent_turn_taking WHERE agent_id = $1 FOR UPDATE`, name).Scan(&raw)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return storageErr("read turn-taking", err)
		}
		if raw != nil {
			if err := json.Unmarshal(raw, &now); err != nil {
				return storageErr("read turn-taking", err)
			}
		}
		all := now.merge(p)
		if msgs := append(zeroProblems(p), turnProblems(name, ag, all, fields)...); len(msgs) > 0 {
			return fmt.Errorf("%w: %s", ErrInvalidRequest, strings.Join(msgs, "; "))
		}
		b, err := json.Marshal(all)
		if err != nil {
			return storageErr("save turn-taking", err)
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO stackbone_platform.agent_turn_taking (agent_id, settings, updated_by) VALUES ($1, $2, $3)
			ON CONFLICT (agent_id) DO UPDATE SET settings = $2, updated_at = now(), updated_by = $3`, name, b, actor); err != nil {
			return storageErr("save turn-taking", err)
		}
		return logActivity(ctx, tx, actor, "agent.turntaking.saved", name, fields)
	})
	if err != nil {
		return TurnTakingView{}, err
	}
	return s.turnView(name, row), nil
}

// ResetTurnTaking removes the override of one setting (field, an API name
// such as minWords) or, with field "", all of them, so the config's
// settings apply again. Errors: ErrUnknownAgent, ErrInvalidRequest,
// ErrStorage.
func (s *ChainSettings) ResetTurnTaking(ctx context.Context, actor, name, field string) (TurnTakingView, error) {
	if err := s.known(name); err != nil {
		return TurnTakingView{}, err
	}
	fields := make([]string, 0, len(turnFields))
	for _, f := range turnFields {
		if field == "" || f.name == field {
			fields = append(fields, f.name)
		}
	}
	if len(fields) == 0 {
		return TurnTakingView{}, fmt.Errorf("%w: field must be one of %s", ErrInvalidRequest, turnFieldNames())
	}
	row, err := s.commit(ctx, name, func(tx pgx.Tx) error {
		// Everything, or the setting and the row when it was the last.
		if _, err := tx.Exec(ctx, `DELETE FROM stackbone_platform.agent_turn_taking WHERE agent_id = $1
			AND ($2 = '' OR settings - $2::text = '{}'::jsonb)`, name, field); err != nil {
			return storageErr("reset turn-taking", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE stackbone_platform.agent_turn_taking SET settings = settings - $2::text,
			updated_at = now(), updated_by = $3 WHERE agent_id = $1 AND settings ? $2::text`, name, field, actor); err != nil {
			return storageErr("reset turn-taking", err)
		}
		return logActivity(ctx, tx, actor, "agent.turntaking.reset", name, fields)
	})
	if err != nil {
		return TurnTakingView{}, err
	}
	return s.turnView(name, row), nil
}

func readAllTurns(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, out map[string]stored) error {
	rows, err := q.Query(ctx, `SELECT agent_id, settings, updated_at, updated_by FROM stackbone_platform.agent_turn_taking`)
	if err != nil {
		return storageErr("read turn-taking", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var raw []byte
		var t turnStored
		if err := rows.Scan(&name, &raw, &t.at, &t.by); err != nil {
			return storageErr("read turn-taking", err)
		}
		if err := json.Unmarshal(raw, &t.TurnOverrides); err != nil {
			return storageErr("read turn-taking", err)
		}
		r := out[name]
		r.turn = t
		out[name] = r
	}
	if err := rows.Err(); err != nil {
		return storageErr("read turn-taking", err)
	}
	return nil
}

func readTurns(ctx context.Context, tx pgx.Tx, name string) (turnStored, error) {
	var t turnStored
	var raw []byte
	err := tx.QueryRow(ctx, `SELECT settings, updated_at, updated_by FROM stackbone_platform.agent_turn_taking
		WHERE agent_id = $1`, name).Scan(&raw, &t.at, &t.by)
	if errors.Is(err, pgx.ErrNoRows) {
		return turnStored{}, nil
	}
	if err == nil {
		err = json.Unmarshal(raw, &t.TurnOverrides)
	}
	if err != nil {
		return turnStored{}, storageErr("read turn-taking", err)
	}
	return t, nil
}

// turnView resolves one agent's turn-taking: studio over code over
// default, the values as a call would use them.
func (s *ChainSettings) turnView(name string, r stored) TurnTakingView {
	ag, applied := s.turnTaking(name, withChains(s.agents[name], r.ChainOverrides), r.turn)
	v := TurnTakingView{AgentID: name, Overrides: r.turn.TurnOverrides}
	if s.resolve != nil {
		v.Value = s.resolve(ag)
	}
	if v.Value.Backchannels == nil {
		v.Value.Backchannels = []string{}
	}
	code := s.agents[name].Voice
	if code == nil {
		code = &config.AgentVoice{}
	}
	// Overrides left out (see turnTaking) are not in force.
	for _, f := range turnFields {
		o := f.origin(&v.Origins)
		switch set, _ := f.set(&r.turn.TurnOverrides); {
		case set && applied:
			*o = OriginStudio
		case f.inConfig(code):
			*o = OriginCode
		default:
			*o = OriginDefault
		}
	}
	if r.turn.by != "" {
		at, by := r.turn.at.UTC(), r.turn.by
		v.UpdatedAt, v.UpdatedBy = &at, &by
	}
	return v
}
