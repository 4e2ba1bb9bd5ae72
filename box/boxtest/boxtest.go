// Package boxtest runs a whole box for a test, started as the load tools
// start one (box.StartLocal): on the test's own PostgreSQL database, the
// scripted provider as the "openai" provider, a key that holds every
// scope, served over HTTP on loopback.
// It is the one way tests outside a package's own unit tests build a box.
// Every /api answer the box gives is checked against the OpenAPI document
// (api/openapi.json): an answer the contract does not describe fails the
// test.
//
//	b := boxtest.New(t, agentsYAML)
//	resp, err := http.Post(b.URL+"/openai/v1/chat/completions", ...)
//	b.Model.ChatRequests() // what the model was sent
package boxtest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/voice"
	"github.com/stackbone/box/webhooks"
)

// Key holds every scope.
const Key = "test-key"

// Box is one box under test; the embedded box.Box reaches its parts.
type Box struct {
	*box.Box
	// URL is where its HTTP handler is served.
	URL string
	// Model is the scripted provider behind every model id "openai/...".
	Model *providertest.Server
}

// Option changes how New builds the box.
type Option func(*options)

type options struct {
	getenv func(string) string
	logs   io.Writer
	devKey string
	speech func(voice.Models) voice.SpeechFactory
	tune   func(*config.Config)
	calls  func(*voice.Config)
	hooks  func(*webhooks.Config)
	log    *slog.Logger
}

// Env is the environment the agents' http and mcp tools read their
// secrets from (instead of the process's).
func Env(env map[string]string) Option {
	return func(o *options) { o.getenv = func(k string) string { return env[k] } }
}

// LogTo copies the box's logs, at every level, to w as JSON lines.
func LogTo(w io.Writer) Option { return func(o *options) { o.logs = w } }

// DevKey is the key the call page pre-fills, as under `stackbone dev`.
func DevKey(key string) Option { return func(o *options) { o.devKey = key } }

// Speech replaces the providers' speech of the voice agents.
func Speech(f func(voice.Models) voice.SpeechFactory) Option {
	return func(o *options) { o.speech = f }
}

// Tune changes the parsed configuration before the box is built (after
// the provider and the SIP address are set).
func Tune(f func(*config.Config)) Option { return func(o *options) { o.tune = f } }

// TuneCalls adjusts the call controller's configuration (see
// box.Options.TuneCalls).
func TuneCalls(f func(*voice.Config)) Option { return func(o *options) { o.calls = f } }

// TuneWebhooks adjusts the webhooks' configuration (see
// box.Options.TuneWebhooks).
func TuneWebhooks(f func(*webhooks.Config)) Option { return func(o *options) { o.hooks = f } }

// Logger is the box's logger (default: the test's log, pgtest.Logger).
func Logger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// New builds and starts a box from configYAML (agents and any other
// settings). The scripted provider is "openai" (the YAML may set its other
// settings, such as timeouts); the extraction model defaults to
// openai/extractor; SIP listens on a free loopback port unless the YAML
// says where. The box is drained and stopped when the test ends.
func New(t testing.TB, configYAML string, opts ...Option) *Box {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx := context.Background()
	pool := pgtest.Pool(t)
	model := providertest.New(t)
	log := o.log
	if log == nil {
		log = pgtest.Logger(t)
	}
	if o.logs != nil {
		log = slog.New(teeHandler{log.Handler(), slog.NewJSONHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug})})
	}
	cfg, err := config.Parse([]byte(configYAML))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["openai"]
	p.BaseURL = model.URL()
	cfg.Providers = map[string]config.Provider{"openai": p}
	if cfg.Memory.Model == "" {
		cfg.Memory.Model = "openai/extractor"
	}
	if cfg.SIP.Addr == "" {
		cfg.SIP.Addr = "127.0.0.1:0"
	}
	if o.tune != nil {
		o.tune(cfg)
	}
	l, stop, err := box.StartLocal(ctx, cfg, box.Options{Pool: pool, Logger: log, Speech: o.speech, DevKey: o.devKey,
		DataDir: t.TempDir(), Getenv: o.getenv, TuneCalls: o.calls, TuneWebhooks: o.hooks,
		Middleware: func(h http.Handler) http.Handler { return contract(t, h) }}, "test", Key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &Box{Box: l.Box, URL: l.URL, Model: model}
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
