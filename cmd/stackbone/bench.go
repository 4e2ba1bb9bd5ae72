//go:build bench

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
	"github.com/stackbone/box/postgres/pgcluster"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Load tests that print the figures the README quotes"}
	cmd.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	cmd.PersistentFlags().String("memprofile", "", "write an allocation profile at the end of the run to this file (go tool pprof -sample_index=alloc_space)")
	cmd.PersistentFlags().String("trace", "", "write an execution trace of the whole run to this file (go tool trace; tens of MB a minute under load)")
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
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.Report, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Memory(ctx, cfg)
		}),
	}
	mem.Flags().IntVar(&cfg.Facts, "facts", 50, "facts per person")
	mem.Flags().IntVar(&cfg.Calls, "calls", 5, "call records per person")
	mem.Flags().IntVar(&cfg.Persons, "persons", 400, "persons seeded")
	mem.Flags().IntVar(&cfg.Requests, "requests", 4000, "requests per scenario")
	mem.Flags().IntVar(&cfg.Rounds, "rounds", 5, "interleaved rounds")
	mem.Flags().IntVar(&cfg.Concurrency, "concurrency", 4, "concurrent clients")
	mem.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	cmd.AddCommand(mem, turnsCmd(), benchStoresCmd(), benchCallsCmd(), benchRoomsCmd(), benchRAGCmd(), benchSoakCmd(), benchStudioCmd(), benchLatencyCmd(), benchCampaignsCmd(), benchTurnTakingCmd(), benchCapacityCmd(), benchCallerCmd(), benchModelCmd())
	return cmd
}

func turnsCmd() *cobra.Command {
	var cfg bench.TurnsConfig
	var dataDir string
	c := &cobra.Command{
		Use:   "turns",
		Short: "Text turns: what the box adds to time to first token and a full streamed turn, beside the provider alone",
		Long: `Measures, side by side in one process, the scripted provider called directly, through
a bare reverse proxy (httputil.ReverseProxy, one hop and nothing else) and through the
box's OpenAI wire: time to first token with one client and with --streams clients on
paced streams (stateless and with a session), then the CPU per 1,000 non-streamed
requests with the upstream answering at once (this process, and the PostgreSQL
backends of the run's database read from /proc).`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.TurnsReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Turns(ctx, cfg)
		}),
	}
	c.Flags().IntVar(&cfg.Streams, "streams", 50, "concurrent clients")
	c.Flags().IntVar(&cfg.Turns, "turns", 10, "turns per stream per scenario and round (paced phase)")
	c.Flags().IntVar(&cfg.SoloTurns, "solo-turns", 100, "turns of the one-client phase per scenario and round")
	c.Flags().IntVar(&cfg.Requests, "requests", 3000, "requests per target and round in the CPU phase")
	c.Flags().IntVar(&cfg.Rounds, "rounds", 3, "interleaved rounds")
	c.Flags().BoolVar(&cfg.Lockstep, "lockstep", false, "start every stream of a round at once (the worst case)")
	c.Flags().DurationVar(&cfg.ChunkDelay, "chunk-delay", 20*time.Millisecond, "pause between the scripted model's chunks (-1ns: none, a CPU saturation test)")
	c.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return c
}

// benchRunE is the RunE of a load command: it finds the database, runs the
// measurement (profiled when asked) and prints its report.
func benchRunE[R interface{ Print(io.Writer) }](dataDir *string, run func(ctx context.Context, admin string, log *slog.Logger) (R, error)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		log := newLogger()
		admin, stop, err := benchDatabase(cmd, *dataDir, log)
		if err != nil {
			return err
		}
		defer stop()
		cpuProfile, _ := cmd.Flags().GetString("cpuprofile")
		memProfile, _ := cmd.Flags().GetString("memprofile")
		if cpuProfile != "" {
			f, err := os.Create(cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		if traceFile, _ := cmd.Flags().GetString("trace"); traceFile != "" {
			f, err := os.Create(traceFile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := trace.Start(f); err != nil {
				return err
			}
			defer trace.Stop()
		}
		rep, err := run(cmd.Context(), admin, log)
		if err != nil {
			return err
		}
		if memProfile != "" {
			f, err := os.Create(memProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			// The profile holds what the last finished collection
			// published: collect first, or a run with few collections
			// (the box's GOGC is 1000) loses most of what it allocated.
			runtime.GC()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				return err
			}
		}
		rep.Print(os.Stdout)
		fmt.Println()
		return nil
	}
}

// benchDatabase is STACKBONE_DATABASE_URL, else the private cluster of dev.
func benchDatabase(cmd *cobra.Command, dataDir string, log *slog.Logger) (string, func(), error) {
	if u := os.Getenv("STACKBONE_DATABASE_URL"); u != "" {
		return u, func() {}, nil
	}
	dir, err := filepath.Abs(filepath.Join(dataDir, "postgres"))
	if err != nil {
		return "", nil, err
	}
	cluster, err := pgcluster.Start(cmd.Context(), pgcluster.Config{Dir: dir, Logger: log})
	if err != nil {
		return "", nil, err
	}
	return cluster.URL(pgcluster.DefaultDatabase), func() { cluster.Stop(context.WithoutCancel(cmd.Context())) }, nil
}
