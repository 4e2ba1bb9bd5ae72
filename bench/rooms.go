package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/realtime"
	"github.com/stackbone/box/internal/rtpmux"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/rooms/roomstest"
	"github.com/stackbone/box/voice"
)

// RoomsConfig sets up the browser-rooms load run on the embedded peer.
type RoomsConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	AdminURL string
	// Steps are the numbers of concurrent calls tried, in order (default
	// 1, 5, 10, 20, 40, 60, 80, 100, 150, 200, 250); the climb stops after
	// the first step whose pacing jitter p99 reaches JitterLimit or that has
	// errors or lost packets.
	Steps []int
	// Rate is how many calls a second join (default 40, as bench calls
	// starts SIP calls).
	Rate int
	// Hold is the measurement window (default 10 s): it opens once every
	// call of the step should be up and ends with the step's hang-ups. Each
	// call speaks 1.2 s every 3.5 s from half a second after it joined and
	// hears the agent's spoken answer.
	Hold time.Duration
	// JitterLimit is the pacing jitter p99 a step must stay under (default
	// 5 ms).
	JitterLimit time.Duration
	// UDPPort, when set, carries every room's media on that one UDP port
	// (rooms.embedded.udpPort) instead of a port per room.
	UDPPort int
	// Scheduling is the box's media.scheduling ("realtime" as the shipped
	// configurations, or "normal"; empty: normal); the bare PeerConnection
	// baseline runs with the same.
	Scheduling string
	// Caller "process" joins the calls from a separate `stackbone bench
	// caller --rooms` process and serves the scripted provider from a
	// `stackbone bench model` one, so this process's CPU is the box's
	// alone; empty: both in this process.
	Caller string
	// NoBare leaves out the bare PeerConnection baseline.
	NoBare bool
	// ByBox climbs while the box's own pacing p99 stays under JitterLimit
	// with no loss, whatever the jitter at the callers (which is also the
	// callers' own receive path).
	ByBox bool
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// RoomsStep is the figures of one step.
type RoomsStep struct {
	N int
	// Join is POST /api/voice/rooms to the caller's media connected
	// (offer, answer, ICE and DTLS on loopback).
	Join Figures
	// Jitter is how far the agent's audio packets stray from 20 ms apart
	// as the callers receive them.
	Jitter Figures
	// BoxPacing is the same where the box hands each packet to the
	// network (rooms.Service.Pacing), as bench calls measures SIP: the
	// callers' own receive path (pion's, in this process, on the same
	// cores) is not in it.
	BoxPacing Figures
	// Ticker is the baseline: a bare 20 ms time.Ticker in the same process
	// during the step, what the machine's scheduler gives anyway.
	Ticker Figures
	// Runnable is how long the process's goroutines waited runnable
	// before they ran during the step (runtime/metrics, sampled).
	Runnable Figures
	// Overhead is each turn's wire-to-wire time less the parts that are not
	// the box (endpointing silence, speech-to-text, the model's first
	// token, text-to-speech first byte), from the controller's metrics.
	Overhead Figures
	// WireToWire is the caller's last voiced frame sent to the first voiced
	// agent packet received, as the caller measures it.
	WireToWire Figures
	// Packets are the agent packets the callers received, Lost the
	// sequence numbers missing among them.
	Packets, Lost int64
	// CPUPerCall is the process's CPU time (the box, and the callers and
	// scripted model unless they run in processes of their own) per call
	// and second of the step, as a fraction of one core; MemPerCall the
	// growth of its resident memory per call (bytes).
	CPUPerCall float64
	MemPerCall int64
	// CPU is the window's CPU by who spent it, in cores; CallerCPU and
	// ModelCPU the caller's and the scripted model's processes' (0 when
	// they run in this one).
	CPU                 cpuShares
	CallerCPU, ModelCPU float64
	// Sends are the window's agent packets sent in batches on the one UDP
	// port and the system calls that sent them (zero with a port per
	// room).
	Sends rtpmux.SenderStats
	// ReadPackets and Reads are the window's packets read on the one UDP
	// port and the system calls that read them.
	ReadPackets, Reads int64
	// Bare is the in-run baseline: the same callers against bare
	// peers (barePeers) right after the box's step.
	Bare BareStep
}

// BareStep is the figures of the baseline at one step: the callers'
// received jitter, the bare peers' own pacing, what the process spent.
type BareStep struct {
	Join, Jitter, Pacing Figures
	Packets, Lost        int64
	CPUPerCall           float64
	MemPerCall           int64
	CPU                  cpuShares
	CallerCPU            float64
}

// Rooms measures concurrent browser calls on the embedded WebRTC peer with
// Go WebRTC callers on loopback: join time, the pacing jitter of agent
// audio and the per-turn overhead, at growing numbers of calls, beside a
// bare ticker's jitter measured in the same steps.
func Rooms(ctx context.Context, cfg RoomsConfig) (Report, []RoomsStep, error) {
	if len(cfg.Steps) == 0 {
		cfg.Steps = []int{1, 5, 10, 20, 40, 60, 80, 100, 150, 200, 250}
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 40
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 10 * time.Second
	}
	if cfg.JitterLimit <= 0 {
		cfg.JitterLimit = 5 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	maxN := 0
	for _, n := range cfg.Steps {
		maxN = max(maxN, n)
	}
	rt := (config.Media{Scheduling: cfg.Scheduling}).Realtime()
	pool, drop, err := database(ctx, cfg.AdminURL, 20, rt)
	if err != nil {
		return Report{}, nil, err
	}
	defer drop()
	if err := warmPool(ctx, pool); err != nil {
		return Report{}, nil, err
	}

	var load roomsLoad
	var modelURL string
	if cfg.Caller == "process" {
		if load.model, err = startRemoteModel(ctx, ModelConfig{Script: "rooms", Realtime: rt}); err != nil {
			return Report{}, nil, err
		}
		defer func() { _, _ = load.model.stop() }()
		modelURL, load.rt = load.model.URL(), rt
	} else {
		model := startModel()
		defer model.Close()
		roomsModel(model)
		modelURL = model.URL()
		callers, done := newRoomsCallers(maxN)
		defer done()
		load.callers = &callers
	}

	c, err := config.Parse([]byte("agents:\n  support:\n    model: openai/bench\n    instructions: You answer the phone.\n"))
	if err != nil {
		return Report{}, nil, err
	}
	c.Providers = map[string]config.Provider{"openai": {BaseURL: modelURL}}
	c.Rooms = config.Rooms{MaxRooms: maxN}
	c.Media.Scheduling = cfg.Scheduling
	if cfg.UDPPort != 0 {
		c.Rooms.Embedded = config.EmbeddedRooms{IPs: []string{"127.0.0.1"}, UDPPort: cfg.UDPPort}
	}
	served, stopBox, err := StartBox(ctx, pool, c, "bench-key", box.Options{})
	if err != nil {
		return Report{}, nil, err
	}
	defer stopBox()
	target, calls, rms := RoomsTarget{Base: served.URL, Key: served.Key}, served.Calls, served.Rooms
	var bare *barePeers
	if !cfg.NoBare {
		if bare, err = startBarePeers(); err != nil {
			return Report{}, nil, err
		}
		defer bare.close()
	}
	where := "the box, the callers and the scripted model in one process"
	if load.model != nil {
		where = "the box in this process, the callers in a `stackbone bench caller --rooms` process, the scripted model in a `stackbone bench model` one"
	}

	rep := Report{
		Title: "Browser rooms: concurrent calls on the embedded WebRTC peer (PCMU), Go WebRTC callers on loopback",
		Setup: []string{
			fmt.Sprintf("each step: calls join at %d/s, each speaks 1.2 s every 3.5 s and hears the spoken answer (about 1.1 s); scripted model and speech", cfg.Rate),
			fmt.Sprintf("figures in a window of %s that opens once every call should be up (as bench calls measures SIP), except join and the per-turn overhead (every call and turn)", cfg.Hold),
			"callers: pion's ICE agent, DTLS and SRTP without a PeerConnection (a third less CPU than one; the same peer on the wire), the box's SRTP decrypted where the socket is read, frames sent on shared pacers as the box's are",
			"join: POST /api/voice/rooms to media connected; jitter: |gap between agent packets - the gap of their RTP timestamps (20 ms within a talkspurt)| at the callers",
			"box pacing: the same gap where the box hands each packet to the network (as bench calls measures SIP; 100 µs buckets, to the upper edge)",
			"overhead: wire-to-wire less endpointing and the wait for the first playable audio after the endpoint (controller metrics)",
			where,
			"cpu %/call: this process's CPU per call in the window, % of one core; KB/call: its resident memory growth per call from the step's start",
			"the machine's CPU in the window: this process, the PostgreSQL backends of the run's database, and everything else the machine's processors ran (other processes, the kernel's own work), from /proc",
			"in a --cpuprofile the callers' goroutines carry the label side=generator, the bare PeerConnections' side=bare and the scripted model's side=model",
			"runnable wait: how long goroutines waited to run (runtime/metrics /sched/latencies, sampled; percentiles to the bucket's upper edge)",
			"bare PeerConnection (baseline, right after each step): the same callers against pion PeerConnections (PCMU, RTCP reports, as the box's peer was built before it ran on pion's ICE/DTLS/SRTP packages), each sending a paced 20 ms PCMU stream and decoding the caller's, nothing of the box between",
		},
	}
	var steps []RoomsStep
	largest, largestBox := 0, 0
	boxFailed := false     // a step failed by the box's figure: largestBox stays
	callersFailed := false // and by the callers': largest stays
	for _, n := range cfg.Steps {
		cfg.Logger.Info("rooms step", "calls", n)
		st, err := roomsStep(ctx, n, cfg, pool, target, load, rms, calls)
		if err != nil {
			return Report{}, nil, err
		}
		if bare != nil {
			if st.Bare, err = bareStep(ctx, n, cfg, pool, bare, load); err != nil {
				return Report{}, nil, err
			}
		}
		label := fmt.Sprintf("%d calls: ", n)
		st.Join.Name, st.Jitter.Name, st.Overhead.Name, st.WireToWire.Name = label+"join", label+"agent audio pacing jitter",
			label+"per-turn overhead", label+"wire to wire at the caller"
		st.BoxPacing.Name = label + "agent audio pacing at the box"
		st.Ticker.Name, st.Ticker.Baseline = label+"bare 20 ms ticker jitter", true
		st.Runnable.Name = label + "goroutine runnable wait"
		steps = append(steps, st)
		line := fmt.Sprintf("%d calls: %d agent packets received, %d lost; cpu %%/call %.2f, KB/call %d; goroutines once its calls ended: %d",
			n, st.Packets, st.Lost, 100*st.CPUPerCall, st.MemPerCall/1024, runtime.NumGoroutine())
		if st.Sends.Sent > 0 {
			line += fmt.Sprintf("; %.3f sendmmsg per agent packet sent on the one port (%d packets, %d system calls, %d failed)",
				float64(st.Sends.SendCalls)/float64(st.Sends.Sent), st.Sends.Sent, st.Sends.SendCalls, st.Sends.Failures)
		}
		if st.ReadPackets > 0 {
			line += fmt.Sprintf("; %.3f recvmmsg per packet read on it (%d packets)", float64(st.Reads)/float64(st.ReadPackets), st.ReadPackets)
		}
		machine := fmt.Sprintf("%d calls, the machine's CPU in the window, of one core: box %s%s", n, st.CPU, loadShares(st.CallerCPU, st.ModelCPU))
		if bare != nil {
			st.Bare.Jitter.Name, st.Bare.Pacing.Name = label+"bare PeerConnection: jitter at the callers", label+"bare PeerConnection: pacing at the peer"
			st.Bare.Pacing.Baseline = true
			rep.Figures = append(rep.Figures, st.Ticker, st.Bare.Jitter, st.Bare.Pacing)
			line += fmt.Sprintf("; bare PeerConnection: %d packets, %d lost, %d errors, cpu %%/call %.2f, KB/call %d",
				st.Bare.Packets, st.Bare.Lost, st.Bare.Join.Errors, 100*st.Bare.CPUPerCall, st.Bare.MemPerCall/1024)
			machine += fmt.Sprintf("; bare PeerConnection %s%s", st.Bare.CPU, loadShares(st.Bare.CallerCPU, 0))
		} else {
			rep.Figures = append(rep.Figures, st.Ticker)
		}
		rep.Figures = append(rep.Figures, st.Runnable, st.Jitter, st.BoxPacing, st.Join, st.Overhead, st.WireToWire)
		rep.Setup = append(rep.Setup, line, machine)
		clean := st.Join.Errors == 0 && st.Jitter.N > 0 && st.Overhead.Errors == 0 && st.Lost == 0
		boxFailed = boxFailed || !clean || st.BoxPacing.N == 0 || st.BoxPacing.P99 >= cfg.JitterLimit
		if !boxFailed {
			largestBox = n
		}
		callersFailed = callersFailed || !clean || st.Jitter.P99 >= cfg.JitterLimit
		if !callersFailed {
			largest = n
		}
		if cfg.ByBox && boxFailed || !cfg.ByBox && callersFailed {
			break
		}
	}
	climbedTo := " (steps until the callers' limit)"
	if cfg.ByBox {
		climbedTo = ""
	}
	media := "the box's media on a UDP port per room"
	if cfg.UDPPort != 0 {
		media = fmt.Sprintf("the box's media on one UDP port for every room (%d, rooms.embedded.udpPort)", cfg.UDPPort)
	}
	rep.Setup = append(rep.Setup, media, schedulingNote(c.Media)+backendsNote()+"; the bare PeerConnection baseline runs the same")
	rep.Setup = append(rep.Setup, fmt.Sprintf("largest number of concurrent calls with pacing jitter p99 under %s at the callers, no loss and no errors: %d", cfg.JitterLimit, largest),
		fmt.Sprintf("largest number of concurrent calls with pacing jitter p99 under %s at the box, no loss and no errors%s: %d", cfg.JitterLimit, climbedTo, largestBox))
	return rep, steps, nil
}

// loadShares names the CPU of the load's own processes, where they ran
// apart from the box.
func loadShares(caller, model float64) string {
	var s string
	if caller > 0 {
		s += fmt.Sprintf(", the caller process %.0f %%", 100*caller)
	}
	if model > 0 {
		s += fmt.Sprintf(", the model process %.0f %%", 100*model)
	}
	return s
}

// stepWindow is a step's measurement window, as bench calls has for SIP:
// it opens once every call should be up (the ramp and a second more) and
// lasts the hold; stop closes as it ends, when the callers hang up.
type stepWindow struct {
	from, to time.Time
	stop     chan struct{}
}

func (w stepWindow) in(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

// wait waits until t; false if the window ended or ctx did first.
func (w stepWindow) wait(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-w.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

// callerFigures are what a step's callers measured.
type callerFigures struct {
	join, jitter, w2w recorder
	packets, lost     atomic.Int64
}

// arrivals adds a caller's agent packets received in the window: each gap
// against the one the RTP clock says (RFC 3550's D): 20 ms within a
// talkspurt, the time that passed at the start of one, which the box marks
// and stamps (not a pacing error, as the box's own figure does not count it
// either); and the sequence numbers missing.
func (f *callerFigures) arrivals(arr []roomstest.Arrival, w stepWindow) {
	for i := range arr {
		if !w.in(arr[i].At) {
			continue
		}
		f.packets.Add(1)
		if i == 0 || !w.in(arr[i-1].At) {
			continue
		}
		if arr[i].Seq == arr[i-1].Seq+1 {
			want := time.Duration(arr[i].Timestamp-arr[i-1].Timestamp) * time.Second / roomstest.Rate
			f.jitter.add((arr[i].At.Sub(arr[i-1].At) - want).Abs(), nil)
		} else if d := arr[i].Seq - arr[i-1].Seq; d > 1 && d < 1000 {
			f.lost.Add(int64(d - 1))
		}
	}
}

// turnCycle is how often a caller starts to speak: 1.2 s of speech, the
// agent's answer (about 1.1 s after a 0.6 s wait), a pause.
const turnCycle = 3500 * time.Millisecond

// callerSpeech is what every caller says (read only).
var callerSpeech = roomstest.Speech(1200)

// speak has the caller say callerSpeech every turnCycle through the
// window, the first time half a second after joining; heard, if not nil,
// gets the time each utterance's last voiced frame went out once the turn's
// cycle is over.
func speak(ctx context.Context, c *roomstest.Client, w stepWindow, heard func(spoke time.Time)) {
	next := time.Now().Add(500 * time.Millisecond)
	for w.wait(ctx, next) {
		c.Say(callerSpeech)
		next = next.Add(turnCycle)
		// The speech takes its length to send; poll only past that.
		if !w.wait(ctx, time.Now().Add(time.Duration(len(callerSpeech))*time.Second/roomstest.Rate)) {
			return
		}
		for c.Saying() {
			if !w.wait(ctx, time.Now().Add(20*time.Millisecond)) {
				return
			}
		}
		spoke := c.LastVoice()
		if !w.wait(ctx, next) {
			return
		}
		if heard != nil {
			heard(spoke)
		}
		next = time.Now()
	}
}

// roomsLoad is where a run's browser callers and scripted model are: in
// this process (callers set) or each in a process of its own (remote set).
type roomsLoad struct {
	callers *roomstest.Options
	model   *remoteModel
	rt      bool // the caller process runs at real-time priority
}

// place runs one step of n calls on t and says what the callers measured.
func (l roomsLoad) place(ctx context.Context, cfg RoomsConfig, t RoomsTarget, n int, mark func(end bool)) (roomsCallerStep, error) {
	if l.callers != nil {
		return placeRooms(ctx, t, *l.callers, n, cfg.Rate, cfg.Hold, mark), nil
	}
	return remoteRooms(ctx, t, n, cfg.Rate, cfg.Hold, l.rt, mark)
}

// measure opens and closes a step's window on the process's and the
// model process's CPU; outside counts the CPU the load's processes spent
// in the window and takes it out of the machine's "everything else".
type stepMeter struct {
	load           *loadMeter
	model          *remoteModel
	model0, model1 time.Duration
	opened, closed time.Time
}

func (m *stepMeter) open(ctx context.Context) {
	m.load.open(ctx)
	if m.model != nil {
		m.model0, m.opened = m.model.cpu(), time.Now()
	}
}

func (m *stepMeter) close(ctx context.Context) {
	m.load.close(ctx)
	if m.model != nil {
		m.model1, m.closed = m.model.cpu(), time.Now()
	}
}

// outside is the load's processes' CPU in the window (callerCPU from the
// caller process), in cores; the machine's "everything else" no longer
// counts them.
func (m *stepMeter) outside(callerCPU float64) (caller, model float64) {
	if w := m.closed.Sub(m.opened).Seconds(); m.model != nil && w > 0 && m.model0 >= 0 && m.model1 >= 0 {
		model = (m.model1 - m.model0).Seconds() / w
	}
	if sh := &m.load.load.shares; sh.Others >= 0 {
		sh.Others = max(0, sh.Others-callerCPU-model)
	}
	return callerCPU, model
}

// roomsStep runs n calls on the box and collects their figures.
func roomsStep(ctx context.Context, n int, cfg RoomsConfig, pool *pgxpool.Pool, t RoomsTarget, load roomsLoad, rms *rooms.Service, calls *voice.Manager) (RoomsStep, error) {
	var ticker, overhead recorder
	var waits0 schedWaits
	var runnable Figures
	var pacing0 voice.PacingCounts
	var sends0 rtpmux.SenderStats
	var readPackets0, reads0 int64
	st := RoomsStep{N: n}
	meter := stepMeter{load: newLoadMeter(pool, n, cfg.Hold), model: load.model}
	stopTicker := make(chan struct{})
	tickDone := make(chan struct{})
	cs, err := load.place(ctx, cfg, t, n, func(end bool) {
		if !end {
			meter.open(ctx)
			waits0, pacing0, sends0 = readSchedWaits(), rms.Pacing(), rms.SharedSends()
			readPackets0, reads0 = rms.SharedReads()
			go func() { // the baseline, through the window
				defer close(tickDone)
				t := time.NewTicker(20 * time.Millisecond)
				defer t.Stop()
				last := time.Now()
				for {
					select {
					case <-stopTicker:
						return
					case now := <-t.C:
						ticker.add((now.Sub(last) - 20*time.Millisecond).Abs(), nil)
						last = now
					}
				}
			}()
			return
		}
		meter.close(ctx)
		st.BoxPacing = pacingFigures("", rms.Pacing().Sub(pacing0))
		sends := rms.SharedSends()
		st.Sends = rtpmux.SenderStats{Sent: sends.Sent - sends0.Sent, SendCalls: sends.SendCalls - sends0.SendCalls, Failures: sends.Failures - sends0.Failures}
		readPackets, reads := rms.SharedReads()
		st.ReadPackets, st.Reads = readPackets-readPackets0, reads-reads0
		runnable = readSchedWaits().figures(waits0, "runnable")
		close(stopTicker)
	})
	if err != nil {
		return st, err
	}
	select {
	case <-tickDone:
	case <-ctx.Done():
		return st, ctx.Err()
	}
	// The controller's per-turn metrics, once each call completed.
	for _, id := range cs.CallIDs {
		var rec voice.CallRecord
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := calls.Get(ctx, id)
			if err == nil && r.Status == "ended" {
				rec = r
				break
			}
			if time.Now().After(deadline) {
				overhead.add(0, fmt.Errorf("call %s did not complete", id))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(rec.Metrics) == 0 && rec.ID != "" {
			overhead.add(0, fmt.Errorf("call %s has no turn metrics", id))
		}
		for i, m := range rec.Metrics {
			d, ok := boxShare(m)
			if !ok && i == len(rec.Metrics)-1 {
				// The caller hung up as the window closed, before the
				// answer to its last words played: no wire to wire.
				continue
			}
			if !ok {
				overhead.add(0, fmt.Errorf("a turn without wire-to-wire, not the call's last"))
				continue
			}
			overhead.add(max(d, 0), nil)
		}
	}
	st.CallerCPU, st.ModelCPU = meter.outside(cs.cpu)
	lo := meter.load.load
	st.Join, st.Jitter, st.Ticker = cs.Join, cs.Jitter, ticker.figures("ticker", true)
	st.Overhead, st.WireToWire, st.Runnable = overhead.figures("overhead", false), cs.WireToWire, runnable
	st.Packets, st.Lost, st.CPUPerCall, st.MemPerCall, st.CPU = cs.Packets, cs.Lost, lo.cpuPerCall, lo.memPerCall, lo.shares
	return st, nil
}

// bareStep runs the same n callers against the bare PeerConnections.
func bareStep(ctx context.Context, n int, cfg RoomsConfig, pool *pgxpool.Pool, b *barePeers, load roomsLoad) (BareStep, error) {
	if (config.Media{Scheduling: cfg.Scheduling}).Realtime() {
		if release, err := realtime.Hold(); err == nil { // as the box holds it while its calls are in progress
			defer release()
		}
	}
	var pacing0 voice.PacingCounts
	var st BareStep
	meter := stepMeter{load: newLoadMeter(pool, n, cfg.Hold)}
	cs, err := load.place(ctx, cfg, RoomsTarget{Base: b.url, Bare: b.offerURL()}, n, func(end bool) {
		if !end {
			meter.open(ctx)
			pacing0 = b.pacing.Counts()
			return
		}
		meter.close(ctx)
		st.Pacing = pacingFigures("", b.pacing.Counts().Sub(pacing0))
	})
	if err != nil {
		return st, err
	}
	b.settle(ctx)
	st.CallerCPU, _ = meter.outside(cs.cpu)
	lo := meter.load.load
	st.Join, st.Jitter, st.Packets, st.Lost = cs.Join, cs.Jitter, cs.Packets, cs.Lost
	st.CPUPerCall, st.MemPerCall, st.CPU = lo.cpuPerCall, lo.memPerCall, lo.shares
	return st, nil
}

// stepLoad is what a step's calls cost the process in the window: CPU time
// (box or bare peers, and the callers and scripted model when they run in
// it) per call and second as a fraction of one core, resident memory
// growth per call from the step's start, and the window's CPU by who spent
// it.
type stepLoad struct {
	cpuPerCall float64
	memPerCall int64
	shares     cpuShares
}

// loadMeter measures a step's stepLoad: started as the step starts, opened
// and closed with its window.
type loadMeter struct {
	pool *pgxpool.Pool
	n    int
	hold time.Duration
	rss0 int64
	cpu0 cpuReading
	load stepLoad
}

func newLoadMeter(pool *pgxpool.Pool, n int, hold time.Duration) *loadMeter {
	return &loadMeter{pool: pool, n: n, hold: hold, rss0: residentBytes()}
}

func (m *loadMeter) open(ctx context.Context) { m.cpu0 = readCPU(ctx, m.pool) }

func (m *loadMeter) close(ctx context.Context) {
	cpu, rss := readCPU(ctx, m.pool), residentBytes()
	shares := cpu.sharesSince(m.cpu0, m.hold)
	m.load = stepLoad{cpuPerCall: shares.Process / float64(m.n), memPerCall: (rss - m.rss0) / int64(m.n), shares: shares}
}

// runCallers starts n calls at rate a second, each in a goroutine
// labelled side=generator for a CPU profile, and holds them through a
// window of hold that opens once every call should be up; mark runs as
// the window opens (false) and as it closes (true), before the callers
// hang up. A call's error counts in join.
func runCallers(ctx context.Context, n, rate int, hold time.Duration, join *recorder, mark func(end bool), call func(context.Context, stepWindow) error) {
	start := time.Now()
	ramp := time.Duration(n) * time.Second / time.Duration(rate)
	w := stepWindow{from: start.Add(ramp + time.Second), stop: make(chan struct{})}
	w.to = w.from.Add(hold)
	var marks sync.WaitGroup
	marks.Add(2)
	time.AfterFunc(time.Until(w.from), func() {
		defer marks.Done()
		mark(false)
	})
	time.AfterFunc(time.Until(w.to), func() {
		defer marks.Done()
		mark(true)
		close(w.stop)
	})
	var wg sync.WaitGroup
	gctx := pprof.WithLabels(ctx, pprof.Labels("side", "generator"))
	for i := 0; i < n; i++ {
		if !sleepCtx(ctx, time.Until(start.Add(time.Duration(i)*time.Second/time.Duration(rate)))) {
			break
		}
		wg.Add(1)
		go pprof.Do(gctx, pprof.Labels(), func(ctx context.Context) {
			defer wg.Done()
			if err := call(ctx, w); err != nil {
				join.add(0, err)
			}
		})
	}
	wg.Wait()
	marks.Wait()
}

// benchCall is one caller: open a room, join, speak every turnCycle and
// hear the answers until the window ends, hang up.
func benchCall(ctx context.Context, w stepWindow, t RoomsTarget, callers roomstest.Options, f *callerFigures) (string, error) {
	start := time.Now()
	agent := t.Agent
	if agent == "" {
		agent = "support"
	}
	base, key := t.Base, t.Key
	body, _ := json.Marshal(map[string]string{"agent": agent})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/voice/rooms", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := callers.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	var env struct {
		Data  rooms.View `json:"data"`
		Error *struct{ Code, Message string }
	}
	err = json.NewDecoder(resp.Body).Decode(&env)
	resp.Body.Close()
	if err != nil || env.Error != nil || env.Data.Join == nil {
		return "", fmt.Errorf("bench: open room: %v %+v", err, env.Error)
	}
	jctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	callers.BaseURL, callers.Key, callers.OfferURL = base, key, env.Data.Join.OfferURL
	c, err := roomstest.Join(jctx, callers)
	cancel()
	if err != nil {
		return "", err
	}
	f.join.add(time.Since(start), nil)
	defer c.Close()
	speak(ctx, c, w, func(spoke time.Time) {
		if heard, ok := c.FirstVoicedAfter(spoke); ok {
			f.w2w.add(heard.Sub(spoke), nil)
		} else {
			f.w2w.add(0, errors.New("bench: no spoken answer within the turn"))
		}
	})
	f.arrivals(c.Arrivals(), w)
	return env.Data.CallID, nil
}
