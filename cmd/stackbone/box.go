package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/configs"
	"github.com/stackbone/box/jobs"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/migrations"
	"github.com/stackbone/box/objectstore"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/rag"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/store/notify"
	"github.com/stackbone/box/store/pgcluster"
	"github.com/stackbone/box/stores"
	"github.com/stackbone/box/studio"
	"github.com/stackbone/box/telemetry"
	"github.com/stackbone/box/voice"
	"github.com/stackbone/box/voice/espeak"
	"github.com/stackbone/box/wire"
	aguiwire "github.com/stackbone/box/wire/agui"
	anthropicwire "github.com/stackbone/box/wire/anthropic"
	openaiwire "github.com/stackbone/box/wire/openai"
)

// boxOptions says how runBox differs between dev and serve.
type boxOptions struct {
	// devKey creates the key local-dev with every scope.
	devKey bool
	// migrate applies pending migrations; otherwise pending ones are an error.
	migrate bool
	// dataDir holds local state: uploaded originals when the object store
	// is the filesystem.
	dataDir string
	// drain is how long calls may end on their own at a stop, unless the
	// configuration says (shutdown.drain).
	drain time.Duration
}

// runBox wires every part of the box once and serves until ctx ends.
func runBox(ctx context.Context, cfg *config.Config, opt boxOptions, log *slog.Logger) error {
	if opt.migrate {
		if err := migrations.Apply(ctx, cfg.Database.URL, log); err != nil {
			return err
		}
	} else {
		n, err := migrations.Pending(ctx, cfg.Database.URL)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("the database lacks %d migration(s): run `stackbone migrate` (or serve --migrate)", n)
		}
	}
	pcfg, err := pgxpool.ParseConfig(cfg.Database.URL)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	pcfg.MaxConns = 32
	if cfg.Database.MaxConns > 0 {
		pcfg.MaxConns = int32(cfg.Database.MaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()

	keys := auth.NewStore(pool)
	if opt.devKey {
		err := keys.Ensure(ctx, auth.DevKey, auth.DevKey, auth.AllScopes)
		switch {
		case errors.Is(err, auth.ErrRevoked):
			log.Warn("the dev key local-dev was revoked in this database and stays revoked; create a key with `stackbone keys create`")
		case err != nil:
			return err
		}
	} else {
		// The dev key's secret is public: a database that ran `dev` must
		// not serve production with it.
		live, err := keys.Live(ctx, auth.DevKey)
		if err != nil {
			return err
		}
		if live {
			return fmt.Errorf("the dev key %s (whose secret is public) is valid in this database; revoke it before serving: stackbone keys revoke %s", auth.DevKey, auth.DevKey)
		}
	}
	// Operators' signals: Prometheus series at /metrics (see package telemetry).
	// This box's id in the calls it carries and the jobs it runs, so
	// another box can finish what it leaves if it dies.
	// Its leases (calls, jobs) are renewed until the drain ended (see
	// below), and what a dead box left is finished by this box as by any.
	boxID := "box_" + uuid.NewString()
	leaseCtx, stopLeases := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLeases()
	go jobs.Heartbeat(leaseCtx, pool, boxID, log)
	metrics := telemetry.New()
	metrics.WatchJobs(pool, jobs.Schema)
	if cfg.Telemetry.OTLPEndpoint != "" {
		stopTracing, err := telemetry.StartTracing(ctx, cfg.Telemetry.OTLPEndpoint)
		if err != nil {
			return err
		}
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := stopTracing(fctx); err != nil {
				log.Warn("telemetry: flushing traces", "error", err)
			}
		}()
		log.Info("tracing", "otlpEndpoint", cfg.Telemetry.OTLPEndpoint)
	}
	// Spans cost a wrapper on every request: only when traces go somewhere.
	tracing := cfg.Telemetry.OTLPEndpoint != ""
	providerTransport := metrics.Transport(nil)
	if tracing {
		providerTransport = telemetry.TraceTransport(providerTransport)
	}
	registry := provider.NewRegistry(cfg.Providers, &http.Client{Transport: providerTransport})
	if _, err := registry.Resolve("openai/x"); errors.Is(err, provider.ErrNotConfigured) {
		log.Warn("no model provider configured: set OPENAI_BASE_URL and/or OPENAI_API_KEY; requests that need a model will say so")
	}
	runStore := runs.NewStore(pool)
	mem := memory.NewService(memory.Config{
		Pool: pool, Models: registry, Logger: log, Metrics: metrics,
		FallbackModel: cfg.Memory.Model, FallbackReasoningEffort: cfg.Memory.ReasoningEffort,
	})
	settings := memory.NewSettings(pool, memory.AgentsFromConfig(cfg), log)
	if err := settings.FixDeclaredKeys(ctx); err != nil {
		return err
	}
	memoryStores := stores.New(stores.Config{Pool: pool, Agents: cfg.Agents, Models: registry, Logger: log})
	if err := memoryStores.Sync(ctx); err != nil {
		return err
	}
	originals, err := objectstore.Open(cfg.ObjectStore, opt.dataDir, os.Getenv)
	if err != nil {
		return err
	}
	retrieval, err := rag.New(rag.Config{Metrics: metrics, Pool: pool, Models: registry, Store: originals, Runs: runStore, Logger: log, Hybrid: cfg.RAG.Hybrid})
	if err != nil {
		return err
	}
	// Caches of keys and settings are cleared across boxes by LISTEN/NOTIFY.
	listener := notify.New(pool, log)
	listener.Subscribe("auth", keys.Invalidate)
	listener.Subscribe("settings", settings.Invalidate)
	memoryStores.Subscribe(listener)
	go listener.Run(ctx)
	runtime := agent.New(agent.Config{Metrics: metrics, Pool: pool, Agents: cfg.Agents, Models: registry, Memory: mem, Settings: settings, Logger: log,
		Runs:  runs.NewWriter(pool),
		Tools: agent.Sources(memoryStores.Tools(), retrieval.Tools(cfg.Agents))})
	handler := api.New(api.Config{Pool: pool, Keys: keys, Memory: mem, Settings: settings, Runs: runStore, Runtime: runtime, Config: cfg, Logger: log, Metrics: metrics})
	openaiwire.Register(handler, openaiwire.Config{Runtime: runtime, Guard: handler.Guard, Logger: log})
	anthropicwire.Register(handler, anthropicwire.Config{Runtime: runtime, Guard: handler.Guard, Logger: log})
	aguiwire.Register(handler, aguiwire.Config{Runtime: runtime, Guard: handler.Guard, Logger: log})
	calls := voice.NewManager(voice.Config{Pool: pool, Agents: cfg.Agents, Runtime: runtime, Memory: mem, Settings: settings, Metrics: metrics, BoxID: boxID,
		MaxDuration: cfg.SIP.MaxCallDuration,
		Runs:        runStore, Speech: voice.ProviderSpeech(registry, func(v string) (voice.Synthesizer, error) { return espeak.Open(v) }), Logger: log})
	calls.Register(handler)
	go calls.Run(leaseCtx) // call leases; calls of dead boxes closed as box_lost
	memoryStores.Register(handler)
	retrieval.Register(handler)
	devKey := ""
	if opt.devKey {
		devKey = auth.DevKey
	}
	browserRooms, err := rooms.New(rooms.Config{Manager: calls, Rooms: cfg.Rooms, Logger: log, DevKey: devKey})
	if err != nil {
		return err
	}
	browserRooms.Register(handler)
	studio.Register(handler)
	defer func() {
		if err := browserRooms.Close(); err != nil {
			log.Warn("rooms close", "error", err)
		}
	}()
	phones, err := sip.New(sip.Config{Config: cfg.SIP, Manager: calls, Logger: log, Metrics: metrics})
	if err != nil {
		return err
	}
	// The SIP side outlives the signal: it answers 503 while the calls
	// drain, and closes after them.
	if err := phones.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	defer phones.Close()
	phones.Register(handler)

	// Background work: one River client for every package's jobs.
	queue := jobs.NewRegistry()
	if err := memoryStores.AddWorkers(queue); err != nil {
		return err
	}
	retrieval.AddWorkers(queue)
	jobClient, err := jobs.NewBoxClient(pool, queue, log, boxID)
	if err != nil {
		return err
	}
	jobClient.PeriodicJobs().AddMany(memoryStores.PeriodicJobs())
	if err := retrieval.Start(ctx, jobClient); err != nil {
		return err
	}
	if err := jobClient.Start(ctx); err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	defer jobClient.Stop(context.WithoutCancel(ctx))

	ln, err := api.Listen(cfg.HTTP.Addr, cfg.HTTP.MaxConnections)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	var front http.Handler = wire.CORS(cfg.HTTP.CORS.AllowedOrigins, handler)
	if tracing {
		front = telemetry.Handler(front)
	}
	srv := api.HTTPServer(front, cfg.HTTP, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	serving := []any{"http", base, "studio", base + "/studio/", "call", base + "/call", "agents", cfg.AgentNames()}
	if opt.devKey {
		serving = append(serving, "key", auth.DevKey)
	}
	log.Info("the box is serving", serving...)
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	// A stop drains: no new calls (SIP 503, rooms 503, /readyz unready),
	// the calls in progress end on their own until the drain deadline, the
	// rest end as shutdown, and each is completed and saved before anything
	// it needs (SIP, HTTP, the database) closes.
	drain := opt.drain
	if cfg.Shutdown.Drain > 0 {
		drain = cfg.Shutdown.Drain
	}
	log.Info("stopping: draining calls", "calls", calls.Active(), "drain", drain)
	handler.Drain()
	drainCtx, stopDrain := context.WithTimeout(context.WithoutCancel(ctx), drain)
	calls.Drain(drainCtx)
	stopDrain()
	stopLeases()
	log.Info("stopping")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("http shutdown", "error", err)
	}
	return nil
}

func devCmd() *cobra.Command {
	var configPath, dataDir string
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the box locally: a private PostgreSQL under .stackbone/, the dev key local-dev, configs/dev.yaml",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := newLogger()
			cfg, err := loadDevConfig(configPath)
			if err != nil {
				return err
			}
			if err := cfg.ApplyEnv(os.Getenv); err != nil {
				return err
			}
			if cfg.Database.URL == "" {
				dir, err := filepath.Abs(filepath.Join(dataDir, "postgres"))
				if err != nil {
					return err
				}
				log.Info("starting the private PostgreSQL cluster", "dir", dir)
				cluster, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir, Logger: log})
				if err != nil {
					return err
				}
				defer func() {
					if err := cluster.Stop(context.WithoutCancel(ctx)); err != nil {
						log.Warn("stopping PostgreSQL", "error", err)
					} else {
						log.Info("PostgreSQL stopped")
					}
				}()
				cfg.Database.URL = cluster.URL(pgcluster.DefaultDatabase)
			}
			return runBox(ctx, cfg, boxOptions{devKey: true, migrate: true, dataDir: dataDir, drain: 30 * time.Second}, log)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "config file (default: configs/dev.yaml if present, else the embedded copy)")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "where the private PostgreSQL cluster lives")
	return cmd
}

// loadDevConfig reads path, else configs/dev.yaml in the working directory,
// else the copy embedded in the binary.
func loadDevConfig(path string) (*config.Config, error) {
	if path != "" {
		return config.Load(path)
	}
	if _, err := os.Stat("configs/dev.yaml"); err == nil {
		return config.Load("configs/dev.yaml")
	}
	return config.Parse(configs.Dev)
}

func serveCmd() *cobra.Command {
	var configPath, dataDir string
	var migrate bool
	cmd := &cobra.Command{
		Use:   "serve --config FILE",
		Short: "Run the box in production: database URL required, no dev key",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return errors.New("serve needs --config FILE")
			}
			cfg, err := config.Load(configPath)
			if err != nil {
				return err
			}
			if err := cfg.ApplyEnv(os.Getenv); err != nil {
				return err
			}
			if cfg.Database.URL == "" {
				return errors.New("serve needs a database: set database.url in the config or STACKBONE_DATABASE_URL")
			}
			return runBox(cmd.Context(), cfg, boxOptions{migrate: migrate, dataDir: dataDir, drain: 5 * time.Minute}, newLogger())
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "config file (required)")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "local state: uploaded originals when objectStore is the filesystem")
	cmd.Flags().BoolVar(&migrate, "migrate", false, "apply pending migrations before serving")
	return cmd
}

func migrateCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending migrations to the database (STACKBONE_DATABASE_URL or database.url of --config)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			url, err := databaseURL(configPath)
			if err != nil {
				return err
			}
			log := newLogger()
			if err := migrations.Apply(cmd.Context(), url, log); err != nil {
				return err
			}
			log.Info("the database is up to date")
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "config file holding database.url")
	return cmd
}

// databaseURL is STACKBONE_DATABASE_URL, else database.url of the config file.
func databaseURL(configPath string) (string, error) {
	if u := os.Getenv("STACKBONE_DATABASE_URL"); u != "" {
		return u, nil
	}
	if configPath != "" {
		cfg, err := config.Load(configPath)
		if err != nil {
			return "", err
		}
		if cfg.Database.URL != "" {
			return cfg.Database.URL, nil
		}
	}
	return "", errors.New("no database: set STACKBONE_DATABASE_URL or pass --config with database.url")
}
