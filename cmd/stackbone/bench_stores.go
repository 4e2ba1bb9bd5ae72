//go:build bench

package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
	"github.com/stackbone/box/bench/storesbench"
)

// benchStoresCmd is `stackbone bench stores`: list, read and search
// latency at 10,000 memories in one store, beside baselines.
func benchStoresCmd() *cobra.Command {
	var cfg storesbench.Config
	var dataDir string
	cmd := &cobra.Command{
		Use:   "stores",
		Short: "Memory stores: list, read and search latency percentiles at 10,000 memories, beside baselines",
		Long: `Creates a throwaway database on STACKBONE_DATABASE_URL's server (else the private
cluster of stackbone dev under --data-dir), seeds one memory store with --memories
memories, and measures list, read and search through the Go API and the HTTP API,
interleaved with baselines (a bare database round trip, a primary-key read, an
authenticated HTTP request), all in one process.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.Report, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return storesbench.Run(ctx, cfg)
		}),
	}
	cmd.Flags().IntVar(&cfg.Memories, "memories", 10000, "memories in the store (at most 10,000)")
	cmd.Flags().IntVar(&cfg.ContentBytes, "bytes", 600, "content size of each memory")
	cmd.Flags().IntVar(&cfg.Requests, "requests", 2000, "requests per scenario")
	cmd.Flags().IntVar(&cfg.Rounds, "rounds", 5, "interleaved rounds")
	cmd.Flags().IntVar(&cfg.Concurrency, "concurrency", 1, "concurrent clients")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return cmd
}
