package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/notify"
)

// The chains of an agent that Studio can override.
const (
	ChainModel = "model"
	ChainSTT   = "stt"
	ChainTTS   = "tts"
)

// MaxChainEntries is the longest chain an override may set: each entry
// past the first is tried only when the ones before failed, so a longer
// one only makes a caller wait longer.
const MaxChainEntries = 5

// Origins of an effective chain, as memory settings name theirs.
const (
	OriginStudio  = memory.OriginStudio
	OriginCode    = memory.OriginCode
	OriginDefault = memory.OriginDefault
)

// NotifyChains is the notify topic a change of any agent's chains is sent
// on; Invalidate is its subscriber.
const NotifyChains = "chains"

// chainsTTL bounds how long a box serves its cached overrides without
// reading them again, should a notification be lost.
const chainsTTL = 30 * time.Second

// ChainSettings holds Studio's overrides of each agent's provider chains
// (model, voice.stt, voice.tts) and of its turn-taking (voice.vad,
// voice.endpointing, voice.interruption..., see TurnOverrides): an
// override stored in the database wins over the agent's setting in the
// config ("code"), which wins over the platform default. Every text turn and every call that opens reads the
// effective agent (Agent), so it is cached: the whole table at once, for
// at most 30 seconds; a save or reset clears the cache of this box at
// once and of the others through notify (topic "chains").
//
// It is safe for concurrent use.
type ChainSettings struct {
	pool      *pgxpool.Pool
	agents    map[string]config.Agent
	providers []string
	log       *slog.Logger
	resolve   func(config.Agent) TurnTaking

	load sync.Mutex // one read of the table at a time; the others wait for it
	mu   sync.Mutex
	rows map[string]stored // nil: not read yet, or cleared
	at   time.Time
	gen  uint64 // bumped by Invalidate: a read begun before it is not kept
}

// ChainSettingsConfig wires ChainSettings.
type ChainSettingsConfig struct {
	// Pool holds the overrides (stackbone_platform.agent_model_chains and
	// agent_turn_taking) and the activity log. Required.
	Pool *pgxpool.Pool
	// Agents are the declared agents; the map must not change afterwards.
	// Required.
	Agents map[string]config.Agent
	// Providers are the names of the configured providers, the only ones
	// an override may name (provider.Registry.Configured).
	Providers []string
	// TurnTaking resolves the turn-taking a call of an agent uses, each
	// default filled in (voice.TurnTakingOf); nil: TurnTakingView shows
	// only the origins.
	TurnTaking func(config.Agent) TurnTaking
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// NewChainSettings returns the chain overrides of cfg.Agents.
func NewChainSettings(cfg ChainSettingsConfig) *ChainSettings {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	providers := slices.Clone(cfg.Providers)
	slices.Sort(providers)
	return &ChainSettings{pool: cfg.Pool, agents: cfg.Agents, providers: providers,
		resolve: cfg.TurnTaking, log: cfg.Logger.With("component", "agent.chains")}
}

// ChainOverrides are the stored Studio chains of one agent; nil is not
// overridden.
type ChainOverrides struct {
	Model []string `json:"model"`
	STT   []string `json:"stt"`
	TTS   []string `json:"tts"`
}

// Chains are the chains in force, each in the order tried. Model is empty
// for an agent that names none.
type Chains struct {
	Model []string `json:"model"`
	STT   []string `json:"stt"`
	TTS   []string `json:"tts"`
}

// ChainOrigins says where each chain in force comes from: studio, code or
// default.
type ChainOrigins struct {
	Model string `json:"model"`
	STT   string `json:"stt"`
	TTS   string `json:"tts"`
}

// ChainsView is the chains contract of one agent.
type ChainsView struct {
	AgentID   string         `json:"agentId"`
	Overrides ChainOverrides `json:"overrides"`
	Value     Chains         `json:"value"`
	Origins   ChainOrigins   `json:"origins"`
	// Providers are the configured providers an override may name.
	Providers []string `json:"providers"`
	// UpdatedAt and UpdatedBy tell the latest change of an override, nil
	// when the agent has none.
	UpdatedAt *time.Time `json:"updatedAt"`
	UpdatedBy *string    `json:"updatedBy"`
}

// ChainsPatch sets some chains; nil ones stay as they are.
type ChainsPatch struct {
	Model []string
	STT   []string
	TTS   []string
}

// stored is an agent's row of the chains table, and its turn-taking.
type stored struct {
	ChainOverrides
	at   time.Time
	by   string
	turn turnStored
}

// Agent returns the agent name declares with its chains and turn-taking
// in force: the config's agent whose Model, Voice.STT, Voice.TTS and
// turn-taking settings are replaced by Studio's overrides. The config is
// not changed (Voice is copied). It
// reads the database only when this box's cache is cold, so a turn pays no
// round trip for it. Errors: ErrUnknownAgent, ErrStorage.
func (s *ChainSettings) Agent(ctx context.Context, name string) (config.Agent, error) {
	if err := s.known(name); err != nil {
		return config.Agent{}, err
	}
	ag := s.agents[name]
	rows, err := s.cached(ctx)
	if err != nil {
		return config.Agent{}, err
	}
	ov := rows[name].ChainOverrides
	ov.Model, ov.STT, ov.TTS = s.usable(ov.Model), s.usable(ov.STT), s.usable(ov.TTS)
	ag, _ = s.turnTaking(name, withChains(ag, ov), rows[name].turn)
	return ag, nil
}

// known is ErrUnknownAgent unless the config declares name.
func (s *ChainSettings) known(name string) error {
	if _, ok := s.agents[name]; !ok {
		return fmt.Errorf("%w: %q", ErrUnknownAgent, clip(name, 64))
	}
	return nil
}

// usable is an override's chain without the entries whose provider is no
// longer configured (the config changed since it was saved); nil, so the
// config's chain applies, when none is left.
func (s *ChainSettings) usable(ids []string) []string {
	var out []string
	for _, id := range ids {
		if p, _, err := config.SplitModel(id); id == config.Espeak || (err == nil && slices.Contains(s.providers, p)) {
			out = append(out, id)
		}
	}
	return out
}

// withChains is ag with the chains ov overrides.
func withChains(ag config.Agent, ov ChainOverrides) config.Agent {
	if ov.Model != nil {
		ag.Model = slices.Clone(ov.Model)
	}
	if ov.STT != nil || ov.TTS != nil {
		v := config.AgentVoice{}
		if ag.Voice != nil {
			v = *ag.Voice
		}
		if ov.STT != nil {
			v.STT = slices.Clone(ov.STT)
		}
		if ov.TTS != nil {
			v.TTS = slices.Clone(ov.TTS)
		}
		ag.Voice = &v
	}
	return ag
}

// Get returns the chains of a declared agent, or ErrUnknownAgent or
// ErrStorage.
func (s *ChainSettings) Get(ctx context.Context, name string) (ChainsView, error) {
	if err := s.known(name); err != nil {
		return ChainsView{}, err
	}
	rows, err := s.cached(ctx)
	if err != nil {
		return ChainsView{}, err
	}
	return s.view(name, rows[name]), nil
}

// Put saves the chains p sets, each checked first (ValidateChain); the
// change and the fields it touched go to the activity log. Errors:
// ErrUnknownAgent, ErrInvalidRequest (nothing saved), ErrStorage.
func (s *ChainSettings) Put(ctx context.Context, actor, name string, p ChainsPatch) (ChainsView, error) {
	if err := s.known(name); err != nil {
		return ChainsView{}, err
	}
	var fields []string
	for _, c := range []struct {
		field string
		ids   []string
	}{{ChainModel, p.Model}, {ChainSTT, p.STT}, {ChainTTS, p.TTS}} {
		if c.ids == nil {
			continue
		}
		if err := s.ValidateChain(c.field, c.ids); err != nil {
			return ChainsView{}, err
		}
		fields = append(fields, c.field)
	}
	if len(fields) == 0 {
		return ChainsView{}, fmt.Errorf("%w: nothing to save: send model, stt or tts, each a list of provider/model ids", ErrInvalidRequest)
	}
	return s.change(ctx, name, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO stackbone_platform.agent_model_chains AS c (agent_id, model, stt, tts, updated_by)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (agent_id) DO UPDATE SET
			  model = coalesce($2, c.model), stt = coalesce($3, c.stt), tts = coalesce($4, c.tts),
			  updated_at = now(), updated_by = $5`,
			name, p.Model, p.STT, p.TTS, actor); err != nil {
			return storageErr("save chains", err)
		}
		return logActivity(ctx, tx, actor, "agent.models.saved", name, fields)
	})
}

// Reset removes the override of one chain (field model, stt or tts) or,
// with field "", all of them, so the config's chains apply again. Errors:
// ErrUnknownAgent, ErrInvalidRequest, ErrStorage.
func (s *ChainSettings) Reset(ctx context.Context, actor, name, field string) (ChainsView, error) {
	if err := s.known(name); err != nil {
		return ChainsView{}, err
	}
	fields := []string{ChainModel, ChainSTT, ChainTTS}
	clearOne := ""
	switch field {
	case "":
	case ChainModel, ChainSTT, ChainTTS:
		fields = []string{field}
		// The column is one of the three constants above.
		clearOne = fmt.Sprintf(`UPDATE stackbone_platform.agent_model_chains SET %s = NULL, updated_at = now(), updated_by = $2
			WHERE agent_id = $1`, field)
	default:
		return ChainsView{}, fmt.Errorf("%w: field must be model, stt or tts", ErrInvalidRequest)
	}
	return s.change(ctx, name, func(tx pgx.Tx) error {
		if clearOne != "" {
			if _, err := tx.Exec(ctx, clearOne, name, actor); err != nil {
				return storageErr("reset chains", err)
			}
		}
		// Everything, or a row left with no override.
		if _, err := tx.Exec(ctx, `DELETE FROM stackbone_platform.agent_model_chains WHERE agent_id = $1
			AND ($2 OR (model IS NULL AND stt IS NULL AND tts IS NULL))`, name, field == ""); err != nil {
			return storageErr("reset chains", err)
		}
		return logActivity(ctx, tx, actor, "agent.models.reset", name, fields)
	})
}

// change runs write in a transaction, tells every box, and returns the
// agent's chains as committed.
func (s *ChainSettings) change(ctx context.Context, name string, write func(pgx.Tx) error) (ChainsView, error) {
	row, err := s.commit(ctx, name, write)
	if err != nil {
		return ChainsView{}, err
	}
	return s.view(name, row), nil
}

// commit runs write in a transaction, tells every box, and returns the
// agent's overrides as committed.
func (s *ChainSettings) commit(ctx context.Context, name string, write func(pgx.Tx) error) (stored, error) {
	var row stored
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := write(tx); err != nil {
			return err
		}
		// Sent on commit, to every box (this one included).
		if err := notify.Send(ctx, tx, NotifyChains, name); err != nil {
			return storageErr("notify", err)
		}
		r, err := readChains(ctx, tx, name)
		if err != nil {
			return err
		}
		r.turn, err = readTurns(ctx, tx, name)
		row = r
		return err
	})
	if err != nil {
		if !errors.Is(err, ErrStorage) && !errors.Is(err, ErrInvalidRequest) {
			err = storageErr("commit chains", err)
		}
		return stored{}, err
	}
	// This box sees its own change at once, without waiting for the
	// notification.
	s.Invalidate("")
	return row, nil
}

// logActivity records a change of name's chains in the operator activity
// log, which memory keeps.
func logActivity(ctx context.Context, tx pgx.Tx, actor, action, name string, fields []string) error {
	if err := memory.LogActivity(ctx, tx, actor, action, "agent:"+name, fields); err != nil {
		return storageErr("activity log", err)
	}
	return nil
}

// Invalidate drops the cached overrides of chains and turn-taking (the
// notify subscriber of "chains"; the detail, an agent's name, does not matter: the table is
// cached whole).
func (s *ChainSettings) Invalidate(string) {
	s.mu.Lock()
	s.rows = nil
	s.gen++
	s.mu.Unlock()
}

// cached returns every agent's stored overrides, reading the table when
// the cache is cold or older than chainsTTL.
func (s *ChainSettings) cached(ctx context.Context) (map[string]stored, error) {
	fresh := func() (map[string]stored, uint64, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.rows, s.gen, s.rows != nil && time.Since(s.at) < chainsTTL
	}
	if rows, _, ok := fresh(); ok {
		return rows, nil
	}
	// One reader at a time: the turns that found the cache cold meanwhile
	// take what it read.
	s.load.Lock()
	defer s.load.Unlock()
	rows, gen, ok := fresh()
	if ok {
		return rows, nil
	}
	rows, err := readAllChains(ctx, s.pool)
	if err != nil {
		return nil, err
	}
	s.warnLeftOut(rows)
	s.mu.Lock()
	if s.gen == gen {
		s.rows, s.at = rows, time.Now()
	}
	s.mu.Unlock()
	return rows, nil
}

func readAllChains(ctx context.Context, pool *pgxpool.Pool) (map[string]stored, error) {
	rows, err := pool.Query(ctx, `SELECT agent_id, model, stt, tts, updated_at, updated_by FROM stackbone_platform.agent_model_chains`)
	if err != nil {
		return nil, storageErr("read chains", err)
	}
	out := map[string]stored{}
	for rows.Next() {
		var name string
		var r stored
		if err := rows.Scan(&name, &r.Model, &r.STT, &r.TTS, &r.at, &r.by); err != nil {
			rows.Close()
			return nil, storageErr("read chains", err)
		}
		out[name] = r
	}
	if err := rows.Err(); err != nil {
		return nil, storageErr("read chains", err)
	}
	if err := readAllTurns(ctx, pool, out); err != nil {
		return nil, err
	}
	return out, nil
}

func readChains(ctx context.Context, tx pgx.Tx, name string) (stored, error) {
	var r stored
	err := tx.QueryRow(ctx, `SELECT model, stt, tts, updated_at, updated_by FROM stackbone_platform.agent_model_chains
		WHERE agent_id = $1`, name).Scan(&r.Model, &r.STT, &r.TTS, &r.at, &r.by)
	if errors.Is(err, pgx.ErrNoRows) {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, storageErr("read chains", err)
	}
	return r, nil
}

func (s *ChainSettings) view(name string, r stored) ChainsView {
	return resolveChains(name, s.agents[name], r, s.providers)
}

// resolveChains resolves one agent's chains: studio over code over
// default.
func resolveChains(name string, ag config.Agent, r stored, providers []string) ChainsView {
	v := ChainsView{AgentID: name, Overrides: r.ChainOverrides, Providers: providers,
		Value:   Chains{Model: []string{}, STT: []string{config.DefaultSTT}, TTS: []string{config.DefaultTTS}},
		Origins: ChainOrigins{Model: OriginDefault, STT: OriginDefault, TTS: OriginDefault}}
	if v.Providers == nil {
		v.Providers = []string{}
	}
	if len(ag.Model) > 0 {
		v.Value.Model, v.Origins.Model = slices.Clone(ag.Model), OriginCode
	}
	if vc := ag.Voice; vc != nil {
		if len(vc.STT) > 0 {
			v.Value.STT, v.Origins.STT = slices.Clone(vc.STT), OriginCode
		}
		if len(vc.TTS) > 0 {
			v.Value.TTS, v.Origins.TTS = slices.Clone(vc.TTS), OriginCode
		}
	}
	if r.Model != nil {
		v.Value.Model, v.Origins.Model = slices.Clone(r.Model), OriginStudio
	}
	if r.STT != nil {
		v.Value.STT, v.Origins.STT = slices.Clone(r.STT), OriginStudio
	}
	if r.TTS != nil {
		v.Value.TTS, v.Origins.TTS = slices.Clone(r.TTS), OriginStudio
	}
	if r.by != "" {
		at, by := r.at.UTC(), r.by
		v.UpdatedAt, v.UpdatedBy = &at, &by
	}
	return v
}

// ValidateChain checks a chain an operator sets for field (model, stt or
// tts): 1 to MaxChainEntries entries, each a provider/model id of a
// configured provider without spaces or commas ("espeak", the offline
// voice, in tts only), none twice. The error, an ErrInvalidRequest, names
// the field and the entry.
func (s *ChainSettings) ValidateChain(field string, ids []string) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidRequest, field, fmt.Sprintf(format, args...))
	}
	if len(ids) < 1 || len(ids) > MaxChainEntries {
		return bad("list 1 to %d entries, the first tried first (got %d); DELETE ?field=%s goes back to the config's chain",
			MaxChainEntries, len(ids), field)
	}
	for i, id := range ids {
		entry := fmt.Sprintf("entry %d %q", i+1, clip(id, 80))
		if id == config.Espeak {
			if field != ChainTTS {
				return bad("%s: espeak is a text-to-speech engine; only tts may name it", entry)
			}
		} else {
			p, _, err := config.SplitModel(id)
			if err != nil || strings.ContainsFunc(id, func(r rune) bool { return r == ',' || unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
				also := ""
				if field == ChainTTS {
					also = " or espeak"
				}
				return bad("%s is not a provider/model id (such as openai/gpt-4o-mini)%s", entry, also)
			}
			if !slices.Contains(s.providers, p) {
				known := "none is"
				if len(s.providers) > 0 {
					known = strings.Join(s.providers, ", ")
				}
				return bad("%s: no provider %q is configured (configured: %s)", entry, p, known)
			}
		}
		if slices.Contains(ids[:i], id) {
			return bad("%s is listed twice", entry)
		}
	}
	return nil
}
