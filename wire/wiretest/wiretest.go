// Package wiretest builds a whole box for the text wires' tests: its own
// PostgreSQL database, the scripted model behind it, the agent runtime, API
// keys and the API server, with one wire mounted and served over HTTP.
//
//	b := wiretest.New(t, agentsYAML, openaiwire.Register)
//	resp, err := http.Post(b.URL+"/openai/v1/chat/completions", ...)
package wiretest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/tools"
	"github.com/stackbone/box/wire"
)

// Key holds every scope.
const Key = "test-key"

// Box is one box under test.
type Box struct {
	URL     string
	Model   *providertest.Server
	Pool    *pgxpool.Pool
	Keys    *auth.Store
	Runtime *agent.Runtime
	Tools   *tools.Service
}

// Option changes how New builds the box.
type Option func(*options)

type options struct {
	env  map[string]string
	logs io.Writer
}

// Env is the environment the agents' http and mcp tools read their
// secrets from (instead of the process's).
func Env(env map[string]string) Option { return func(o *options) { o.env = env } }

// LogTo copies the box's logs, at every level, to w as JSON lines.
func LogTo(w io.Writer) Option { return func(o *options) { o.logs = w } }

// New starts a box with the agents of agentsYAML and the wire register
// mounts; the YAML may set http.streamKeepAlive as well. The extraction
// model is openai/extractor on the scripted server. The agents' http and
// mcp tools are served (see package tools).
func New(t *testing.T, agentsYAML string, register func(wire.Mux, wire.Config), opts ...Option) *Box {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx := t.Context()
	pool := pgtest.Pool(t)
	model := providertest.New(t)
	log := pgtest.Logger(t)
	if o.logs != nil {
		log = slog.New(teeHandler{log.Handler(), slog.NewJSONHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug})})
	}
	cfg, err := config.Parse([]byte(agentsYAML))
	if err != nil {
		t.Fatal(err)
	}
	// The scripted model is the provider "openai"; the YAML may set its
	// other settings (timeouts).
	p := cfg.Providers["openai"]
	p.BaseURL = model.URL()
	cfg.Providers = map[string]config.Provider{"openai": p}
	reg := provider.NewRegistry(cfg.Providers, nil)
	mem := memory.NewService(memory.Config{Pool: pool, Models: reg, Logger: log, FallbackModel: "openai/extractor"})
	settings := memory.NewSettings(pool, memory.AgentsFromConfig(cfg), log)
	if err := settings.FixDeclaredKeys(ctx); err != nil {
		t.Fatal(err)
	}
	getenv := os.Getenv
	if o.env != nil {
		getenv = func(k string) string { return o.env[k] }
	}
	actions, err := tools.New(tools.Config{Agents: cfg.Agents, Logger: log, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	actions.Start(ctx)
	t.Cleanup(func() { _ = actions.Close() })
	rt := agent.New(agent.Config{Pool: pool, Agents: cfg.Agents, Models: reg, Memory: mem, Settings: settings, Logger: log,
		Tools: actions.Tools()})
	keys := auth.NewStore(pool)
	if err := keys.Ensure(ctx, "test", Key, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{Pool: pool, Keys: keys, Logger: log})
	memory.Register(srv, mem, settings, pool)
	agent.Register(srv, rt, cfg)
	runs.NewStore(pool).Register(srv)
	register(srv, wire.Config{Runtime: rt, Guard: srv.Guard, Logger: log, KeepAlive: cfg.HTTP.StreamKeepAlive})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &Box{URL: hs.URL, Model: model, Pool: pool, Keys: keys, Runtime: rt, Tools: actions}
}

// teeHandler sends each record to two handlers.
type teeHandler struct{ a, b slog.Handler }

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.a.Enabled(ctx, l) || h.b.Enabled(ctx, l)
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.a.Enabled(ctx, r.Level) {
		_ = h.a.Handle(ctx, r.Clone())
	}
	return h.b.Handle(ctx, r)
}

func (h teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{h.a.WithAttrs(as), h.b.WithAttrs(as)}
}

func (h teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{h.a.WithGroup(name), h.b.WithGroup(name)}
}

// RunStatus is the status of a run, "" while it is not recorded.
func (b *Box) RunStatus(t testing.TB, id string) string {
	t.Helper()
	var status string
	err := b.Pool.QueryRow(t.Context(), `SELECT status FROM stackbone_platform.runs WHERE id::text = $1`, id).Scan(&status)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return status
}

// SessionIdle reports whether no turn runs on any session of the box.
func (b *Box) SessionIdle(t testing.TB) bool {
	t.Helper()
	var running int
	if err := b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM stackbone_platform.sessions WHERE status = 'running'`).Scan(&running); err != nil {
		t.Fatal(err)
	}
	return running == 0
}
