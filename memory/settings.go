package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/postgres/notify"
)

// Origins of an effective setting.
const (
	OriginStudio  = "studio"
	OriginCode    = "code"
	OriginDefault = "default"
)

// Fields of the per-agent settings that Studio can override.
const (
	FieldRead         = "read"
	FieldSave         = "save"
	FieldInstructions = "instructions"
)

// Settings holds the per-agent memory settings: Studio overrides stored in the
// database over the agent's declaration in config ("code") over the platform
// defaults, and the agent's fixed identity key.
//
// What Get reads is cached per agent for at most settingsTTL: every turn and
// call reads it, and a save or reset clears the cache of this box at once and
// of the others through notify (topic "settings").
type Settings struct {
	pool   *pgxpool.Pool
	agents map[string]*config.AgentMemory
	log    *slog.Logger

	mu    sync.Mutex
	cache map[string]cachedSettings
}

type cachedSettings struct {
	ov Overrides
	b  *Binding
	at time.Time
}

const settingsTTL = 30 * time.Second

// Invalidate drops the cached settings of agentID, or of every agent when
// agentID is "" (the notify subscriber of "settings").
func (s *Settings) Invalidate(agentID string) {
	s.mu.Lock()
	if agentID == "" {
		clear(s.cache)
	} else {
		delete(s.cache, agentID)
	}
	s.mu.Unlock()
}

func (s *Settings) changed(ctx context.Context, agentID string) {
	s.Invalidate(agentID)
	_ = notify.Send(ctx, s.pool, "settings", agentID)
}

// NewSettings returns Settings for the declared agents (a nil value is an
// agent that declares no memory block). The map must not change afterwards.
func NewSettings(pool *pgxpool.Pool, agents map[string]*config.AgentMemory, logger *slog.Logger) *Settings {
	if logger == nil {
		logger = slog.Default()
	}
	return &Settings{pool: pool, agents: agents, log: logger.With("component", "memory.settings"), cache: map[string]cachedSettings{}}
}

// AgentsFromConfig extracts the memory declarations of cfg's agents.
func AgentsFromConfig(cfg *config.Config) map[string]*config.AgentMemory {
	out := make(map[string]*config.AgentMemory, len(cfg.Agents))
	for name, a := range cfg.Agents {
		out[name] = a.Memory
	}
	return out
}

// Overrides are the stored Studio fields; nil is not overridden.
type Overrides struct {
	Read         *bool   `json:"read,omitempty"`
	Save         *bool   `json:"save,omitempty"`
	Instructions *string `json:"instructions,omitempty"`
}

// Value is the effective setting. Instructions nil means the generic policy;
// IdentityKey nil means the agent has no fixed key and runs without memory.
type Value struct {
	Read         bool    `json:"read"`
	Save         bool    `json:"save"`
	Instructions *string `json:"instructions"`
	IdentityKey  *string `json:"identityKey"`
}

// Origins says where each effective field came from.
type Origins struct {
	Read         string `json:"read"`
	Save         string `json:"save"`
	Instructions string `json:"instructions"`
}

// Binding is an agent's fixed identity key.
type Binding struct {
	IdentityKey string    `json:"identityKey"`
	Source      string    `json:"source"`
	FixedAt     time.Time `json:"fixedAt"`
}

// View is the settings contract of one agent.
type View struct {
	AgentID   string    `json:"agentId"`
	Overrides Overrides `json:"overrides"`
	Value     Value     `json:"value"`
	Origins   Origins   `json:"origins"`
	Binding   *Binding  `json:"binding"`
}

// Patch changes some fields; nil fields stay unchanged.
type Patch struct {
	Read         *bool
	Save         *bool
	Instructions *string
	IdentityKey  *string
}

// Get returns the settings of a declared agent, or ErrUnknownAgent.
func (s *Settings) Get(ctx context.Context, agentID string) (View, error) {
	decl, ok := s.agents[agentID]
	if !ok {
		return View{}, fmt.Errorf("%w: %q", ErrUnknownAgent, clip(agentID, 64))
	}
	s.mu.Lock()
	c, ok := s.cache[agentID]
	s.mu.Unlock()
	if ok && time.Since(c.at) < settingsTTL {
		return resolve(agentID, decl, c.ov, c.b), nil
	}
	ov, b, err := s.read(ctx, s.pool, agentID)
	if err != nil {
		return View{}, err
	}
	s.mu.Lock()
	s.cache[agentID] = cachedSettings{ov: ov, b: b, at: time.Now()}
	s.mu.Unlock()
	return resolve(agentID, decl, ov, b), nil
}

// Put saves the fields of p. identityKey fixes the key the first time and
// must equal it afterwards (ErrIdentityKeyFixed, nothing saved). It returns
// ErrUnknownAgent or ErrInvalidRequest as well.
func (s *Settings) Put(ctx context.Context, actor, agentID string, p Patch) (View, error) {
	decl, ok := s.agents[agentID]
	if !ok {
		return View{}, fmt.Errorf("%w: %q", ErrUnknownAgent, clip(agentID, 64))
	}
	var fields []string
	if p.Read != nil {
		fields = append(fields, FieldRead)
	}
	if p.Save != nil {
		fields = append(fields, FieldSave)
	}
	if p.Instructions != nil {
		fields = append(fields, FieldInstructions)
		if n := utf8.RuneCountInString(*p.Instructions); n < 1 || n > MaxInstructionsChars || strings.TrimSpace(*p.Instructions) == "" || strings.ContainsRune(*p.Instructions, 0) {
			return View{}, invalid("instructions must be 1 to %d characters", MaxInstructionsChars)
		}
	}
	if p.IdentityKey != nil {
		fields = append(fields, "identityKey")
		if err := config.ValidateIdentityKey(*p.IdentityKey); err != nil {
			return View{}, invalid("identityKey %v", err)
		}
	}
	if len(fields) == 0 {
		return View{}, invalid("nothing to save: send read, save, instructions or identityKey")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return View{}, dbError(ErrUnavailable, "begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if p.IdentityKey != nil {
		if err := fixIdentityKey(ctx, tx, agentID, *p.IdentityKey, OriginStudio); err != nil {
			return View{}, err
		}
	}
	if p.Read != nil || p.Save != nil || p.Instructions != nil {
		_, err := tx.Exec(ctx, `
			INSERT INTO stackbone_platform.agent_memory_settings AS s (agent_id, read, save, instructions)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (agent_id) DO UPDATE SET
			  read = coalesce($2, s.read), save = coalesce($3, s.save),
			  instructions = coalesce($4, s.instructions), updated_at = now()`,
			agentID, p.Read, p.Save, p.Instructions)
		if err != nil {
			return View{}, dbError(ErrUnavailable, "save settings", err)
		}
	}
	if err := logActivity(ctx, tx, actor, "memory.settings.saved", "agent:"+agentID, fields); err != nil {
		return View{}, err
	}
	ov, b, err := s.read(ctx, tx, agentID)
	if err != nil {
		return View{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return View{}, dbError(ErrUnavailable, "commit", err)
	}
	s.changed(ctx, agentID)
	return resolve(agentID, decl, ov, b), nil
}

// Reset removes one override (field read, save or instructions) or, with
// field "", all of them, so the current config shows again. The identity key
// stays fixed. It returns ErrUnknownAgent or ErrInvalidRequest.
func (s *Settings) Reset(ctx context.Context, actor, agentID, field string) (View, error) {
	decl, ok := s.agents[agentID]
	if !ok {
		return View{}, fmt.Errorf("%w: %q", ErrUnknownAgent, clip(agentID, 64))
	}
	var q string
	fields := []string{FieldRead, FieldSave, FieldInstructions}
	switch field {
	case "":
		q = `DELETE FROM stackbone_platform.agent_memory_settings WHERE agent_id = $1`
	case FieldRead, FieldSave, FieldInstructions:
		q = fmt.Sprintf(`UPDATE stackbone_platform.agent_memory_settings SET %s = NULL, updated_at = now() WHERE agent_id = $1`, field)
		fields = []string{field}
	default:
		return View{}, invalid("field must be read, save or instructions")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return View{}, dbError(ErrUnavailable, "begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, q, agentID); err != nil {
		return View{}, dbError(ErrUnavailable, "reset settings", err)
	}
	if err := logActivity(ctx, tx, actor, "memory.settings.reset", "agent:"+agentID, fields); err != nil {
		return View{}, err
	}
	ov, b, err := s.read(ctx, tx, agentID)
	if err != nil {
		return View{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return View{}, dbError(ErrUnavailable, "commit", err)
	}
	s.changed(ctx, agentID)
	return resolve(agentID, decl, ov, b), nil
}

// FixDeclaredKeys fixes the identity key of every agent whose config declares
// one and has none fixed yet. A declaration that differs from an already
// fixed key is reported and ignored: the fixed key wins for good.
func (s *Settings) FixDeclaredKeys(ctx context.Context) error {
	for agentID, decl := range s.agents {
		if decl == nil || decl.IdentityKey == "" {
			continue
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			return fixIdentityKey(ctx, tx, agentID, decl.IdentityKey, OriginCode)
		})
		if errors.Is(err, ErrIdentityKeyFixed) {
			s.log.Warn("agent declares a different identity key than the one fixed; keeping the fixed key", "agent", agentID)
			continue
		}
		if err != nil {
			return err
		}
	}
	s.changed(ctx, "")
	return nil
}

// fixIdentityKey records key as the agent's identity key unless one is
// fixed; an equal key is fine, a different one is ErrIdentityKeyFixed.
func fixIdentityKey(ctx context.Context, tx pgx.Tx, agentID, key, source string) error {
	var fixed string
	err := tx.QueryRow(ctx, `
		WITH ins AS (
		  INSERT INTO stackbone_platform.agent_identity_bindings (agent_id, identity_key, source)
		  VALUES ($1, $2, $3) ON CONFLICT (agent_id) DO NOTHING RETURNING identity_key)
		SELECT identity_key FROM ins
		UNION ALL
		SELECT identity_key FROM stackbone_platform.agent_identity_bindings WHERE agent_id = $1
		LIMIT 1`, agentID, key, source).Scan(&fixed)
	if errors.Is(err, pgx.ErrNoRows) {
		// A concurrent transaction fixed the key after this statement's
		// snapshot was taken; read what it wrote.
		err = tx.QueryRow(ctx, `SELECT identity_key FROM stackbone_platform.agent_identity_bindings WHERE agent_id = $1`, agentID).Scan(&fixed)
	}
	if err != nil {
		return dbError(ErrUnavailable, "fix identity key", err)
	}
	if fixed != key {
		return fmt.Errorf("%w: agent %s already uses identity key %q", ErrIdentityKeyFixed, agentID, fixed)
	}
	return nil
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func (s *Settings) read(ctx context.Context, q queryRower, agentID string) (Overrides, *Binding, error) {
	var ov Overrides
	var key, source *string
	var fixedAt *time.Time
	err := q.QueryRow(ctx, `
		SELECT s.read, s.save, s.instructions, b.identity_key, b.source, b.fixed_at
		FROM (SELECT $1::text AS agent_id) a
		LEFT JOIN stackbone_platform.agent_memory_settings s ON s.agent_id = a.agent_id
		LEFT JOIN stackbone_platform.agent_identity_bindings b ON b.agent_id = a.agent_id`, agentID).
		Scan(&ov.Read, &ov.Save, &ov.Instructions, &key, &source, &fixedAt)
	if err != nil {
		return Overrides{}, nil, dbError(ErrUnavailable, "read settings", err)
	}
	var b *Binding
	if key != nil {
		b = &Binding{IdentityKey: *key, Source: *source, FixedAt: fixedAt.UTC()}
	}
	return ov, b, nil
}

func resolve(agentID string, decl *config.AgentMemory, ov Overrides, b *Binding) View {
	v := View{AgentID: agentID, Overrides: ov, Binding: b,
		Origins: Origins{Read: OriginDefault, Save: OriginDefault, Instructions: OriginDefault}}
	if decl != nil {
		if decl.Read != nil {
			v.Value.Read, v.Origins.Read = *decl.Read, OriginCode
		}
		if decl.Save != nil {
			v.Value.Save, v.Origins.Save = *decl.Save, OriginCode
		}
		if decl.Instructions != nil {
			v.Value.Instructions, v.Origins.Instructions = decl.Instructions, OriginCode
		}
	}
	if ov.Read != nil {
		v.Value.Read, v.Origins.Read = *ov.Read, OriginStudio
	}
	if ov.Save != nil {
		v.Value.Save, v.Origins.Save = *ov.Save, OriginStudio
	}
	if ov.Instructions != nil {
		v.Value.Instructions, v.Origins.Instructions = ov.Instructions, OriginStudio
	}
	if b != nil {
		k := b.IdentityKey
		v.Value.IdentityKey = &k
	}
	return v
}
