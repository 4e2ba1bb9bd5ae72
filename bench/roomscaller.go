package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/stackbone/box/internal/pace"
	"github.com/stackbone/box/internal/rawudp"
	"github.com/stackbone/box/internal/realtime"
	"github.com/stackbone/box/rooms/roomstest"
)

// RoomsTarget is where browser callers join: the box's rooms (opened with
// POST /api/voice/rooms on Base with Key, for Agent: default "support") or,
// when Bare is set, the bare PeerConnections of the baseline at that offer
// URL.
type RoomsTarget struct {
	Base, Key, Agent string
	Bare             string
}

// RoomsCallerConfig is one step of browser calls that `stackbone bench
// caller --rooms` places from its own process.
type RoomsCallerConfig struct {
	Target   RoomsTarget
	Calls    int
	Rate     int // calls joined per second
	Hold     time.Duration
	Realtime bool // as CallerConfig.Realtime
}

// roomsCallerStep is what a step's browser callers measured: join time,
// the jitter of the agent's packets as they arrived, wire-to-wire, the
// packets and the sequence numbers missing, and the calls the box opened.
type roomsCallerStep struct {
	Join, Jitter, WireToWire Figures
	Packets, Lost            int64
	CallIDs                  []string
	// cpu is the caller process's CPU in the window, in cores (0 when
	// the callers run in the box's process).
	cpu float64
}

// newRoomsCallers is how a load's browser callers join: Direct (pion's
// ICE, DTLS and SRTP without a PeerConnection) with their frames on shared
// pacers, as the box's own go out (one wake-up for the frames of many
// callers, not one per caller and frame), and where the process may open
// a raw socket, each pacer round's packets in one system call
// (roomstest.Options.Raw). done closes what it opened.
func newRoomsCallers(n int) (opt roomstest.Options, done func()) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}}
	opt = roomstest.Options{HTTP: client, Direct: true,
		Pacers: pace.NewGroup(runtime.GOMAXPROCS(0), clock.New(), 20*time.Millisecond, time.Millisecond)}
	raw, err := rawudp.New(1500 - 28)
	if err != nil {
		return opt, func() {} // not permitted: each packet is written on its own
	}
	opt.Raw = raw
	return opt, func() { _ = raw.Close() }
}

// placeRooms runs one step of n browser calls on t in this process: mark
// runs as the window opens (false) and closes (true).
func placeRooms(ctx context.Context, t RoomsTarget, callers roomstest.Options, n, rate int, hold time.Duration, mark func(end bool)) roomsCallerStep {
	var f callerFigures
	var mu sync.Mutex
	var ids []string
	runCallers(ctx, n, rate, hold, &f.join, mark, func(ctx context.Context, w stepWindow) error {
		if t.Bare != "" {
			return bareCall(ctx, w, t.Base, t.Bare, callers, &f)
		}
		id, err := benchCall(ctx, w, t, callers, &f)
		if err != nil {
			return err
		}
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		return nil
	})
	return roomsCallerStep{Join: f.join.figures("join", t.Bare != ""), Jitter: f.jitter.figures("jitter", t.Bare != ""),
		WireToWire: f.w2w.figures("w2w", false), Packets: f.packets.Load(), Lost: f.lost.Load(), CallIDs: ids}
}

// RunRoomsCaller places one step of browser calls (as bench rooms' callers
// do) and writes JSON lines to out: {"window":"start"} and
// {"window":"end"} as the measurement window opens and closes, then
// {"step":...}.
func RunRoomsCaller(ctx context.Context, cfg RoomsCallerConfig, out io.Writer) error {
	standInGC()
	emit := lineWriter[roomsCallerStep](out)
	if cfg.Calls <= 0 || cfg.Rate <= 0 || cfg.Hold <= 0 {
		err := fmt.Errorf("bench caller: --calls, --rate and --hold must be positive")
		emit(callerLine[roomsCallerStep]{Error: err.Error()})
		return err
	}
	if cfg.Realtime {
		if release, err := realtime.Hold(); err == nil {
			defer release()
		}
	}
	callers, done := newRoomsCallers(cfg.Calls)
	defer done()
	step := placeRooms(ctx, cfg.Target, callers, cfg.Calls, cfg.Rate, cfg.Hold, windowLines(emit))
	emit(callerLine[roomsCallerStep]{Step: &step})
	return nil
}

// remoteRooms runs one step of browser calls in a `stackbone bench caller
// --rooms` process (this executable); window is called as the process
// reports the window opening and closing.
func remoteRooms(ctx context.Context, t RoomsTarget, n, rate int, hold time.Duration, rt bool, window func(end bool)) (roomsCallerStep, error) {
	step, cpu, err := callerProcess[roomsCallerStep](ctx, []string{"--rooms", "--base", t.Base, "--key", t.Key, "--agent", t.Agent,
		"--bare", t.Bare, "--calls", strconv.Itoa(n), "--rate", strconv.Itoa(rate), "--hold", hold.String(),
		"--realtime=" + strconv.FormatBool(rt)}, window)
	step.cpu = cpu
	return step, err
}
