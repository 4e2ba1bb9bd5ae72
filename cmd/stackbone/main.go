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
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stackbone/box/telemetry"
)

// gcPercent is the box's GOGC unless the environment sets one. The call
// media allocate steadily (packets, frames, speech) and joining callers
// allocate in bursts (DTLS, ICE, SRTP), and every collection costs the
// calls: at Go's default of 100 a box carrying 60 browser calls collected
// about once a second, and each collection's stop-the-world pauses (up to
// 6 ms here) and mark assists (one collection's marking took 30 to 60 ms
// of one of the two cores at 200 calls) held the calls' goroutines
// runnable long enough to send agent frames late. At 1000 the heap may
// grow to eleven times what is live, so a collection seldom falls inside
// a busy stretch of calls: at 200 browser calls the callers' received
// jitter p99 measured 3.1 to 7.3 ms against 4.2 to 12.9 at 400 (README
// "Browser calls"). memoryShare bounds what that may cost.
const gcPercent = 1000

// memoryShare divides the machine's (or its container's) memory into what
// the box's heap may use (half) before the collector works harder to stay under
// it (Go's soft memory limit): a large live heap (a big retrieval index)
// must not grow to gcPercent times itself.
const memoryShare = 2

// tuneGC sets the collector as above unless the environment's GOGC or
// GOMEMLIMIT says otherwise.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := memoryAvailable(os.ReadFile); total > 0 {
			debug.SetMemoryLimit(total / memoryShare)
		}
	}
}

// memoryAvailable is the machine's memory (MemTotal), or its cgroup's
// limit when that is lower (a container); 0 when neither can be read.
func memoryAvailable(read func(string) ([]byte, error)) int64 {
	var total int64
	if b, err := read("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					total = kb << 10
				}
			}
		}
	}
	// cgroup v2, then v1 (which says "no limit" with a huge number).
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := read(path)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 && (total == 0 || v < total) {
			total = v
		}
	}
	return total
}

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "stackbone",
		Short:         "The box: agents by phone, browser and text, with memory",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(devCmd(), serveCmd(), migrateCmd(), keysCmd(), runsCmd(), benchCmd(), storesCmd(), ragCmd(), toolsCmd(), campaignsCmd())
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
