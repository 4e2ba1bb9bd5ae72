// Package box builds the box from a configuration: every part created and
// wired once, here, for the stackbone command, the tests and the load
// tools alike.
//
//	b, err := box.New(ctx, cfg, box.Options{Pool: pool, Logger: log})
//	stop, err := b.Start(ctx)        // leases, SIP, jobs, cache listener
//	http.Serve(ln, b.Handler())
//	b.Drain(ctx, 30*time.Second)     // no new calls; calls in progress end
//	stop()
//
// New starts nothing: no goroutine, listener or socket. Start brings up
// what runs in the background; its stop function ends it in the order a
// drain needs (calls saved before SIP, HTTP or the database go away).
package box

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/analysis"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/campaigns"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/objectstore"
	"github.com/stackbone/box/postgres/notify"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/recordings"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/stores"
	"github.com/stackbone/box/studio"
	"github.com/stackbone/box/telemetry"
	"github.com/stackbone/box/tools"
	"github.com/stackbone/box/voice"
	"github.com/stackbone/box/voice/espeak"
	"github.com/stackbone/box/webhooks"
	"github.com/stackbone/box/wire"
	aguiwire "github.com/stackbone/box/wire/aguiwire"
	anthropicwire "github.com/stackbone/box/wire/anthropicwire"
	openaiwire "github.com/stackbone/box/wire/openaiwire"
)

// Options are what a box takes besides its configuration.
type Options struct {
	// Pool is the box's database, migrated. Required.
	Pool *pgxpool.Pool
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics are the box's Prometheus series, served at /metrics (nil: a
	// new set).
	Metrics *telemetry.Metrics
	// Tracing wraps HTTP requests and provider requests in spans (only
	// when traces go somewhere: telemetry.StartTracing).
	Tracing bool
	// Speech gives the voice agents' speech from the box's models (nil: the
	// providers' speech, with the offline espeak-ng engine for voices that
	// name it).
	Speech func(voice.Models) voice.SpeechFactory
	// DevKey is the key the call page pre-fills ("" outside dev).
	DevKey string
	// DataDir holds local state: uploaded originals when the object store
	// is the filesystem.
	DataDir string
	// BoxID names this box in the calls it carries and the jobs it runs
	// (default: a new id).
	BoxID string
	// TuneCalls, when set, adjusts the call controller's configuration
	// before it is built (tests and load tools: clocks, hooks, timeouts).
	TuneCalls func(*voice.Config)
	// Getenv reads the secrets the configuration names by variable (tools'
	// ${NAME} and tokenEnv, object store keys); default os.Getenv.
	Getenv func(string) string
	// TuneWebhooks, when set, adjusts the webhooks' configuration before
	// they are built (tests: retry backoff, delivery timeout).
	TuneWebhooks func(*webhooks.Config)
	// Middleware, when set, wraps the box's HTTP handler (tests: the check
	// of every /api answer against the OpenAPI document).
	Middleware func(http.Handler) http.Handler
}

// Box is every part of one box. Fields are for the command, tests and load
// tools to reach the parts; the box owns them.
type Box struct {
	Config   *config.Config
	Pool     *pgxpool.Pool
	ID       string
	Log      *slog.Logger
	Metrics  *telemetry.Metrics
	Models   *provider.Registry
	Keys     *auth.Store
	Runs     *runs.Store
	Memory   *memory.Service
	Settings *memory.Settings
	Chains   *agent.ChainSettings
	Stores   *stores.Service
	RAG      *rag.Service
	Runtime  *agent.Runtime
	Calls    *voice.Manager
	Rooms    *rooms.Service
	Phones   *sip.Server
	Tools    *tools.Service
	Webhooks *webhooks.Service
	// Analysis analyzes calls once they ended.
	Analysis *analysis.Service
	// Recordings keeps the audio of recorded calls.
	Recordings *recordings.Service
	// Prices is the config's price table; Costs reads what calls and
	// text sessions cost.
	Prices *costs.Table
	Costs  *costs.Reports
	// Campaigns places batches of outbound calls.
	Campaigns *campaigns.Service
	API       *api.Server

	listener *notify.Listener
	handler  http.Handler
}

// New builds the box from cfg: every service created and every route
// registered. It starts nothing (see Start).
func New(ctx context.Context, cfg *config.Config, opt Options) (*Box, error) {
	if opt.Pool == nil {
		return nil, errors.New("box: a database pool is required")
	}
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	metrics := opt.Metrics
	if metrics == nil {
		metrics = telemetry.New()
	}
	if opt.BoxID == "" {
		opt.BoxID = "box_" + uuid.NewString()
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	pool := opt.Pool
	b := &Box{Config: cfg, Pool: pool, ID: opt.BoxID, Log: log, Metrics: metrics, Prices: costs.NewTable(cfg)}
	b.Costs = costs.NewReports(pool, b.Prices)

	// Provider requests are counted (and traced); each provider's
	// transport keeps its own timeouts underneath.
	b.Models = provider.NewRegistry(cfg.Providers, func(rt http.RoundTripper) http.RoundTripper {
		rt = metrics.Transport(rt)
		if opt.Tracing {
			rt = telemetry.TraceTransport(rt)
		}
		return rt
	})
	b.Keys = auth.NewStore(pool)
	b.Runs = runs.NewStore(pool)
	// Events of calls, memory and documents are recorded in the
	// transactions of their changes; River delivers them.
	whcfg := webhooks.Config{Pool: pool, Logger: log, Timeout: cfg.Webhooks.Timeout, Workers: cfg.Webhooks.Workers}
	if opt.TuneWebhooks != nil {
		opt.TuneWebhooks(&whcfg)
	}
	var err error
	b.Webhooks, err = webhooks.New(whcfg)
	if err != nil {
		return nil, err
	}
	originals, err := objectstore.Open(cfg.ObjectStore, opt.DataDir, opt.Getenv)
	if err != nil {
		return nil, err
	}
	spool := ""
	if opt.DataDir != "" {
		spool = filepath.Join(opt.DataDir, "spool", "recordings")
	}
	b.Recordings, err = recordings.New(recordings.Config{Pool: pool, Store: originals, SpoolDir: spool, Logger: log})
	if err != nil {
		return nil, err
	}
	b.Memory = memory.NewService(memory.Config{
		Pool: pool, Models: b.Models, Logger: log, Metrics: metrics, Events: b.Webhooks,
		FallbackModel: cfg.Memory.Model, FallbackReasoningEffort: cfg.Memory.ReasoningEffort,
		Erase: func(ctx context.Context, tx pgx.Tx, agentID, userID string) error {
			if err := errors.Join(b.Recordings.EraseTx(ctx, tx, agentID, userID), campaigns.EraseTx(ctx, tx, agentID, userID)); err != nil {
				return err
			}
			calls, err := b.Calls.EraseTx(ctx, tx, agentID, userID)
			if err != nil {
				return err
			}
			return b.Webhooks.EraseCallsTx(ctx, tx, calls)
		},
	})
	b.Settings = memory.NewSettings(pool, memory.AgentsFromConfig(cfg), log)
	if err := b.Settings.FixDeclaredKeys(ctx); err != nil {
		return nil, err
	}
	b.Stores = stores.New(stores.Config{Pool: pool, Agents: cfg.Agents, Models: b.Models, Logger: log})
	if err := b.Stores.Sync(ctx); err != nil {
		return nil, err
	}
	b.RAG, err = rag.New(rag.Config{Metrics: metrics, Pool: pool, Models: b.Models, Store: originals, Runs: b.Runs, Logger: log, Hybrid: cfg.RAG.Hybrid, Events: b.Webhooks})
	if err != nil {
		return nil, err
	}
	// Caches of keys and settings are cleared across boxes by LISTEN/NOTIFY
	// (Start runs the listener).
	b.listener = notify.New(pool, log)
	b.listener.Subscribe("auth", b.Keys.Invalidate)
	b.listener.Subscribe("settings", b.Settings.Invalidate)
	b.Chains = agent.NewChainSettings(agent.ChainSettingsConfig{Pool: pool, Agents: cfg.Agents, Providers: b.Models.Configured(),
		TurnTaking: voice.TurnTakingOf(voice.VADConfig{}), Logger: log})
	b.listener.Subscribe(agent.NotifyChains, b.Chains.Invalidate)
	b.Stores.Subscribe(b.listener)
	b.Webhooks.Subscribe(b.listener)
	// HTTP and MCP tools (Start lists the MCP servers; one that is down
	// does not stop the box: its tools are left out until it is back).
	b.Tools, err = tools.New(tools.Config{Agents: cfg.Agents, Logger: log, Getenv: opt.Getenv})
	if err != nil {
		return nil, err
	}
	b.Runtime = agent.New(agent.Config{Metrics: metrics, Pool: pool, Agents: cfg.Agents, Models: b.Models, Memory: b.Memory,
		Settings: b.Settings, Chains: b.Chains, Logger: log, Runs: runs.NewWriter(pool), Tools: agent.Sources(b.Stores.Tools(), b.RAG.Tools(cfg.Agents), b.Tools.Tools())})
	b.Analysis, err = analysis.New(analysis.Config{Pool: pool, Agents: cfg.Agents, Runtime: b.Runtime, Events: b.Webhooks, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := b.newCalls(cfg, opt); err != nil {
		return nil, err
	}
	b.handler = b.routes(cfg, opt)
	return b, nil
}

// newCalls makes the call controller and the transports that carry its
// calls: browser rooms and SIP.
func (b *Box) newCalls(cfg *config.Config, opt Options) error {
	pool, log, metrics := b.Pool, b.Log, b.Metrics
	var err error
	speech := voice.ProviderSpeech(b.Models, func(v string) (voice.Synthesizer, error) { return espeak.Open(v) })
	if opt.Speech != nil {
		speech = opt.Speech(b.Models)
	}
	vcfg := voice.Config{Pool: pool, Agents: cfg.Agents, Runtime: b.Runtime, Memory: b.Memory, Settings: b.Settings,
		Metrics: metrics, BoxID: b.ID, Runs: b.Runs, Speech: speech, Logger: log,
		Realtime: cfg.Media.Realtime(), Events: b.Webhooks, Recorder: b.Recordings, Prices: b.Prices, Ended: b.callEnded}
	// Warm transfers ring people through the SIP server made below.
	vcfg.DialLeg = func(ctx context.Context, trunk, to string) (voice.Leg, error) {
		return b.Phones.DialLeg(ctx, trunk, to)
	}
	if opt.TuneCalls != nil {
		opt.TuneCalls(&vcfg)
	}
	b.Calls = voice.NewManager(vcfg)
	b.listener.Subscribe(voice.NotifyHangup, func(id string) { b.Calls.HangupLocal(id) })
	b.Rooms, err = rooms.New(rooms.Config{Manager: b.Calls, Rooms: cfg.Rooms, Logger: log, DevKey: opt.DevKey})
	if err != nil {
		return err
	}
	b.Phones, err = sip.New(sip.Config{Config: cfg.SIP, Manager: b.Calls, Logger: log, Metrics: metrics})
	if err != nil {
		_ = b.Rooms.Close()
		return err
	}
	return b.newCampaigns(cfg)
}

// newCampaigns makes the campaigns service: its attempts dial through the
// SIP server, and each box's scheduler is woken when a campaign's call ends
// anywhere.
func (b *Box) newCampaigns(cfg *config.Config) error {
	trunks := []string{}
	for _, t := range cfg.SIP.Trunks.Outbound {
		trunks = append(trunks, t.Name)
	}
	var err error
	b.Campaigns, err = campaigns.New(campaigns.Config{Pool: b.Pool, Logger: b.Log, Events: b.Webhooks,
		Agents: slices.Collect(maps.Keys(cfg.Agents)), Trunks: trunks, CallExists: voice.ErrCallExists,
		Dial: func(ctx context.Context, r campaigns.DialRequest) error {
			_, err := b.Phones.Dial(ctx, sip.DialRequest{ID: r.ID, Agent: r.Agent, To: r.To, Trunk: r.Trunk,
				Identities: r.Identities, Variables: r.Variables})
			return err
		}})
	if err != nil {
		_ = b.Rooms.Close()
		return err
	}
	b.listener.Subscribe(campaigns.NotifyTopic, func(string) { b.Campaigns.Wake() })
	return nil
}

// callEnded runs in the transaction that records a call's end: the call's
// analysis is queued and its campaign contact (if any) moved on.
func (b *Box) callEnded(ctx context.Context, tx pgx.Tx, e voice.EndedCall) error {
	return errors.Join(b.Analysis.Enqueue(ctx, tx, e.ID, e.Agent),
		b.Campaigns.CallEnded(ctx, tx, e.ID, e.Outcome, e.AnsweredBy, e.Answered))
}

// routes registers the toolkit's own routes, then each package's, and
// returns the box's front handler.
func (b *Box) routes(cfg *config.Config, opt Options) http.Handler {
	pool, log, metrics := b.Pool, b.Log, b.Metrics
	b.API = api.New(api.Config{Pool: pool, Keys: b.Keys, Logger: log, Metrics: metrics})
	memory.Register(b.API, b.Memory, b.Settings, pool)
	agent.Register(b.API, b.Runtime, cfg)
	b.Runs.Register(b.API)
	b.Costs.Register(b.API)
	b.Models.Register(b.API)
	wcfg := wire.Config{Runtime: b.Runtime, Guard: b.API.Guard, Logger: log, KeepAlive: cfg.HTTP.StreamKeepAlive}
	openaiwire.Register(b.API, wcfg)
	anthropicwire.Register(b.API, wcfg)
	aguiwire.Register(b.API, wcfg)
	b.Calls.Register(b.API)
	b.Stores.Register(b.API)
	b.RAG.Register(b.API)
	b.Rooms.Register(b.API)
	b.Phones.Register(b.API)
	b.Webhooks.Register(b.API)
	b.Campaigns.Register(b.API)
	studio.Register(b.API)

	var front http.Handler = wire.CORS(cfg.HTTP.CORS.AllowedOrigins, b.API)
	if opt.Tracing {
		front = telemetry.Handler(front)
	}
	if opt.Middleware != nil {
		front = opt.Middleware(front)
	}
	return front
}

// Handler is the box's HTTP handler: the API, the wires, Studio and the
// call page, behind CORS (and tracing when configured).
func (b *Box) Handler() http.Handler { return b.handler }

// Start runs the box's background work until the returned stop is called:
// the cache listener (until ctx ends), the heartbeat and call leases of
// this box, the SIP server, and one River client for every package's jobs.
// stop (safe to call twice) ends them after the calls (see Drain): jobs,
// SIP, rooms, leases.
func (b *Box) Start(ctx context.Context) (stop func(), err error) {
	go b.listener.Run(ctx)
	leaseCtx, stopLeases := context.WithCancel(context.WithoutCancel(ctx))
	var undo []func()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		})
	}
	undo = append(undo, stopLeases, func() {
		if err := b.Rooms.Close(); err != nil {
			b.Log.Warn("rooms close", "error", err)
		}
	})
	b.Tools.Start(ctx)
	undo = append(undo, func() { _ = b.Tools.Close() })
	go jobs.Heartbeat(leaseCtx, b.Pool, b.ID, b.Log)
	b.Metrics.WatchJobs(b.Pool, jobs.Schema)
	b.Metrics.WatchCircuits(func() []telemetry.CircuitSample {
		views := b.Models.Circuits()
		out := make([]telemetry.CircuitSample, len(views))
		for i, v := range views {
			out[i] = telemetry.CircuitSample{Provider: v.Provider, Endpoint: v.Endpoint, Open: v.State != provider.CircuitClosed, Opened: v.Opened}
		}
		return out
	})
	go b.Calls.Run(leaseCtx) // call leases; calls of dead boxes closed as box_lost

	// The SIP side outlives the signal: it answers 503 while the calls
	// drain, and closes after them.
	if err := b.Phones.Start(context.WithoutCancel(ctx)); err != nil {
		stop()
		return nil, err
	}
	undo = append(undo, func() { b.Phones.Close() })

	queue := jobs.NewRegistry()
	if err := b.Stores.AddWorkers(queue); err != nil {
		stop()
		return nil, err
	}
	b.RAG.AddWorkers(queue)
	b.Webhooks.AddWorkers(queue)
	b.Recordings.AddWorkers(queue)
	b.Analysis.AddWorkers(queue)
	b.Campaigns.AddWorkers(queue)
	client, err := jobs.NewBoxClient(b.Pool, queue, b.Log, b.ID)
	if err != nil {
		stop()
		return nil, err
	}
	client.PeriodicJobs().AddMany(b.Stores.PeriodicJobs())
	client.PeriodicJobs().AddMany(b.Webhooks.PeriodicJobs())
	client.PeriodicJobs().AddMany(b.Recordings.PeriodicJobs())
	if err := b.RAG.Start(ctx, client); err != nil {
		stop()
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		stop()
		return nil, fmt.Errorf("jobs: %w", err)
	}
	undo = append(undo, func() { _ = client.Stop(context.WithoutCancel(ctx)) })
	// The scheduler stops with ctx: a stopping box queues no attempt.
	go b.Campaigns.Run(ctx)
	return stop, nil
}

// ServeLoopback starts the box (Start) and serves its handler on a free
// loopback port, for the tests and the load commands; the stackbone
// command serves with its own server and signals. stop drains the calls
// (for up to 10 s), then ends it all.
func (b *Box) ServeLoopback(ctx context.Context) (url string, stop func(), err error) {
	// The box runs until stop (its cache listener holds a connection until
	// this context ends).
	run, cancel := context.WithCancel(ctx)
	stopBox, err := b.Start(run)
	if err != nil {
		cancel()
		return "", nil, err
	}
	// The box's own listener and server, as `stackbone serve` has them.
	ln, err := api.Listen("127.0.0.1:0", api.LimitsOf(b.Config.HTTP))
	if err != nil {
		stopBox()
		cancel()
		return "", nil, err
	}
	hs := api.HTTPServer(b.Handler(), b.Config.HTTP, b.Log, ln)
	go hs.Serve(ln)
	stop = func() {
		_ = hs.Close()
		drain, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer done()
		b.Drain(drain)
		stopBox()
		cancel()
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// Drain stops taking new calls (SIP 503, rooms 503, /readyz unready), lets
// the calls in progress end on their own until ctx ends, then ends the rest
// as shutdown; each is completed and saved before Drain returns.
func (b *Box) Drain(ctx context.Context) {
	b.Log.Info("stopping: draining calls", "calls", b.Calls.Active())
	b.API.Drain()
	b.Calls.Drain(ctx)
}
