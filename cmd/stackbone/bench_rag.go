//go:build bench

package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
)

// benchRAGCmd is `stackbone bench rag`: retrieval latency and recall of the
// graph index beside the exact scan, index build time and ingest
// throughput, in one run.
func benchRAGCmd() *cobra.Command {
	var cfg bench.RAGConfig
	var dataDir string
	cmd := &cobra.Command{
		Use:   "rag",
		Short: "Retrieval: search latency and recall@10 of the graph index beside an exact scan, index build, ingest throughput",
		Long: `Creates a throwaway database on STACKBONE_DATABASE_URL's server (else the private
cluster of stackbone dev under --data-dir), stores clustered synthetic 1536-dimension
vectors at each size, starts a second service on it as a restarted box would (index
loaded from Postgres, graph built), then runs the same queries on the graph and on an
exact scan, interleaved, and reports latency percentiles, recall@10 against the exact
answers, and ingest throughput (storage alone, and end to end through the scripted
embeddings server). The 100,000-chunk size needs about 1.5 GB of memory and a few minutes.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.RAGReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.RAG(ctx, cfg)
		}),
	}
	cmd.Flags().IntSliceVar(&cfg.Sizes, "sizes", []int{10_000, 100_000}, "collection sizes in chunks")
	cmd.Flags().IntVar(&cfg.Dims, "dims", 1536, "vector dimension")
	cmd.Flags().IntVar(&cfg.Queries, "queries", 1000, "queries per size (each on the graph and the exact scan)")
	cmd.Flags().IntVar(&cfg.IngestChunks, "ingest-chunks", 5000, "chunks ingested end to end through the scripted embeddings server")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return cmd
}
