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

// benchCallsCmd is `stackbone bench calls`: concurrent SIP calls with RTP
// both ways, stepped up, reporting RTP pacing jitter, loss, call setup time
// and the box's own per-turn overhead, and the largest step that held.
func benchCallsCmd() *cobra.Command {
	var cfg bench.CallsConfig
	var dataDir string
	cmd := &cobra.Command{
		Use:   "calls",
		Short: "Concurrent SIP calls: RTP pacing jitter, loss, call setup and per-turn overhead at each step",
		Long: `Creates a throwaway database on STACKBONE_DATABASE_URL's server (else the private
cluster of stackbone dev under --data-dir), starts the whole box on loopback (memory,
agent runtime, call controller, SIP server) with the scripted model, speech-to-text and
text-to-speech, and a load generator (SIP through diago, every call's RTP on a goroutine
per processor) in the same process, or with --caller process the generator in a
stackbone bench caller process and the scripted provider in a stackbone bench model
process. At each step the generator places that many calls, streams speech-like audio
(1 s of tone, 2.5 s of quiet) at real time on each, and measures the box's packets; the
box answers every turn. With --burst, SIPp places a burst of new calls while each step's
calls are held, and the step reports their setup as the box and SIPp measured it.`,
		RunE: benchRunE(&dataDir, func(ctx context.Context, admin string, log *slog.Logger) (bench.CallsReport, error) {
			cfg.AdminURL, cfg.Logger = admin, log
			return bench.Calls(ctx, cfg)
		}),
	}
	cmd.Flags().IntSliceVar(&cfg.Steps, "steps", []int{25, 50, 100, 200}, "concurrent calls at each step")
	cmd.Flags().DurationVar(&cfg.Hold, "hold", 20*time.Second, "how long each step's calls stay up once established")
	cmd.Flags().IntVar(&cfg.Rate, "rate", 40, "calls started per second")
	cmd.Flags().StringVar(&cfg.STT, "stt", "http", "how the agent listens: http (a request per utterance), realtime or deepgram (a live stream per call)")
	cmd.Flags().IntVar(&cfg.FailPrimary, "fail-primary", 0, "N ≥ 2: the agent's model is a chain of two providers whose primary fails one chat request in N (2: half)")
	cmd.Flags().StringVar(&cfg.Scheduling, "scheduling", config.SchedulingRealtime, "the box's media.scheduling: realtime (as the shipped configurations) or normal")
	cmd.Flags().StringVar(&cfg.Caller, "caller", "", "process: place the calls from a separate `stackbone bench caller` process; empty: a generator in this process")
	cmd.Flags().BoolVar(&cfg.NoHog, "no-hog", false, "skip each step's second run beside a CPU hog")
	cmd.Flags().IntVar(&cfg.RTPPort, "rtp-port", 0, "the box's sip.rtpPort: 0 one shared port read and sent in batches, -1 a port per call")
	cmd.Flags().IntVar(&cfg.BurstCalls, "burst", 0, "N > 0: once each step's calls are up, SIPp places N more calls at --burst-rate, as a carrier's burst, and the step reports their setup")
	cmd.Flags().IntVar(&cfg.BurstRate, "burst-rate", 50, "calls a second of the burst")
	cmd.Flags().DurationVar(&cfg.BurstHold, "burst-hold", 2*time.Second, "how long each call of the burst stays up")
	cmd.Flags().DurationVar(&cfg.Timeline, "timeline", 0, "D > 0: log the held window's figures every D (pacing p99, packets 5 ms or more off time, CPU), so a step that turns shows when")
	cmd.Flags().StringVar(&cfg.FlightTrace, "flight-trace", "", "a file for the execution trace of the two seconds around the first moment a tenth of the calls sent a frame 20 ms late (go tool trace)")
	cmd.Flags().StringVar(&dataDir, "data-dir", ".stackbone", "where the private PostgreSQL cluster lives")
	return cmd
}
