//go:build bench

package main

import (
	"context"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
	"github.com/stackbone/box/config"
)

// benchLatencyCmd is `stackbone bench latency`: time to first agent audio
// after the caller stops, on SIP and browser-room calls.
func benchLatencyCmd() *cobra.Command {
	var cfg bench.LatencyConfig
	var dataDir string
	c := &cobra.Command{
		Use:   "latency",
		Short: "Conversation speed: time to first agent audio after the caller stops, per transport and provider profile",
		Long: `Places calls over SIP (RTP both ways) and over a browser room (a Go WebRTC caller),
one at a time. Each caller speaks a script of utterances, some with mid-sentence
pauses of 300-700 ms that must not end the turn, and hears each answer. Runs the
provider profiles of issue 16 on the scripted provider: http (transcription 360 ms,
first token 420 ms, speech first byte 140 ms), streaming and streaming-deepgram (the
box's live transcription client, voice.sttMode realtime or deepgram, over WebSocket to
the scripted provider, whose own end-of-speech detection sends the final 150 ms after
the end of speech; 420, 140) and zero. Prints, per profile
and transport: time to first audio p50/p90/p99 on the wire, the controller's
per-stage medians, the box's own share, false endpoints (turns cut while the caller
was still speaking) and the wasted speculative provider work. Uses
STACKBONE_DATABASE_URL's server, else the private cluster of stackbone dev under
--data-dir.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.LatencyReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Latency(ctx, cfg)
		}),
	}
	c.Flags().IntVar(&cfg.Calls, "calls", 3, "calls per transport and profile")
	c.Flags().StringSliceVar(&cfg.Profiles, "profiles", nil, "profiles to run (http, streaming, streaming-deepgram, zero; default all)")
	c.Flags().StringVar(&cfg.Scheduling, "scheduling", config.SchedulingRealtime, "the box's media.scheduling: realtime (as the shipped configurations) or normal")
	c.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return c
}
