package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stackbone/box/internal/realtime"
)

// CallerConfig is one step of calls that `stackbone bench caller` places
// from its own process.
type CallerConfig struct {
	Box   string // the box's SIP address
	Calls int
	First int // the callers' numbers follow this one
	Rate  int // calls started per second
	Hold  time.Duration
	// Realtime runs the process's threads at real-time priority, as the
	// box's under media.scheduling realtime: the stand-in for the network
	// and the carrier must not wait behind the box it loads.
	Realtime bool
}

// callerLine is one line the caller process writes: the window opening or
// closing, then the step it measured (a CallStep, or a roomsCallerStep
// for browser calls).
type callerLine[T any] struct {
	Window string `json:"window,omitempty"` // "start" or "end"
	Step   *T     `json:"step,omitempty"`
	Error  string `json:"error,omitempty"`
}

// RunCaller places one step of calls on the box (as Calls' generator does:
// each call streams speech-like audio at real time and measures what the
// box sends) and writes JSON lines to out: {"window":"start"} and
// {"window":"end"} as the measurement window opens and closes, then
// {"step":...}.
func RunCaller(ctx context.Context, cfg CallerConfig, out io.Writer) error {
	standInGC()
	emit := lineWriter[CallStep](out)
	if cfg.Realtime {
		if release, err := realtime.Hold(); err == nil {
			defer release()
		}
	}
	gen, err := newFleet(ctx)
	if err != nil {
		emit(callerLine[CallStep]{Error: err.Error()})
		return err
	}
	defer gen.close()
	number := cfg.First
	step, err := gen.step(ctx, cfg.Box, cfg.Calls, &number, max(cfg.Rate, 1), cfg.Hold, windowLines(emit))
	if err != nil {
		emit(callerLine[CallStep]{Error: err.Error()})
		return err
	}
	emit(callerLine[CallStep]{Step: &step})
	return nil
}

// lineWriter writes a caller process's lines to out, from any goroutine.
func lineWriter[T any](out io.Writer) func(callerLine[T]) {
	enc := json.NewEncoder(out)
	var mu sync.Mutex
	return func(l callerLine[T]) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(l)
	}
}

// windowLines reports the measurement window opening and closing.
func windowLines[T any](emit func(callerLine[T])) func(end bool) {
	return func(end bool) {
		w := "start"
		if end {
			w = "end"
		}
		emit(callerLine[T]{Window: w})
	}
}

// remoteStep runs one step in a `stackbone bench caller` process (this
// executable): window is called as the process reports the window opening
// and closing; cpu is the process's CPU time in the window, in cores.
func remoteStep(ctx context.Context, boxAddr string, n int, number *int, rate int, hold time.Duration, rt bool, window func(end bool)) (step CallStep, cpu float64, err error) {
	first := *number
	*number += n
	return callerProcess[CallStep](ctx, []string{"--box", boxAddr, "--calls", strconv.Itoa(n), "--first", strconv.Itoa(first),
		"--rate", strconv.Itoa(rate), "--hold", hold.String(), "--realtime=" + strconv.FormatBool(rt)}, window)
}

// callerProcess runs `stackbone bench caller` (this executable) with args
// and returns the step it measured: window is called as the process
// reports the window opening and closing; cpu is the process's CPU time in
// the window, in cores.
func callerProcess[T any](ctx context.Context, args []string, window func(end bool)) (step T, cpu float64, err error) {
	exe, err := os.Executable()
	if err != nil {
		return step, 0, err
	}
	cmd := exec.CommandContext(ctx, exe, append([]string{"bench", "caller"}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return step, 0, err
	}
	if err := cmd.Start(); err != nil {
		return step, 0, fmt.Errorf("bench caller: %w", err)
	}
	var cpu0 time.Duration
	var opened time.Time
	var got *T
	var failed string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l callerLine[T]
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch {
		case l.Window == "start":
			cpu0, opened = pidCPU(cmd.Process.Pid), time.Now()
			window(false)
		case l.Window == "end":
			cpu1 := pidCPU(cmd.Process.Pid)
			window(true)
			if s := time.Since(opened).Seconds(); s > 0 && cpu0 >= 0 && cpu1 >= 0 {
				cpu = (cpu1 - cpu0).Seconds() / s
			}
		case l.Step != nil:
			got = l.Step
		case l.Error != "":
			failed = l.Error
		}
	}
	werr := cmd.Wait()
	if got == nil {
		if failed == "" && werr != nil {
			failed = werr.Error()
		}
		return step, 0, fmt.Errorf("bench caller: %s", failed)
	}
	return *got, cpu, nil
}

// pidCPU is the CPU time a process used so far (user and system), -1 when
// it cannot be read.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// Fields after the command (which may hold spaces): utime is the 14th
	// field of the line, stime the 15th, in clock ticks of USER_HZ (100 on
	// every mainstream build).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}
