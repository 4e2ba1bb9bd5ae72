// Command stackbone is the box: `stackbone dev` runs it on a fresh machine
// with a private PostgreSQL cluster, `stackbone serve --config FILE` runs it
// in production, and the other commands operate it.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/telemetry"
)

// gcPercent is the box's GOGC unless the environment sets one. The call
// media allocate steadily (packets, frames, speech), and at Go's default of
// 100 a box carrying 60 browser calls collected about once a second; each
// collection's stop-the-world pauses (up to 6 ms here) and mark assists
// held the calls' goroutines runnable for 10 to 40 ms, which came out as
// agent frames a whole 20 ms tick late. At 400 the heap may grow to five
// times what is live instead of twice, and collections are a quarter as
// frequent (issue #17; README "Browser calls"). GOGC and GOMEMLIMIT in the
// environment take precedence as usual.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "stackbone",
		Short:         "The box: agents by phone, browser and text, with memory",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(devCmd(), serveCmd(), migrateCmd(), keysCmd(), runsCmd(), benchCmd(), storesCmd(), ragCmd(), toolsCmd())
	// STACKBONE_CPUPROFILE=FILE writes a CPU profile of the whole command
	// (used to find where a benchmark's time goes).
	if path := os.Getenv("STACKBONE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	if err := root.ExecuteContext(ctx); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "stackbone:", err)
		os.Exit(1)
	}
}

// newLogger logs text to stderr at STACKBONE_LOG_LEVEL (debug, info, warn,
// error; default info).
func newLogger() *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(os.Getenv("STACKBONE_LOG_LEVEL")) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	return slog.New(telemetry.LogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
}
