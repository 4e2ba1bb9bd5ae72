//go:build bench

package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
	"github.com/stackbone/box/config"
)

// benchTurnTakingCmd is `stackbone bench turntaking`: scripted caller
// behaviours against each VAD and endpointing mode.
func benchTurnTakingCmd() *cobra.Command {
	var cfg bench.TurnTakingConfig
	var dataDir string
	c := &cobra.Command{
		Use:   "turntaking",
		Short: "Turn-taking: false cut-offs, false interruptions, missed barge-ins, time to yield and to first audio, per VAD and endpointing mode",
		Long: `Plays 75 scripted caller behaviours made with espeak-ng and sox into real calls,
SIP (a diago caller, G.711) and a browser room (a Go WebRTC caller): complete questions
and statements, mid-sentence pauses of 300-1200 ms, hesitations, two sentences in a
breath, backchannels and sounds (coughs, clicks, a door) during the agent's answer,
real barge-ins, pink, brown and babble noise at 20, 10 and 5 dB SNR, and fast
follow-ups. One box serves an agent per transport, VAD and endpointing mode, called
side by side, with instant scripted providers. Prints per behaviour class and per
agent: false cut-offs, stuck turns, false interruptions, missed barge-ins, time to
yield on a barge-in and time to first audio. Needs espeak-ng and sox. Uses
STACKBONE_DATABASE_URL's server, else the private cluster of stackbone dev under
--data-dir.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.TurnTakingReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.TurnTaking(ctx, cfg)
		}),
	}
	c.Flags().StringSliceVar(&cfg.Transports, "transports", nil, "transports (sip, room; default both)")
	c.Flags().StringSliceVar(&cfg.VADs, "vads", nil, "voice activity detectors (auto, energy, silero; default all three)")
	c.Flags().StringSliceVar(&cfg.Modes, "modes", nil, "endpointing modes (words, cautious, silence; default words and cautious)")
	c.Flags().StringSliceVar(&cfg.Classes, "classes", nil, "behaviour classes to run (default all)")
	c.Flags().StringVar(&cfg.Scheduling, "scheduling", config.SchedulingRealtime, "the box's media.scheduling: realtime (as the shipped configurations) or normal")
	c.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return c
}
