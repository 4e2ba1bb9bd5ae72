//go:build bench

package main

import (
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
)

// benchCallerCmd is `stackbone bench caller`: the load generator of bench
// calls and bench capacity in a process of its own, so the box's process
// measures only the box.
func benchCallerCmd() *cobra.Command {
	var cfg bench.CallerConfig
	var rooms bench.RoomsCallerConfig
	var browser bool
	cmd := &cobra.Command{
		Use:   "caller",
		Short: "Place one step of SIP or browser calls on a box and print what they measured (JSON lines; bench calls and bench rooms run it)",
		Long: `Places --calls SIP calls on the box at --box (--rate a second), each streaming
speech-like audio at real time, holds them --hold once all are up, and prints JSON lines:
{"window":"start"} and {"window":"end"} as the measurement window opens and closes, then
{"step":...} with the setup times, the jitter and loss of the box's packets. bench calls
--caller process and bench capacity run it as their load generator.

With --rooms it joins --calls browser rooms instead, opened with POST /api/voice/rooms on
--base with --key (or answered by the bare PeerConnections at --base's --bare offer route),
each a Go WebRTC caller speaking 1.2 s every 3.5 s; bench rooms --caller process runs it.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The SIP stack's own notices (retransmitted answers under load)
			// would drown the box's log beside it.
			slog.SetDefault(slog.New(slog.DiscardHandler))
			if browser {
				rooms.Calls, rooms.Rate, rooms.Hold, rooms.Realtime = cfg.Calls, cfg.Rate, cfg.Hold, cfg.Realtime
				return bench.RunRoomsCaller(cmd.Context(), rooms, cmd.OutOrStdout())
			}
			return bench.RunCaller(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&cfg.Box, "box", "127.0.0.1:5060", "the box's SIP address")
	cmd.Flags().IntVar(&cfg.Calls, "calls", 100, "concurrent calls")
	cmd.Flags().IntVar(&cfg.First, "first", 0, "the callers' numbers follow this one")
	cmd.Flags().IntVar(&cfg.Rate, "rate", 40, "calls started per second")
	cmd.Flags().BoolVar(&cfg.Realtime, "realtime", false, "run at real-time priority, as a box under media.scheduling realtime")
	cmd.Flags().DurationVar(&cfg.Hold, "hold", 20*time.Second, "how long the calls stay up once all are established")
	cmd.Flags().BoolVar(&browser, "rooms", false, "join browser rooms (WebRTC) instead of placing SIP calls")
	cmd.Flags().StringVar(&rooms.Target.Base, "base", "", "with --rooms: the box's HTTP address (http://127.0.0.1:PORT)")
	cmd.Flags().StringVar(&rooms.Target.Key, "key", "", "with --rooms: an API key with the voice scope")
	cmd.Flags().StringVar(&rooms.Target.Agent, "agent", "support", "with --rooms: the agent the rooms are opened for")
	cmd.Flags().StringVar(&rooms.Target.Bare, "bare", "", "with --rooms: join the bare PeerConnections at this offer route of --base instead of the box's rooms")
	return cmd
}
