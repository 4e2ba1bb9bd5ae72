package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/telemetry"
)

// Models resolves provider/model ids. *provider.Registry implements it.
type Models interface {
	Resolve(id string) (provider.Model, error)
}

// Config wires a Runtime.
type Config struct {
	// Pool holds run history, sessions and checkpoints. Required.
	Pool *pgxpool.Pool
	// Agents are the declared agents. Required.
	Agents map[string]config.Agent
	// Models resolves each agent's model. Required.
	Models Models
	// Memory and Settings give turns the person-memory tools. Required.
	Memory   *memory.Service
	Settings *memory.Settings
	// Tools gives each agent's declared server tools (nil: none beyond memory).
	Tools ToolSource
	// Chains holds Studio's overrides of the agents' provider chains and
	// turn-taking (nil: the config's).
	Chains *ChainSettings
	// Logger receives ids, codes and timings, never message text.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// MaxSteps bounds model calls in one turn's tool loop. Defaults to 8.
	MaxSteps int
	// ModelTimeout bounds one turn. Defaults to 5 minutes.
	ModelTimeout time.Duration
	// Runs writes the runs of turns without a session by group commit
	// (see runs.Writer). Nil: each in its own round trip.
	Runs *runs.Writer
	// Metrics records each finished turn by wire and finish (nil: none).
	Metrics *telemetry.Metrics
	// SessionLease is how long a running turn holds its session without a
	// heartbeat from its box (default 15 s): a turn whose box died frees
	// the session this long after the box's last heartbeat.
	SessionLease time.Duration
}

// Runtime runs turns. It is safe for concurrent use.
type Runtime struct {
	cfg     Config
	log     *slog.Logger
	leases  sessionLeases
	history historyCache
}

// New returns a Runtime.
func New(cfg Config) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = 8
	}
	if cfg.ModelTimeout == 0 {
		cfg.ModelTimeout = 5 * time.Minute
	}
	if cfg.SessionLease == 0 {
		cfg.SessionLease = 15 * time.Second
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger.With("component", "agent")}
	r.leases.r = r
	r.history.max = historyCacheBytes
	return r
}

// Agent returns the declared agent name with its provider chains and
// turn-taking in force (Studio's overrides over the config's, see
// ChainSettings), as the next
// turn or call uses it. Errors: ErrUnknownAgent, ErrStorage.
func (r *Runtime) Agent(ctx context.Context, name string) (config.Agent, error) {
	if r.cfg.Chains != nil {
		return r.cfg.Chains.Agent(ctx, name)
	}
	ag, ok := r.cfg.Agents[name]
	if !ok {
		return config.Agent{}, fmt.Errorf("%w: %q", ErrUnknownAgent, clip(name, 64))
	}
	return ag, nil
}

// AgentInfo describes a declared agent for model lists.
type AgentInfo struct {
	Name  string
	Model string
}

// Agents lists the declared agents by name.
func (r *Runtime) Agents() []AgentInfo {
	c := config.Config{Agents: r.cfg.Agents}
	var out []AgentInfo
	for _, n := range c.AgentNames() {
		out = append(out, AgentInfo{Name: n, Model: r.cfg.Agents[n].Model.Primary()})
	}
	return out
}
