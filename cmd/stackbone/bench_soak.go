//go:build bench

package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
)

func benchSoakCmd() *cobra.Command {
	var cfg bench.SoakConfig
	var dataDir string
	c := &cobra.Command{
		Use:   "soak",
		Short: "Calls and chat while the box is killed (-9) and restarted: what was heard is saved once, nothing lost",
		Long: `Runs this binary as a box (serve) on a throwaway database, places SIP calls (greeting,
one spoken turn, the answer, a hang-up) and chat turns against it, and kills it with
SIGKILL and restarts it at random intervals. Then it waits until every call ended (by
its box, or as box_lost by the next one) and counts: calls started, completed,
recovered, saves expected (something heard, save on), saves found, lost, duplicate
saves. The goal is zero lost and zero duplicates. With --kill-recovering each restarted
box is killed again while it saves a call it recovered (--save-delay widens that window).`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.SoakReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Soak(ctx, cfg)
		}),
	}
	c.Flags().DurationVar(&cfg.Duration, "duration", 2*time.Minute, "how long the load runs (then the run waits for recoveries)")
	c.Flags().IntVar(&cfg.Calls, "calls", 4, "concurrent SIP calls")
	c.Flags().IntVar(&cfg.Chats, "chats", 2, "concurrent chat clients")
	c.Flags().DurationVar(&cfg.KillEvery, "kill-every", 20*time.Second, "mean interval between kills")
	c.Flags().BoolVar(&cfg.KillRecovering, "kill-recovering", false, "after each restart, kill the new box again while it saves a call it recovered")
	c.Flags().DurationVar(&cfg.SaveDelay, "save-delay", 0, "hold each memory extraction back this long (a slow extraction model)")
	c.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return c
}
