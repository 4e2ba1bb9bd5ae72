package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
	"github.com/stackbone/box/store/pgcluster"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Load tests that print the figures the README quotes"}
	var cfg bench.MemoryConfig
	var dataDir string
	mem := &cobra.Command{
		Use:   "memory",
		Short: "Person memory: recall and add latency percentiles beside baselines",
		Long: `Creates a throwaway database on STACKBONE_DATABASE_URL's server (else the private
cluster of stackbone dev under --data-dir), seeds persons with facts and calls, and
measures recall and add through the Go API and the HTTP API, interleaved with
baselines (a bare database round trip, an authenticated HTTP request, a request
to the scripted model), all in one process.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := newLogger()
			cfg.Logger = log
			cfg.AdminURL = os.Getenv("STACKBONE_DATABASE_URL")
			if cfg.AdminURL == "" {
				dir, err := filepath.Abs(filepath.Join(dataDir, "postgres"))
				if err != nil {
					return err
				}
				cluster, err := pgcluster.Start(ctx, pgcluster.Config{Dir: dir, Logger: log})
				if err != nil {
					return err
				}
				defer cluster.Stop(context.WithoutCancel(ctx))
				cfg.AdminURL = cluster.URL(pgcluster.DefaultDatabase)
			}
			rep, err := bench.Memory(ctx, cfg)
			if err != nil {
				return err
			}
			rep.Print(os.Stdout)
			fmt.Println()
			return nil
		},
	}
	mem.Flags().IntVar(&cfg.Facts, "facts", 50, "facts per person")
	mem.Flags().IntVar(&cfg.Calls, "calls", 5, "call records per person")
	mem.Flags().IntVar(&cfg.Persons, "persons", 400, "persons seeded")
	mem.Flags().IntVar(&cfg.Requests, "requests", 4000, "requests per scenario")
	mem.Flags().IntVar(&cfg.Rounds, "rounds", 5, "interleaved rounds")
	mem.Flags().IntVar(&cfg.Concurrency, "concurrency", 4, "concurrent clients")
	mem.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	cmd.AddCommand(mem)
	return cmd
}
