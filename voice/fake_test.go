package voice

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
)

// The call tests run whole calls on a mock clock: the test is the caller's
// side of the wire, pushing one 20 ms frame per step and advancing the
// clock by one frame, so the controller's VAD, endpointing, playout,
// barge-in, media timeout and maximum length see exactly the frames the
// test says. Only the provider is a stand-in (providertest, real HTTP).

const testAgents = `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
  mailer:
    model: openai/chat
    memory: {identityKey: email, read: true, save: true}
  talker:
    model: openai/chat
    memory: {identityKey: phoneNumber, read: true, save: true}
`

type env struct {
	t     *testing.T
	model *providertest.Server
	mem   *memory.Service
	mgr   *Manager
	clock *clock.Mock
	ends  *endCounter
	vc    Config // the manager's, for another box on the same database
}

func newEnv(t *testing.T, tune ...func(*Config)) *env {
	t.Helper()
	model := providertest.New(t)
	return newEnvWith(t, testAgents, map[string]config.Provider{"openai": {BaseURL: model.URL()}}, model, tune...)
}

// newEnvWith is newEnv with its own agents and providers; model is the
// env's scripted provider (the one e.model reaches).
func newEnvWith(t *testing.T, agents string, providers map[string]config.Provider, model *providertest.Server, tune ...func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	cfg, err := config.Parse([]byte(agents))
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.NewRegistry(providers, nil)
	ends := &endCounter{Handler: pgtest.Logger(t).Handler(), n: map[string]int{}}
	log := slog.New(ends)
	mem := memory.NewService(memory.Config{Pool: pool, Models: reg, Logger: log, FallbackModel: "openai/extractor"})
	settings := memory.NewSettings(pool, memory.AgentsFromConfig(cfg), log)
	if err := settings.FixDeclaredKeys(ctx); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	clk.Set(time.Now())
	rt := agent.New(agent.Config{Pool: pool, Agents: cfg.Agents, Models: reg, Memory: mem, Settings: settings, Logger: log})
	vc := Config{Pool: pool, Agents: cfg.Agents, Runtime: rt, Memory: mem, Settings: settings,
		Runs: runs.NewStore(pool), Speech: ProviderSpeech(reg, nil), Logger: log, Clock: clk}
	for _, f := range tune {
		f(&vc)
	}
	return &env{t: t, model: model, mem: mem, mgr: NewManager(vc), clock: clk, ends: ends, vc: vc}
}

// endCounter counts the "call ended" records per call: one per completion.
type endCounter struct {
	slog.Handler
	mu sync.Mutex
	n  map[string]int
}

func (h *endCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "call ended" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "call" {
				h.mu.Lock()
				h.n[a.Value.String()]++
				h.mu.Unlock()
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h *endCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &endCounter{Handler: h.Handler.WithAttrs(as), n: h.n}
}

func (h *endCounter) count(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[id]
}

// line is the transport of a test call: the agent's frames as received,
// hang-ups and transfers as asked.
type line struct {
	mu        sync.Mutex
	out       [][]int16
	writes    atomic.Int64
	hangups   atomic.Int64
	failWrite atomic.Bool
	transfer  string
}

func (l *line) WriteFrame(pcm []int16) error {
	l.writes.Add(1)
	if l.failWrite.Load() {
		return errBrokenLine
	}
	l.mu.Lock()
	l.out = append(l.out, append([]int16(nil), pcm...))
	l.mu.Unlock()
	return nil
}

func (l *line) Hangup(context.Context) error {
	l.hangups.Add(1)
	return nil
}

func (l *line) Transfer(_ context.Context, target string) error {
	l.mu.Lock()
	l.transfer = target
	l.mu.Unlock()
	return nil
}

type brokenLine struct{}

func (brokenLine) Error() string { return "line: broken" }

var errBrokenLine error = brokenLine{}

// voicedOut is how many of the agent's frames carried speech.
func (l *line) voicedOut() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, f := range l.out {
		if Level(f) > -40 {
			n++
		}
	}
	return n
}

// run is one test call from the caller's side.
type run struct {
	e          *env
	call       *Call
	line       *line
	in         [][]int16 // caller frames still to send; line noise when empty
	utterances int       // utterances said so far: each has its own pitch
	done       chan error
	stop       context.CancelFunc
}

// start opens a call and runs it on a test line until its first agent
// frame went out (the playout clock is running).
func (e *env) start(info CallInfo) *run {
	e.t.Helper()
	if info.Direction == "" {
		info.Direction = Inbound
	}
	c, err := e.mgr.Open(context.Background(), info)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &run{e: e, call: c, line: &line{}, done: make(chan error, 1), stop: stop}
	go func() { r.done <- c.Run(ctx, r.line) }()
	for i := 0; r.line.writes.Load() == 0; i++ {
		if i > 5000 {
			e.t.Fatal("the call never started playing")
		}
		e.clock.Add(FrameDuration)
		time.Sleep(time.Millisecond)
	}
	return r
}

// step sends n caller frames, one per 20 ms of the clock, each taken by
// the call before the next.
func (r *run) step(n int) {
	r.e.t.Helper()
	for range n {
		var f []int16
		if len(r.in) > 0 {
			f, r.in = r.in[0], r.in[1:]
		} else {
			f = noise(r.call.info.SampleRate/50, 30)
		}
		r.call.Hear(f)
		r.tick()
	}
}

// tick advances the clock one frame and waits until the call played one
// frame (or ended); the frame it heard was taken as it was heard.
func (r *run) tick() {
	r.e.t.Helper()
	before := r.line.writes.Load()
	r.e.clock.Add(FrameDuration)
	deadline := time.Now().Add(20 * time.Second) // a deadline, not a wait: a loaded machine can be slow
	for r.line.writes.Load() == before {
		select {
		case <-r.call.done:
			return
		default:
		}
		if time.Now().After(deadline) {
			r.e.t.Fatalf("the call did not take a frame (writes %d)", r.line.writes.Load())
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// stepUntil steps until cond holds, at most max frames.
func (r *run) stepUntil(what string, max int, cond func() bool) {
	r.e.t.Helper()
	r.stepFrames(what, max, cond, func() {
		time.Sleep(200 * time.Microsecond) // let the provider's answers arrive between frames
	})
}

// stepPatiently is stepUntil that after each frame waits on the machine's
// clock for the provider's requests in progress: what the provider takes
// of the machine's time is not the call's, however loaded the machine.
func (r *run) stepPatiently(what string, max int, cond func() bool) {
	r.e.t.Helper()
	r.stepFrames(what, max, cond, func() {
		poll.Until(r.e.t, "the provider's answers", 20*time.Second, func() bool { return r.e.model.Pending() == 0 })
		time.Sleep(time.Millisecond) // the answer's way into the call
	})
}

// stepFrames steps a frame at a time, then between, until cond holds, at
// most max frames.
func (r *run) stepFrames(what string, max int, cond func() bool, between func()) {
	r.e.t.Helper()
	for i := 0; !cond(); i++ {
		if i >= max {
			r.e.t.Fatalf("%s: not within %d frames (%s of call time)", what, max, time.Duration(max)*FrameDuration)
		}
		r.step(1)
		between()
	}
}

// say queues ms of speech-like caller audio: syllables of 160 ms with
// short quiet gaps between them, as speech has.
func (r *run) say(ms int) {
	rate := r.call.info.SampleRate
	n := rate / 50
	// Each utterance has its own pitch, so no utterance's audio is
	// another's beginning (the scripted transcriber takes a longer copy of
	// an utterance it answered for the same one; a 300 Hz frame is six
	// whole periods, so carrying the phase on would not tell them apart).
	hz := 300 + 20*float64(r.utterances%10)
	r.utterances++
	for i := range ms / 20 {
		if i%10 >= 8 {
			r.in = append(r.in, noise(n, 30))
			continue
		}
		f := make([]int16, n)
		for j := range f {
			f[j] = int16(10000 * math.Sin(2*math.Pi*hz*float64(i*n+j)/float64(rate)))
		}
		r.in = append(r.in, f)
	}
}

// end waits for the call's completion and returns its record.
func (r *run) end() CallRecord {
	r.e.t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
	case <-time.After(30 * time.Second):
		r.e.t.Fatal("the call did not complete")
	}
	rec, err := r.e.mgr.Get(context.Background(), r.call.ID())
	if err != nil {
		r.e.t.Fatal(err)
	}
	return rec
}

func noise(n int, amp int) []int16 {
	f := make([]int16, n)
	for i := range f {
		f[i] = int16((i*7919)%(2*amp+1) - amp)
	}
	return f
}

// extractions is how many memory extraction requests the model got.
func (e *env) extractions() int {
	n := 0
	for _, req := range e.model.ChatRequests() {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			n++
		}
	}
	return n
}
