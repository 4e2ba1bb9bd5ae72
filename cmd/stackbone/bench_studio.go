//go:build bench

package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
)

// benchStudioCmd is `stackbone bench studio`: first paint of each Studio
// list with 10,000 rows, measured in headless Chromium.
func benchStudioCmd() *cobra.Command {
	var cfg bench.StudioConfig
	var dataDir string
	cmd := &cobra.Command{
		Use:   "studio",
		Short: "Studio: first paint of each list with 10,000 rows, in headless Chromium (Navigation and Paint Timing)",
		Long: `Creates a throwaway database on STACKBONE_DATABASE_URL's server (else the private
cluster of stackbone dev under --data-dir), seeds calls, sessions, runs and RAG
documents, serves the API and Studio on loopback, and loads each list screen in
headless Chromium (full page loads, signed in), printing first contentful paint, the
time the first page of rows was painted and the list request's duration, beside the
sign-in page as a baseline.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.StudioReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Studio(ctx, cfg)
		}),
	}
	cmd.Flags().IntVar(&cfg.Rows, "rows", 10000, "rows seeded in each list")
	cmd.Flags().IntVar(&cfg.Loads, "loads", 15, "page loads measured per screen")
	cmd.Flags().StringVar(&cfg.Browser, "browser", "", "Chromium binary (default: chromium on PATH)")
	cmd.Flags().StringVar(&cfg.Screenshots, "screenshots", "", "also write a PNG of each main screen into this directory")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "where the private PostgreSQL cluster lives")
	return cmd
}
