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

// benchRoomsCmd is `stackbone bench rooms`: concurrent browser calls on the
// embedded WebRTC peer.
func benchRoomsCmd() *cobra.Command {
	var cfg bench.RoomsConfig
	var dataDir string
	c := &cobra.Command{
		Use:   "rooms",
		Short: "Browser rooms: concurrent calls on the embedded WebRTC peer (join time, audio pacing jitter, per-turn overhead)",
		Long: `Opens browser rooms on the embedded WebRTC peer and joins each with a Go WebRTC
caller on loopback (PCMU, ICE and DTLS-SRTP like a browser, on pion's packages
without a PeerConnection, which would cost the callers as much as the box), at growing numbers of concurrent calls
(--steps), joined at --rate a second. Each caller speaks 1.2 s every 3.5 s and hears
the agent's spoken answer (scripted model and speech). Once every call of a step is
up, a window of --hold measures, as bench calls does for SIP: the pacing jitter of
the agent's audio as the callers receive it and where the box sends it, the
callers' wire-to-wire time, CPU per call, beside two baselines: a bare 20 ms
ticker in the same process, and the same callers against bare pion PeerConnections
(a paced PCMU stream each, nothing of the box between). Also the join
time (POST /api/voice/rooms to media connected) and the controller's per-turn
overhead; and the largest number of calls whose pacing jitter p99 stayed under
--jitter-limit. Uses STACKBONE_DATABASE_URL's server, else
the private cluster of stackbone dev under --data-dir.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.Report, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			rep, _, err := bench.Rooms(ctx, cfg)
			return rep, err
		}),
	}
	c.Flags().IntSliceVar(&cfg.Steps, "steps", []int{1, 5, 10, 20, 40, 60, 80, 100, 150, 200, 250}, "concurrent calls per step, climbing")
	c.Flags().IntVar(&cfg.Rate, "rate", 40, "calls joined per second")
	c.Flags().DurationVar(&cfg.Hold, "hold", 10*time.Second, "measurement window, once every call of a step is up")
	c.Flags().DurationVar(&cfg.JitterLimit, "jitter-limit", 5*time.Millisecond, "pacing jitter p99 a step must stay under")
	c.Flags().IntVar(&cfg.UDPPort, "udp-port", 0, "carry every room's media on this one UDP port (rooms.embedded.udpPort), as a box behind a firewall does; 0: a port per room")
	c.Flags().StringVar(&cfg.Scheduling, "scheduling", config.SchedulingRealtime, "the box's media.scheduling: realtime (as the shipped configurations) or normal; the bare PeerConnection baseline runs the same")
	c.Flags().StringVar(&cfg.Caller, "caller", "", "process: join the calls from a separate `stackbone bench caller --rooms` process and serve the scripted model from a `stackbone bench model` one, so this process's CPU is the box's own; empty: all in this process")
	c.Flags().BoolVar(&cfg.NoBare, "no-bare", false, "leave out the bare PeerConnection baseline")
	c.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "private cluster location when STACKBONE_DATABASE_URL is unset")
	return c
}
