//go:build bench

package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
)

// benchCampaignsCmd is `stackbone bench campaigns`: what the campaign
// machinery costs per attempt at 10,000 contacts.
func benchCampaignsCmd() *cobra.Command {
	var cfg bench.CampaignsConfig
	var dataDir string
	cmd := &cobra.Command{
		Use:   "campaigns",
		Short: "Campaign scheduler: time and CPU per attempt scheduled at 10,000 contacts, beside baselines",
		Long: `Creates a throwaway database on STACKBONE_DATABASE_URL's server (else the private
cluster of stackbone dev under --data-dir), uploads --contacts contacts to one
campaign and runs it to the end with calls that end the moment they are dialled,
so only the campaign machinery is measured: the scheduler's passes, the attempt
jobs and the calls' ends, beside a database round trip and a one-row update.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.Report, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Campaigns(ctx, cfg)
		}),
	}
	cmd.Flags().IntVar(&cfg.Contacts, "contacts", 10000, "contacts in the campaign")
	cmd.Flags().IntVar(&cfg.MaxConcurrent, "max-concurrent", 100, "the campaign's cap on calls up at once")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return cmd
}
