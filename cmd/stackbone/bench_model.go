//go:build bench

package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/bench"
)

// benchModelCmd is `stackbone bench model`: the scripted provider of bench
// calls and bench capacity in a process of its own, so the box's process
// measures only the box.
func benchModelCmd() *cobra.Command {
	var cfg bench.ModelConfig
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Serve the calls load's scripted provider on loopback until standard input ends (bench calls runs it)",
		Long: `Serves the scripted provider of bench calls (transcriptions, chat answers, speech, live
transcription streams) on a loopback port and prints {"url":...}; when standard input ends
it prints what it served ({"faulted":..,"streams":..,"finals":..}) and exits. bench calls
--caller process and bench capacity run it beside the caller process.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			slog.SetDefault(slog.New(slog.DiscardHandler))
			return bench.RunModel(cmd.Context(), cfg, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&cfg.FailEvery, "fail-every", 0, "N ≥ 2: fail one chat request in N with a 500")
	cmd.Flags().StringVar(&cfg.Script, "script", "", "rooms: answer as bench rooms' model; empty: as bench calls'")
	cmd.Flags().BoolVar(&cfg.Realtime, "realtime", false, "run at real-time priority, as a box under media.scheduling realtime")
	return cmd
}
