//go:build bench

package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
	"github.com/stackbone/box/config"
)

// benchCapacityCmd is `stackbone bench capacity`: concurrent SIP calls
// climbed until the box's pacing or loss gives, for the shared RTP port
// and a port per call side by side.
func benchCapacityCmd() *cobra.Command {
	var cfg bench.CapacityConfig
	var dataDir string
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Calls per core: SIP calls climbed until pacing p99 passes 5 ms or a frame is lost, shared RTP port beside a port per call",
		Long: `Runs the calls load (see bench calls: the whole box, with the scripted model and the
load generator in processes of their own on loopback, each call a speaking caller and an
answering agent) at --from, --from+--step, ... calls until box pacing p99 passes 5 ms, a frame is
lost or dropped or a call fails, once with the box's shared RTP port and once with a
port per call (the media path before it), taking turns at each step. It prints each
step and the calls per core and memory per call each path held.

With --media rooms it climbs browser calls on the embedded WebRTC peer instead (see bench
rooms: the callers in a stackbone bench caller --rooms process, the scripted model in a
stackbone bench model one) until the box's pacing p99 passes 5 ms or a packet is lost, on
one UDP port for every room (--rooms-port, read and sent in batches) and a port per room,
taking turns at each step. With --media mix
each step carries half its calls over SIP and half from browsers on one box, beside
--text-rate streaming text turns a second on the OpenAI wire, until either kind's pacing
p99 passes 5 ms, a frame is lost or dropped, or a turn fails.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.CapacityReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Capacity(ctx, cfg)
		}),
	}
	cmd.Flags().IntVar(&cfg.From, "from", 100, "concurrent calls of the first step")
	cmd.Flags().IntVar(&cfg.Step, "step", 100, "calls added at each step")
	cmd.Flags().IntVar(&cfg.Max, "max", 1500, "the last step")
	cmd.Flags().DurationVar(&cfg.Hold, "hold", 30*time.Second, "how long each step's calls stay up once established")
	cmd.Flags().IntVar(&cfg.Rate, "rate", 50, "calls started per second")
	cmd.Flags().StringVar(&cfg.STT, "stt", "http", "how the agent listens: http, realtime or deepgram")
	cmd.Flags().StringVar(&cfg.Caller, "caller", "process", "process: the calls come from a separate `stackbone bench caller` process; empty: a generator inside the box's process")
	cmd.Flags().StringVar(&cfg.Media, "media", "sip", "what the calls carry: sip (G.711 over RTP), rooms (browser calls on the embedded WebRTC peer) or mix (half of each, beside text turns)")
	cmd.Flags().IntVar(&cfg.RoomsPort, "rooms-port", 40000, "with --media rooms or mix: the browser calls' one UDP port")
	cmd.Flags().IntVar(&cfg.TextRate, "text-rate", 10, "with --media mix: streaming text turns a second")
	cmd.Flags().StringVar(&cfg.Scheduling, "scheduling", config.SchedulingRealtime, "the box's media.scheduling: realtime (as the shipped configurations) or normal")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "where the private PostgreSQL cluster lives")
	return cmd
}
