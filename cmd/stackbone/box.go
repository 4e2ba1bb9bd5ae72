package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/configs"
	"github.com/stackbone/box/migrations"
	"github.com/stackbone/box/postgres/pgcluster"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/telemetry"
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

// migrateOrCheck applies pending migrations (opt.migrate), or refuses a
// database that lacks some.
func migrateOrCheck(ctx context.Context, cfg *config.Config, opt boxOptions, log *slog.Logger) error {
	if opt.migrate {
		return migrations.Apply(ctx, cfg.Database.URL, log)
	}
	n, err := migrations.Pending(ctx, cfg.Database.URL)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("the database lacks %d migration(s): run `stackbone migrate` (or serve --migrate)", n)
	}
	return nil
}

// openPool opens the box's database pool (32 connections unless
// database.maxConns says).
func openPool(ctx context.Context, cfg *config.Config) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.Database.URL)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pcfg.MaxConns = 32
	if cfg.Database.MaxConns > 0 {
		pcfg.MaxConns = int32(cfg.Database.MaxConns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return pool, nil
}

// checkDevKey creates the dev key (opt.devKey), or refuses to serve a
// database where it is valid: its secret is public, so a database that ran
// `dev` must not serve production with it.
func checkDevKey(ctx context.Context, keys *auth.Store, opt boxOptions, log *slog.Logger) error {
	if opt.devKey {
		err := keys.Ensure(ctx, auth.DevKey, auth.DevKey, auth.AllScopes)
		switch {
		case errors.Is(err, auth.ErrRevoked):
			log.Warn("the dev key local-dev was revoked in this database and stays revoked; create a key with `stackbone keys create`")
		case err != nil:
			return err
		}
		return nil
	}
	live, err := keys.Live(ctx, auth.DevKey)
	if err != nil {
		return err
	}
	if live {
		return fmt.Errorf("the dev key %s (whose secret is public) is valid in this database; revoke it before serving: stackbone keys revoke %s", auth.DevKey, auth.DevKey)
	}
	return nil
}

// startTracing sends traces over OTLP when configured; stop flushes them.
// (Operators' other signal, the Prometheus series at /metrics, needs no
// start: see package telemetry.)
func startTracing(ctx context.Context, cfg *config.Config, log *slog.Logger) (stop func(), err error) {
	if cfg.Telemetry.OTLPEndpoint == "" {
		return func() {}, nil
	}
	stopTracing, err := telemetry.StartTracing(ctx, cfg.Telemetry.OTLPEndpoint)
	if err != nil {
		return nil, err
	}
	log.Info("tracing", "otlpEndpoint", cfg.Telemetry.OTLPEndpoint)
	return func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(fctx); err != nil {
			log.Warn("telemetry: flushing traces", "error", err)
		}
	}, nil
}

// runBox wires every part of the box once and serves until ctx ends.
func runBox(ctx context.Context, cfg *config.Config, opt boxOptions, log *slog.Logger) error {
	if err := migrateOrCheck(ctx, cfg, opt, log); err != nil {
		return err
	}
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkDevKey(ctx, auth.NewStore(pool), opt, log); err != nil {
		return err
	}
	stopTracing, err := startTracing(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	devKey := ""
	if opt.devKey {
		devKey = auth.DevKey
	}
	b, err := box.New(ctx, cfg, box.Options{Pool: pool, Logger: log, DevKey: devKey, DataDir: opt.dataDir,
		// Spans cost a wrapper on every request: only when traces go somewhere.
		Tracing: cfg.Telemetry.OTLPEndpoint != ""})
	if err != nil {
		return err
	}
	if _, err := b.Models.Resolve("openai/x"); errors.Is(err, provider.ErrNotConfigured) {
		log.Warn("no model provider configured: set OPENAI_BASE_URL and/or OPENAI_API_KEY; requests that need a model will say so")
	}
	stop, err := b.Start(ctx)
	if err != nil {
		return err
	}
	defer stop()

	ln, err := api.Listen(cfg.HTTP.Addr, api.LimitsOf(cfg.HTTP))
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	srv := api.HTTPServer(b.Handler(), cfg.HTTP, log, ln)
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
	drainCtx, stopDrain := context.WithTimeout(context.WithoutCancel(ctx), drain)
	b.Drain(drainCtx)
	stopDrain()
	stop()
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
