// Package wiretest builds a whole box for the text wires' tests: its own
// PostgreSQL database, the scripted model behind it, the agent runtime, API
// keys and the API server, with one wire mounted and served over HTTP.
//
//	b := wiretest.New(t, agentsYAML, openaiwire.Register)
//	resp, err := http.Post(b.URL+"/openai/v1/chat/completions", ...)
package wiretest

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/store/storetest"
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
}

// New starts a box with the agents of agentsYAML and the wire register
// mounts; the YAML may set http.streamKeepAlive as well. The extraction model is openai/extractor on the scripted server.
func New(t *testing.T, agentsYAML string, register func(wire.Mux, wire.Config)) *Box {
	t.Helper()
	ctx := t.Context()
	pool := storetest.Pool(t)
	model := providertest.New(t)
	log := storetest.Logger(t)
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
	rt := agent.New(agent.Config{Pool: pool, Agents: cfg.Agents, Models: reg, Memory: mem, Settings: settings, Logger: log})
	keys := auth.NewStore(pool)
	if err := keys.Ensure(ctx, "test", Key, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	srv := api.New(api.Config{Pool: pool, Keys: keys, Memory: mem, Settings: settings, Runs: runs.NewStore(pool),
		Runtime: rt, Config: cfg, Logger: log})
	register(srv, wire.Config{Runtime: rt, Guard: srv.Guard, Logger: log, KeepAlive: cfg.HTTP.StreamKeepAlive})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &Box{URL: hs.URL, Model: model, Pool: pool, Keys: keys, Runtime: rt}
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
