package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	sipgosip "github.com/emiago/sipgo/sip"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/box"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/rtpmux"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/voice"
)

// CallsConfig sets up the concurrent-calls load run.
type CallsConfig struct {
	// AdminURL is a server where the run may create and drop its database.
	// Required.
	AdminURL string
	// Steps are the numbers of concurrent calls tried, in order (default
	// 25, 50, 100, 200).
	Steps []int
	// Hold is how long each step's calls stay up once all are established
	// (default 20 s); the figures are measured in that window.
	Hold time.Duration
	// Rate is how many calls per second the generator starts (default 40),
	// so call setup is measured under load rather than as one burst.
	Rate int
	// STT is how the agent listens: "http" (default: one transcription
	// request per utterance), or "realtime" or "deepgram" (a live
	// transcription stream per call, over the scripted provider's
	// WebSocket endpoints).
	STT string
	// Scheduling is the box's media.scheduling ("realtime" as the shipped
	// configurations, or "normal"; empty: normal).
	Scheduling string
	// FailPrimary, when 2 or more, makes the agent's model a chain of two
	// scripted providers whose primary fails one chat request in
	// FailPrimary with an error status (2: half of them): the backup
	// answers, and the primary's circuit opens.
	FailPrimary int
	// Caller "process" places the calls from a separate `stackbone bench
	// caller` process (this executable), so the process's CPU is the box's
	// own; empty: a generator inside this process.
	Caller string
	// NoHog skips each step's second run beside a CPU hog.
	NoHog bool
	// RTPPort is the box's sip.rtpPort: 0 the shared port, -1 a port
	// per call.
	RTPPort int
	// BurstCalls, when above 0, are placed by SIPp at BurstRate a second
	// (each held BurstHold) once a step's calls are all up, as a
	// carrier's burst: the step reports their setup (CallStep.Burst).
	BurstCalls, BurstRate int
	BurstHold             time.Duration
	// Timeline, when above 0, logs the window's figures every Timeline
	// while each step's calls are held (pacing p99, the share sent 5 ms or
	// more off time, the process's and the machine's CPU), so a step that
	// holds at first and not later shows when it turned.
	Timeline time.Duration
	// FlightTrace, when set, is a file for the execution trace of the
	// two seconds around the first moment of a held window when a tenth
	// of the calls sent a frame 20 ms late or more (runtime/trace's flight
	// recorder): what the process ran while the pacers waited.
	FlightTrace string
	// Logger for progress; default discard.
	Logger *slog.Logger
}

// CallStep is what one step of concurrent calls measured.
type CallStep struct {
	Calls       int // concurrent calls asked
	Established int
	Failed      int
	// Setup is INVITE to 200 OK at the generator (the box opens the call,
	// recalls the person's memory and answers).
	Setup Figures
	// Pacing is how far the interval between two RTP packets the box sent
	// on a call strays from 20 ms, taken as the box sends them (p50, p99
	// and max to 0.1 ms).
	Pacing Figures
	// Late counts the packets sent 5 ms or more off their time, in ranges
	// (lateRanges): a whole round missed reads 20 ms, a stall less.
	Late []int64 `json:",omitempty"`
	// Jitter is the same as the generator received the packets, which adds
	// the generator's own scheduling on the shared cores.
	Jitter Figures
	// Packets received by the generator in the window, and missing sequence
	// numbers among them.
	Packets, Lost int64
	// Dropped are caller frames the box itself did not take in time.
	Dropped int64
	// Hog: the step ran with a CPU hog beside the box (a busy loop in its
	// own process, one core at most).
	Hog bool
	// BoxSetup is INVITE to 200 OK at the box (sip.Stats.Setup).
	BoxSetup Figures
	// CPUPerCall is the process's CPU time (box and generator) per call
	// and second of the window, as a fraction of one core.
	CPUPerCall float64
	// MemPerCall is the growth of the process's resident memory from the
	// step's start to the window's end, per call (bytes).
	MemPerCall int64
	// HeapPerCall is the growth of the Go heap and goroutine stacks in use
	// from the step's start (after a collection) to the window's end, per
	// call: what the calls hold, whatever the process's resident size kept
	// from earlier steps.
	HeapPerCall int64
	// CPU is the window's CPU by who spent it, in cores.
	CPU cpuShares
	// Turns completed with metrics, and the box's own share of each turn's
	// wire-to-wire time (minus the endpointing silence and the wait for
	// the first playable audio after the endpoint: see boxShare).
	Turns    int
	Overhead Figures
	// Unfinished is the calls still in progress two minutes after the
	// step's calls hung up (their completion, the memory save included,
	// had not happened): the turns and overhead then miss theirs.
	Unfinished int
	// CallerCPU is the caller process's CPU in the window, in cores (0
	// with the generator inside the box's process).
	CallerCPU float64
	// ModelCPU is the scripted model's process's CPU in the window, in
	// cores (0 with the model inside the box's process).
	ModelCPU float64
	// Shared is the window's packets and system calls on the shared RTP
	// port (zero with a port per call).
	Shared rtpmux.Stats
	// Burst is the SIPp burst placed while the step's calls were held
	// (nil without one).
	Burst *Burst
}

// CallsReport is the result of a calls load run.
type CallsReport struct {
	Setup []string
	Steps []CallStep
}

// Largest is the largest step without the CPU hog whose box-side pacing
// jitter p99 stayed under 5 ms with no packet lost or dropped and every
// call established and completed; 0 if none did.
func (r CallsReport) Largest() int {
	best := 0
	for _, s := range r.Steps {
		if !s.Hog && s.Failed == 0 && s.Established == s.Calls && s.Pacing.P99 < 5*time.Millisecond && s.Lost == 0 && s.Dropped == 0 &&
			s.Unfinished == 0 && s.Calls > best {
			best = s.Calls
		}
	}
	return best
}

// Print writes the report as a table.
func (r CallsReport) Print(w io.Writer) {
	fmt.Fprintln(w, "Concurrent SIP calls (RTP both ways, scripted speech and model)")
	for _, s := range r.Setup {
		fmt.Fprintln(w, "  "+s)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "calls\thog\tup\tfailed\tsetup p50 ms\tsetup p95 ms\tbox setup p95 ms\tpacing p50 ms\tpacing p99 ms\tpacing max ms\trx jitter p99 ms\tpackets\tlost\tdropped\tturns\toverhead p50 ms\toverhead p95 ms\tcpu %/call\tKB/call\t")
	for _, s := range r.Steps {
		hog := "-"
		if s.Hog {
			hog = "yes"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.2f\t%d\t\n", s.Calls, hog, s.Established, s.Failed,
			ms(s.Setup.P50), ms(s.Setup.P95), ms(s.BoxSetup.P95), ms(s.Pacing.P50), ms(s.Pacing.P99), ms(s.Pacing.Max), ms(s.Jitter.P99),
			s.Packets, s.Lost, s.Dropped, s.Turns, ms(s.Overhead.P50), ms(s.Overhead.P95), 100*s.CPUPerCall, s.MemPerCall/1024)
	}
	tw.Flush()
	for _, s := range r.Steps {
		if s.Unfinished > 0 {
			fmt.Fprintf(w, "%d calls: %d had not completed two minutes after their hang-up (turns and overhead leave them out)\n", s.Calls, s.Unfinished)
		}
		if len(s.Late) == len(lateRanges) && s.Pacing.N > 0 {
			var parts []string
			for i, r := range lateRanges {
				parts = append(parts, fmt.Sprintf("%s %d", r.name, s.Late[i]))
			}
			fmt.Fprintf(w, "%d calls: packets sent 5 ms or more off their time, of %d: %s\n", s.Calls, s.Pacing.N, strings.Join(parts, ", "))
		}
		if st := s.Shared; st.Sent > 0 && st.Received > 0 {
			fmt.Fprintf(w, "%d calls, shared RTP port: %.3f sendmmsg per packet sent (%d packets), %.3f recvmmsg per packet read (%d packets)\n",
				s.Calls, float64(st.SendCalls)/float64(st.Sent), st.Sent, float64(st.ReadCalls)/float64(st.Received), st.Received)
		}
	}
	for _, s := range r.Steps {
		hog := ""
		if s.Hog {
			hog = " with the hog"
		}
		caller := ""
		if s.CallerCPU > 0 {
			caller = fmt.Sprintf(", the caller process %.0f %%", 100*s.CallerCPU)
		}
		if s.ModelCPU > 0 {
			caller += fmt.Sprintf(", the model process %.0f %%", 100*s.ModelCPU)
		}
		fmt.Fprintf(w, "%d calls%s, the machine's CPU in the window, of one core: %s%s\n", s.Calls, hog, s.CPU, caller)
	}
	for _, s := range r.Steps {
		if b := s.Burst; b != nil {
			fmt.Fprintf(w, "%d calls held, a burst of %d calls at %d/s from SIPp (each up %s): box setup p50 %.0f, p95 %.0f, p99 %.0f, max %.0f ms; at SIPp p50 %.1f, p95 %.1f, max %.1f ms; %d calls succeeded, %d failed\n",
				s.Calls, b.Calls, b.Rate, b.Hold, ms(b.BoxSetup.P50), ms(b.BoxSetup.P95), ms(b.BoxSetup.P99), ms(b.BoxSetup.Max),
				ms(b.Setup.P50), ms(b.Setup.P95), ms(b.Setup.Max), b.Succeeded, b.Failed)
		}
	}
	fmt.Fprintf(w, "largest step with pacing jitter p99 < 5 ms, no loss: %d calls\n", r.Largest())
}

const benchCallAgents = `
agents:
  receptionist:
    model: openai/bench
    instructions: You answer the phone.
    memory: {identityKey: phoneNumber, read: true, save: true}
`

// Calls measures concurrent SIP calls on one process: the whole box (real
// PostgreSQL, memory recall and save, agent runtime, call controller, SIP
// server) and a load generator on loopback (the fleet: SIP through diago,
// every call's RTP carried by a goroutine per processor) that places the
// calls and streams speech-like audio (1 s of tone, 2.5 s of silence) at
// real time. The scripted provider transcribes, answers "Sure, I can help."
// and speaks a tone. With Caller "process" the generator and the provider
// run in processes of their own.
func Calls(ctx context.Context, cfg CallsConfig) (CallsReport, error) {
	if len(cfg.Steps) == 0 {
		cfg.Steps = []int{25, 50, 100, 200}
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 20 * time.Second
	}
	if cfg.Rate <= 0 {
		cfg.Rate = 40
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	pool, drop, err := database(ctx, cfg.AdminURL, 20, (config.Media{Scheduling: cfg.Scheduling}).Realtime())
	if err != nil {
		return CallsReport{}, err
	}
	defer drop()
	if err := warmPool(ctx, pool); err != nil {
		return CallsReport{}, err
	}

	stt := cfg.STT
	if stt == "" {
		stt = "http"
	}
	agents := benchCallAgents
	var backup *providertest.Server
	if cfg.FailPrimary > 1 {
		backup = startModel()
		defer backup.Close()
		backup.DiscardRequests()
		backup.RespondByModel(callsAnswer)
		agents = strings.Replace(agents, "model: openai/bench", "model: [openai/bench, backup/bench]", 1)
	}
	c, err := config.Parse([]byte(agents + "    voice: {sttMode: " + stt + "}\n"))
	if err != nil {
		return CallsReport{}, err
	}
	c.Media.Scheduling = cfg.Scheduling
	// With the caller in a process of its own, the scripted model has one
	// too: what the box's process spends is then the box's alone.
	var model *providertest.Server
	var remote *remoteModel
	if cfg.Caller == "process" {
		if remote, err = startRemoteModel(ctx, ModelConfig{FailEvery: cfg.FailPrimary, Realtime: c.Media.Realtime()}); err != nil {
			return CallsReport{}, err
		}
		defer func() { _, _ = remote.stop() }()
		c.Providers = map[string]config.Provider{"openai": {BaseURL: remote.URL()}}
	} else {
		model = startModel()
		defer model.Close()
		callsModel(model)
		if cfg.FailPrimary > 1 {
			model.SetFault(providertest.EndpointChat, providertest.Fault{Status: 500, Every: cfg.FailPrimary})
		}
		c.Providers = map[string]config.Provider{"openai": {BaseURL: model.URL()}}
	}
	if backup != nil {
		c.Providers["backup"] = config.Provider{BaseURL: backup.URL()}
	}
	c.Memory.Model = "openai/extractor"
	if backup != nil {
		c.Memory.Model = "backup/extractor" // the saves are not what this run measures
	}
	if cfg.BurstHold <= 0 {
		cfg.BurstHold = 2 * time.Second
	}
	if cfg.BurstRate <= 0 {
		cfg.BurstRate = 50
	}
	c.SIP = config.SIP{Addr: "127.0.0.1:0", MaxCalls: slices.Max(cfg.Steps) + max(cfg.BurstCalls, 0) + 10, RTPPort: cfg.RTPPort,
		Trunks: config.Trunks{Inbound: []config.InboundTrunk{{Name: "bench", Sources: []string{"127.0.0.1"},
			Routes: []config.Route{{Number: "*", Agent: "receptionist"}}}}}}
	served, stopBox, err := StartBox(ctx, pool, c, "bench-calls-key", box.Options{})
	if err != nil {
		return CallsReport{}, err
	}
	defer stopBox()
	srv := served.Phones

	// The generator's goroutines (its SIP stack's and its calls') carry a
	// profiler label, so a CPU profile tells the box from its load.
	var gen *fleet
	where := "box and load generator in one process"
	if cfg.Caller == "process" {
		where = "box in this process, the load generator in a `stackbone bench caller` process"
	} else {
		pprof.Do(ctx, pprof.Labels("side", "generator"), func(ctx context.Context) { gen, err = newFleet(ctx) })
		if err != nil {
			return CallsReport{}, err
		}
		defer gen.close()
	}

	rep := CallsReport{Setup: []string{
		fmt.Sprintf("%s on loopback, GOMAXPROCS=%d; PostgreSQL %s", where, runtimeProcs(), serverVersion(ctx, pool)),
		fmt.Sprintf("each step: calls started at %d/s, then held %s; G.711 PCMU, 20 ms packets both ways", cfg.Rate, cfg.Hold),
		"setup: INVITE to 200 OK (open, recall, answer); jitter: |interval - 20 ms| of the box's packets at the generator",
		"overhead: each turn's wire-to-wire less the endpointing silence and the wait for the first playable audio after the endpoint (controller metrics)",
		"speech-to-text: " + stt + map[string]string{"http": " (a transcription request per utterance)",
			"realtime": " (a live OpenAI Realtime transcription session per call)", "deepgram": " (a live Deepgram-compatible stream per call)"}[stt],
	}}
	rep.Setup = append(rep.Setup, schedulingNote(c.Media)+backendsNote())
	if cfg.RTPPort < 0 {
		rep.Setup = append(rep.Setup, "the box's RTP: a port per call (sip.rtpPort: -1), a read and a write system call per packet")
	} else {
		rep.Setup = append(rep.Setup, "the box's RTP: one shared port (sip.rtpPort), read with recvmmsg and sent with sendmmsg in batches")
	}
	rep.Setup = append(rep.Setup, "each step runs twice: alone, then with a CPU hog beside the box (a shell busy loop, one core at most)",
		map[bool]string{false: "cpu %/call: process CPU (box and generator) per call in the window, % of one core; KB/call: resident memory growth per call",
			true: "cpu %/call: the box's process CPU per call in the window, % of one core (the caller process apart); KB/call: resident memory growth per call"}[gen == nil],
		"the machine's CPU in the window: this process, the PostgreSQL backends of the run's database, and everything else the machine's processors ran (other processes, the hog, the kernel's own work), from /proc",
		"in a --cpuprofile the generator's goroutines carry the label side=generator and the scripted model's side=model")
	number := 0
	for _, n := range cfg.Steps {
		for _, hog := range []bool{false, true} {
			if hog && cfg.NoHog {
				continue
			}
			cfg.Logger.Info("bench calls: step", "calls", n, "hog", hog)
			stopHog := func() {}
			if hog {
				if stopHog, err = startHog(ctx); err != nil {
					return rep, err
				}
			}
			runtime.GC()
			before, since, rssBefore, heapBefore := srv.Stats(), time.Now(), residentBytes(), heapInUse()
			var heap1 int64
			var w0, w1 sip.Stats
			var cpu0, cpu1 cpuReading
			var rss1 int64
			var model0, model1 time.Duration
			var opened, closed time.Time
			burst, burstStarted := make(chan burstResult, 1), false
			stopWatches := func() {} // the held window's timeline and flight recorder, once started
			snapshot := func(end bool) {
				if end {
					stopWatches()
					w1, cpu1, rss1, heap1 = srv.Stats(), readCPU(ctx, pool), residentBytes(), heapInUse()
					if remote != nil {
						model1, closed = remote.cpu(), time.Now()
					}
				} else {
					w0, cpu0 = srv.Stats(), readCPU(ctx, pool)
					var stops []func()
					if cfg.Timeline > 0 {
						stops = append(stops, logTimeline(ctx, cfg.Logger, cfg.Timeline, n, srv.Stats, pool))
					}
					if cfg.FlightTrace != "" {
						stops = append(stops, traceLateRound(ctx, cfg.Logger, cfg.FlightTrace, n, srv.Stats))
					}
					stopWatches = func() {
						for _, stop := range stops {
							stop()
						}
					}
					if remote != nil {
						model0, opened = remote.cpu(), time.Now()
					}
					if cfg.BurstCalls > 0 {
						burstStarted = true
						go func() {
							b, err := runBurst(ctx, srv.Addr(), srv.Stats, cfg.BurstCalls, cfg.BurstRate, cfg.BurstHold)
							burst <- burstResult{b, err}
						}()
					}
				}
			}
			var step CallStep
			var callerCPU float64
			if gen != nil {
				step, err = gen.step(ctx, srv.Addr(), n, &number, cfg.Rate, cfg.Hold, snapshot)
			} else {
				step, callerCPU, err = remoteStep(ctx, srv.Addr(), n, &number, cfg.Rate, cfg.Hold, c.Media.Realtime(), snapshot)
			}
			stopHog()
			stopWatches()
			if err != nil {
				return rep, err
			}
			if burstStarted {
				r := <-burst
				if r.err != nil {
					return rep, fmt.Errorf("the burst: %w", r.err)
				}
				step.Burst = &r.Burst
			}
			step.Hog = hog
			win := w1.Sub(w0)
			step.Pacing = pacingFigures("pacing", win.Pacing)
			for _, r := range lateRanges {
				step.Late = append(step.Late, win.Pacing.Between(r.lo, r.hi))
			}
			step.Shared = win.Shared
			set := w1.Sub(before)
			step.BoxSetup = Figures{Name: "box setup", P50: set.SetupTime(50), P95: set.SetupTime(95), P99: set.SetupTime(99), Max: set.SetupTime(100)}
			if step.Established > 0 {
				step.CPU = cpu1.sharesSince(cpu0, cfg.Hold)
				step.CallerCPU = callerCPU
				if w := closed.Sub(opened).Seconds(); remote != nil && w > 0 && model0 >= 0 && model1 >= 0 {
					step.ModelCPU = (model1 - model0).Seconds() / w
				}
				if step.CPU.Others >= 0 {
					step.CPU.Others = max(0, step.CPU.Others-callerCPU-step.ModelCPU)
				}
				step.CPUPerCall = step.CPU.Process / float64(step.Established)
				step.MemPerCall = (rss1 - rssBefore) / int64(step.Established)
				step.HeapPerCall = (heap1 - heapBefore) / int64(step.Established)
			}
			// Wait for the calls' completions (memory saves) before the next step.
			deadline := time.Now().Add(2 * time.Minute)
			for (served.Calls.Active() > 0 || srv.Active() > 0) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			step.Unfinished = max(served.Calls.Active(), srv.Active())
			after := srv.Stats()
			step.Dropped = after.FramesDropped - before.FramesDropped
			step.Turns, step.Overhead = overhead(ctx, pool, since)
			rep.Steps = append(rep.Steps, step)
			cfg.Logger.Info("bench calls: step done", "calls", n, "hog", hog, "up", step.Established, "pacingP99Ms", ms(step.Pacing.P99))
		}
	}
	var served0 modelLine
	if remote != nil {
		if served0, err = remote.stop(); err != nil {
			return rep, fmt.Errorf("bench model: %w", err)
		}
	} else {
		served0 = servedBy(model)
	}
	if backup != nil {
		for _, v := range served.Models.Circuits() {
			if v.Provider == "openai" && v.Endpoint == provider.EndpointChat {
				rep.Setup = append(rep.Setup, fmt.Sprintf("the primary model failed %d chat requests (one in %d it was sent); its circuit opened %d times and is %s at the end",
					served0.Faulted, cfg.FailPrimary, v.Opened, v.State))
			}
		}
	}
	if stt != "http" {
		rep.Setup = append(rep.Setup, fmt.Sprintf("live transcription: %d streams opened, %d final transcripts sent", served0.Streams, served0.Finals))
	}
	return rep, nil
}

type burstResult struct {
	Burst
	err error
}

// startHog runs a busy loop in its own process (one core at most) until the
// returned stop is called or ctx ends.
func startHog(ctx context.Context) (stop func(), err error) {
	hctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(hctx, "sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("bench: cpu hog: %w", err)
	}
	return func() {
		cancel()
		_ = cmd.Wait()
	}, nil
}

// processCPU is the CPU time (user and system) the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// residentBytes is the process's resident memory (Linux; 0 elsewhere).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// heapInUse is the process's Go heap and goroutine stacks in use.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse)
}

// overhead reads the per-turn metrics the controller recorded on the calls
// that started since.
func overhead(ctx context.Context, pool *pgxpool.Pool, since time.Time) (int, Figures) {
	rec := &recorder{}
	rows, err := pool.Query(ctx, `SELECT metrics FROM stackbone_platform.voice_calls WHERE started_at >= $1`, since)
	if err != nil {
		return 0, Figures{}
	}
	defer rows.Close()
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			continue
		}
		var metrics []map[string]any
		if json.Unmarshal(raw, &metrics) != nil {
			continue
		}
		for _, m := range metrics {
			if d, ok := boxShare(m); ok {
				rec.add(d, nil)
			}
		}
	}
	f := rec.figures("overhead", false)
	return f.N, f
}

// boxShare is a turn's time in the box itself, from the controller's
// metrics: wire to wire less the endpointing silence and the wait for the
// first playable audio after the endpoint (what the providers took beyond
// the caller's speech). A turn recorded without that wait subtracts each
// provider stage instead (they did not overlap then). ok is false for a
// turn without wire to wire (unanswered).
func boxShare(m map[string]any) (time.Duration, bool) {
	w, ok := num(m["wireToWireMs"])
	if !ok {
		return 0, false
	}
	eou, _ := num(m["endOfUtteranceMs"])
	rest := eou
	if ready, ok := num(m["audioReadyMs"]); ok {
		rest += max(ready, 0)
	} else {
		for _, k := range []string{"speechToTextMs", "timeToFirstTokenMs", "textToSpeechFirstByteMs"} {
			v, _ := num(m[k])
			rest += v
		}
	}
	return time.Duration((w - rest) * float64(time.Millisecond)), true
}

// logTimeline logs every interval the figures of the interval just
// past, until the returned stop is called.
func logTimeline(ctx context.Context, log *slog.Logger, every time.Duration, calls int, stats func() sip.Stats, pool *pgxpool.Pool) (stop func()) {
	start := time.Now()
	last, lastCPU, lastAt := stats(), readCPU(ctx, pool), start
	return ticking(ctx, every, func(now time.Time) bool {
		w, cpu := stats(), readCPU(ctx, pool)
		p := w.Pacing.Sub(last.Pacing)
		sh := cpu.sharesSince(lastCPU, now.Sub(lastAt))
		off := 0.0
		if n := p.N(); n > 0 {
			off = 100 * float64(p.Between(5*time.Millisecond, time.Hour)) / float64(n)
		}
		machine := -1.0
		if cpu.machine >= 0 && lastCPU.machine >= 0 {
			machine = 100 * (cpu.machine - lastCPU.machine).Seconds() / now.Sub(lastAt).Seconds()
		}
		log.Info("bench calls: held", "calls", calls, "at", now.Sub(start).Round(time.Second).String(),
			"pacingP99Ms", p.Jitter(99).Seconds()*1000, "offTimePct", math.Round(off*100)/100,
			"processPct", math.Round(100*sh.Process), "dbPct", math.Round(100*sh.DB), "machinePct", math.Round(machine))
		last, lastCPU, lastAt = w, cpu, now
		return true
	})
}

// traceLateRound keeps a flight recording of the process's execution and
// writes it to file once, 300 ms after the first 50 ms in which a tenth of
// the calls sent a frame 20 ms late or more; stop ends the watch.
func traceLateRound(ctx context.Context, log *slog.Logger, file string, calls int, stats func() sip.Stats) (stop func()) {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: 2 * time.Second, MaxBytes: 64 << 20})
	if err := fr.Start(); err != nil {
		log.Warn("bench calls: flight recorder", "error", err)
		return func() {}
	}
	late := func() int64 { return stats().Pacing.Between(19800*time.Microsecond, time.Hour) }
	last, written := late(), time.Time{}
	stopTicking := ticking(ctx, 50*time.Millisecond, func(now time.Time) bool {
		n := late()
		switch {
		case written.IsZero() && n-last < int64(max(1, calls/10)):
			last = n
			return true
		case written.IsZero():
			written = now.Add(300 * time.Millisecond) // the rest of the stall
			log.Info("bench calls: a round came a frame late", "late", n-last)
			return true
		case now.Before(written):
			return true
		}
		f, err := os.Create(file)
		if err == nil {
			_, err = fr.WriteTo(f)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			log.Warn("bench calls: write the flight trace", "error", err)
		} else {
			log.Info("bench calls: the late round's trace written", "file", file)
		}
		return false
	})
	return sync.OnceFunc(func() {
		stopTicking()
		fr.Stop()
	})
}

// ticking calls fn every interval on a goroutine of its own until fn
// returns false, ctx ends or the returned stop is called (which waits for
// the goroutine and may be called more than once).
func ticking(ctx context.Context, every time.Duration, fn func(now time.Time) bool) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if !fn(now) {
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-finished
		})
	}
}

// lateRanges are the ranges of pacing error CallStep.Late counts.
var lateRanges = []struct {
	name   string
	lo, hi time.Duration
}{
	{"5-10 ms", 5 * time.Millisecond, 10 * time.Millisecond},
	{"10-19.8 ms", 10 * time.Millisecond, 19800 * time.Microsecond},
	{"19.8-20.2 ms", 19800 * time.Microsecond, 20200 * time.Microsecond},
	{"20.2-40 ms", 20200 * time.Microsecond, 40 * time.Millisecond},
	{"40 ms or more", 40 * time.Millisecond, time.Hour},
}

// pacingFigures are a pacing histogram's percentiles (SIP's and the
// embedded browser peer's, voice.Pacing).
func pacingFigures(name string, c voice.PacingCounts) Figures {
	return Figures{Name: name, N: int(c.N()), P50: c.Jitter(50), P90: c.Jitter(90), P95: c.Jitter(95), P99: c.Jitter(99), Max: c.Jitter(100)}
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	}
	return 0, false
}

// generator places calls from its own SIP user agent.
type generator struct {
	ua *sipgo.UserAgent
	dg *diago.Diago
}

func newGenerator(ctx context.Context) (*generator, error) {
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("loadgen"),
		sipgo.WithUserAgentTransactionLayerOptions(sipgosip.WithTransactionLayerLogger(slog.New(slog.DiscardHandler))),
		sipgo.WithUserAgentTransportLayerOptions(sipgosip.WithTransportLayerLogger(slog.New(slog.DiscardHandler))))
	if err != nil {
		return nil, err
	}
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.LocalAddr().(*net.UDPAddr).Port
	l.Close()
	dg := diago.NewDiago(ua, diago.WithLogger(slog.New(slog.DiscardHandler)),
		diago.WithTransport(diago.Transport{Transport: "udp", BindHost: "127.0.0.1", BindPort: port}))
	if err := dg.ServeBackground(ctx, func(d *diago.DialogServerSession) {}); err != nil {
		return nil, err
	}
	// The client sends from the listener once sipgo registered it.
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if c, err := ua.TransportLayer().GetConnection("udp", addr); err == nil && c != nil {
			break
		}
	}
	return &generator{ua: ua, dg: dg}, nil
}

func (g *generator) close() { g.ua.Close() }

// invite calls the box (its number 100) from caller and returns the
// established dialog and its media.
func (g *generator) invite(ctx context.Context, boxAddr, caller string) (*diago.DialogClientSession, *diago.DialogMedia, error) {
	return g.dial(ctx, boxAddr, "100", caller)
}

// dial calls number at the box from caller.
func (g *generator) dial(ctx context.Context, boxAddr, number, caller string) (*diago.DialogClientSession, *diago.DialogMedia, error) {
	var recipient sipgosip.Uri
	if err := sipgosip.ParseUri("sip:"+number+"@"+boxAddr, &recipient); err != nil {
		return nil, nil, err
	}
	host, _, _ := net.SplitHostPort(boxAddr)
	opts := diago.InviteOptions{Headers: []sipgosip.Header{&sipgosip.FromHeader{
		Address: sipgosip.Uri{Scheme: "sip", User: caller, Host: host}, Params: sipgosip.NewParams()}}}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return g.dg.Invite(ictx, recipient, opts)
}

// callStats is what one generated call measured.
type callStats struct {
	jitter  []time.Duration
	packets int64
	lost    int64
}

// placeFunc places the i-th call of a step from caller, measures what it
// receives between from and to, and hangs up at stop.
type placeFunc func(ctx context.Context, i int, caller string, from, to time.Time, stop <-chan struct{}) (callStats, time.Duration, error)

// runStep starts n calls at rate a second, opens the measurement window
// once all should be up, holds them for hold, and gathers what they
// measured.
func runStep(ctx context.Context, n int, number *int, rate int, hold time.Duration, window func(end bool), place placeFunc) (CallStep, error) {
	step := CallStep{Calls: n}
	setup := &recorder{}
	var mu sync.Mutex
	var all []callStats
	var wg sync.WaitGroup
	// The measurement window starts once every call should be up.
	ramp := time.Duration(n) * time.Second / time.Duration(rate)
	windowStart := time.Now().Add(ramp + time.Second)
	windowEnd := windowStart.Add(hold)
	stop := make(chan struct{})
	var snap sync.WaitGroup
	snap.Add(2)
	time.AfterFunc(time.Until(windowStart), func() { window(false); snap.Done() })
	time.AfterFunc(time.Until(windowEnd), func() { window(true); snap.Done(); close(stop) })
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		*number++
		caller := "+1555" + fmt.Sprintf("%07d", *number)
		wg.Add(1)
		go pprof.Do(ctx, pprof.Labels("side", "generator"), func(ctx context.Context) {
			defer wg.Done()
			st, d, err := place(ctx, i, caller, windowStart, windowEnd, stop)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				step.Failed++
				return
			}
			step.Established++
			setup.add(d, nil)
			all = append(all, st)
		})
	}
	wg.Wait()
	snap.Wait()
	step.Setup = setup.figures("setup", false)
	jit := &recorder{}
	for _, st := range all {
		for _, j := range st.jitter {
			jit.add(j, nil)
		}
		step.Packets += st.packets
		step.Lost += st.lost
	}
	step.Jitter = jit.figures("jitter", false)
	return step, nil
}
