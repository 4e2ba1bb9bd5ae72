package voice_test

import (
	"context"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
	"github.com/stackbone/box/store/storetest"
	"github.com/stackbone/box/voice"
)

// pipe is a test transport: it feeds scripted caller audio at real time
// and records what the box sent. It stands in for RTP only; everything from
// the frames inward is the box's own code.
type pipe struct {
	rate   int
	mu     sync.Mutex
	in     [][]int16 // caller frames still to send
	out    [][]int16 // agent frames received
	hangup chan struct{}
	ticker *time.Ticker
}

func newPipe(rate int) *pipe {
	return &pipe{rate: rate, hangup: make(chan struct{}), ticker: time.NewTicker(voice.FrameDuration)}
}

func (p *pipe) SampleRate() int { return p.rate }

func (p *pipe) ReadFrame() ([]int16, error) {
	select {
	case <-p.hangup:
		return nil, io.EOF
	case <-p.ticker.C:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.in) == 0 {
		return noise(p.rate/50, 30), nil // quiet line noise
	}
	f := p.in[0]
	p.in = p.in[1:]
	return f, nil
}

func (p *pipe) WriteFrame(pcm []int16) error {
	p.mu.Lock()
	p.out = append(p.out, append([]int16(nil), pcm...))
	p.mu.Unlock()
	return nil
}

// say queues ms of speech-like caller audio: syllables of 160 ms with
// short quiet gaps between them, as speech has.
func (p *pipe) say(ms int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.rate / 50
	for i := 0; i < ms/20; i++ {
		if i%10 >= 8 {
			p.in = append(p.in, noise(n, 30))
			continue
		}
		f := make([]int16, n)
		for j := range f {
			f[j] = int16(10000 * math.Sin(2*math.Pi*300*float64(i*n+j)/float64(p.rate)))
		}
		p.in = append(p.in, f)
	}
}

func (p *pipe) voicedFramesOut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, f := range p.out {
		if voice.Level(f) > -40 {
			n++
		}
	}
	return n
}

func noise(n int, amp int) []int16 {
	f := make([]int16, n)
	for i := range f {
		f[i] = int16((i*7919)%(2*amp+1) - amp)
	}
	return f
}

type controls struct {
	mu       sync.Mutex
	hungUp   bool
	transfer string
}

func (c *controls) Hangup(context.Context) error {
	c.mu.Lock()
	c.hungUp = true
	c.mu.Unlock()
	return nil
}
func (c *controls) Transfer(_ context.Context, target string) error {
	c.mu.Lock()
	c.transfer = target
	c.mu.Unlock()
	return nil
}

const yaml = `
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
`

type env struct {
	t     *testing.T
	model *providertest.Server
	mem   *memory.Service
	mgr   *voice.Manager
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	pool := storetest.Pool(t)
	model := providertest.New(t)
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: model.URL()}}, nil)
	log := storetest.Logger(t)
	mem := memory.NewService(memory.Config{Pool: pool, Models: reg, Logger: log, FallbackModel: "openai/extractor"})
	settings := memory.NewSettings(pool, memory.AgentsFromConfig(cfg), log)
	if err := settings.FixDeclaredKeys(ctx); err != nil {
		t.Fatal(err)
	}
	rt := agent.New(agent.Config{Pool: pool, Agents: cfg.Agents, Models: reg, Memory: mem, Settings: settings, Logger: log})
	mgr := voice.NewManager(voice.Config{Pool: pool, Agents: cfg.Agents, Runtime: rt, Memory: mem, Settings: settings,
		Runs: runs.NewStore(pool), Speech: voice.ProviderSpeech(reg, nil), Logger: log})
	return &env{t: t, model: model, mem: mem, mgr: mgr}
}

func waitUntil(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A caller talks, the agent answers aloud, the caller hangs up: what was
// heard is saved once, and the next call from the number recalls it before
// the first answer.
func TestCallLifecycleSavesWhatWasHeardAndRecallsIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	number := "+34600111222"

	e.model.ScriptTranscripts("I am interested in the AI master. Call me after four.")
	e.model.Script(
		providertest.Reply{Content: "Great. I will arrange a call after four."},
		// The extraction after the call:
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master."},{"op":"add","content":"Wants calls after 16:00."}],"summary":"Asked about the AI master."}`},
	)
	call, err := e.mgr.Open(ctx, voice.CallInfo{Direction: voice.Inbound, Agent: "receptionist", PhoneNumber: number, Trunk: "local"})
	if err != nil {
		t.Fatal(err)
	}
	media, ctl := newPipe(8000), &controls{}
	done := make(chan error, 1)
	go func() { done <- call.Run(ctx, media, ctl) }()
	// The greeting plays through, then the caller speaks.
	waitUntil(t, "the greeting", 10*time.Second, func() bool { return len(call.Entries()) == 1 })
	media.say(1200)
	waitUntil(t, "the agent's answer to play", 20*time.Second, func() bool {
		return len(e.model.SpeechRequests()) >= 2 && len(e.model.ChatRequests()) >= 1 && media.voicedFramesOut() > 100
	})
	// Let the answer finish playing (it is about 1.6 s), then hang up.
	waitUntil(t, "the answer to finish", 20*time.Second, func() bool {
		r, _ := e.mgr.Get(ctx, call.ID())
		return r.Status == "active" && len(call.Entries()) >= 3
	})
	close(media.hangup)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r, err := e.mgr.Get(ctx, call.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "ended" || *r.Outcome != voice.OutcomeCallerHangup || r.DurationSeconds == nil || *r.DurationSeconds < 1 {
		t.Fatalf("call record: %+v", r)
	}
	var texts []string
	for _, en := range r.Transcript {
		texts = append(texts, en.Role+": "+en.Text)
	}
	want := []string{"assistant: Hello, this is the front desk.", "user: I am interested in the AI master. Call me after four.",
		"assistant: Great. I will arrange a call after four."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("heard transcript %q, want %q", texts, want)
	}
	if !r.Memory.Saved || r.Memory.Identity != number || r.Memory.IdentityKey != "phoneNumber" {
		t.Fatalf("memory report: %+v", r.Memory)
	}
	facts, _ := e.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
	if len(facts.Facts) != 2 || len(facts.Calls) != 1 || *facts.Calls[0].Outcome != voice.OutcomeCallerHangup || *facts.Calls[0].DurationSeconds < 1 {
		t.Fatalf("saved memory: %+v", facts)
	}
	// The extraction got exactly the heard transcript.
	extract := e.model.ChatRequests()[1].Messages[1].Content
	for _, w := range want {
		if !strings.Contains(extract, strings.SplitN(w, ": ", 2)[1]) {
			t.Fatalf("extraction lacks %q", w)
		}
	}
	if len(r.Metrics) != 1 || r.Metrics[0]["wireToWireMs"] == nil || r.Metrics[0]["speechToTextMs"] == nil {
		t.Fatalf("metrics: %+v", r.Metrics)
	}

	// Second call from the same number: the recall is in what the model is
	// sent for its first answer.
	e.model.ScriptTranscripts("Hi again.")
	e.model.Script(providertest.Reply{Content: "Welcome back."})
	call2, err := e.mgr.Open(ctx, voice.CallInfo{Direction: voice.Inbound, Agent: "receptionist", PhoneNumber: number})
	if err != nil {
		t.Fatal(err)
	}
	media2 := newPipe(8000)
	done2 := make(chan error, 1)
	go func() { done2 <- call2.Run(ctx, media2, &controls{}) }()
	waitUntil(t, "the greeting", 10*time.Second, func() bool { return len(call2.Entries()) == 1 })
	media2.say(800)
	waitUntil(t, "the first answer", 20*time.Second, func() bool { return len(e.model.ChatRequests()) >= 3 })
	first := e.model.ChatRequests()[2]
	if !strings.Contains(first.Messages[1].Content, "Interested in the AI master.") || first.Messages[1].Role != "system" {
		t.Fatalf("recall not sent before the first answer: %+v", first.Messages)
	}
	for _, tl := range first.Tools {
		if strings.HasPrefix(tl.Function.Name, "memory_") {
			t.Fatal("a call offered memory tools")
		}
	}
	call2.Close(voice.OutcomeCompleted)
	<-done2
}

// The caller talks over a long answer: playout stops, the answer commits
// only the sentences that fully played (the provider's voice has no word
// timings), before the caller's interrupting turn, and the model's next
// request holds only what was heard.
func TestBargeInCommitsOnlyWhatPlayed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	long := "First sentence is short. Second sentence is a little longer than that. Third sentence goes on and on for quite a while. Fourth sentence is never reached."
	e.model.ScriptTranscripts("Tell me everything.", "Stop, please.")
	e.model.Script(providertest.Reply{Content: long}, providertest.Reply{Content: "Okay."})
	call, err := e.mgr.Open(ctx, voice.CallInfo{Direction: voice.Inbound, Agent: "talker", PhoneNumber: "+1555"})
	if err != nil {
		t.Fatal(err)
	}
	media := newPipe(8000)
	done := make(chan error, 1)
	go func() { done <- call.Run(ctx, media, &controls{}) }()
	media.say(800)
	// Interrupt once the second sentence has started playing: the first is
	// about 1 s of audio.
	waitUntil(t, "the answer to start playing", 20*time.Second, func() bool { return media.voicedFramesOut() > 70 })
	media.say(800)
	waitUntil(t, "the interruption to be answered", 20*time.Second, func() bool { return len(e.model.ChatRequests()) >= 2 })
	entries := call.Entries()
	if len(entries) < 3 || entries[0].Role != "user" || entries[1].Role != "assistant" || entries[2].Role != "user" || entries[2].Text != "Stop, please." {
		t.Fatalf("transcript order: %+v", entries)
	}
	heard := entries[1].Text
	if !strings.HasPrefix(long, heard) || strings.Contains(heard, "Fourth") || heard == long {
		t.Fatalf("committed %q: not a strict prefix of whole sentences of %q", heard, long)
	}
	// The model's next request knows only what was heard.
	second := e.model.ChatRequests()[1].Messages
	for _, m := range second {
		if strings.Contains(m.Content, "Fourth sentence") {
			t.Fatal("unheard text reached the model")
		}
	}
	call.Close(voice.OutcomeCompleted)
	<-done
}

// Every close path shares one completion: racing closes (the transport's
// BYE, the media ending, a shutdown) save once; a failed save is recorded
// and not retried; an agent keyed on email runs without memory and says why.
func TestOneCompletionWhateverCloses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.model.ScriptTranscripts("Please remember my order number.")
	e.model.Script(providertest.Reply{Content: "I will."},
		providertest.Reply{Status: 500, Message: "extraction exploded"}) // the save fails
	call, err := e.mgr.Open(ctx, voice.CallInfo{Direction: voice.Inbound, Agent: "receptionist", PhoneNumber: "+34600999000"})
	if err != nil {
		t.Fatal(err)
	}
	media := newPipe(8000)
	runCtx, shutdown := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- call.Run(runCtx, media, &controls{}) }()
	waitUntil(t, "the greeting", 10*time.Second, func() bool { return len(call.Entries()) == 1 })
	media.say(800)
	waitUntil(t, "the answer", 20*time.Second, func() bool { return len(call.Entries()) == 3 })
	var wg sync.WaitGroup
	for _, f := range []func(){
		func() { call.Close(voice.OutcomeCompleted) },
		func() { close(media.hangup) },
		shutdown,
		func() { call.Close(voice.OutcomeFailed) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
	<-done
	r, _ := e.mgr.Get(ctx, call.ID())
	extractions := 0
	for _, req := range e.model.ChatRequests() {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			extractions++
		}
	}
	if extractions != 1 {
		t.Fatalf("%d extraction requests, want exactly one (no retry)", extractions)
	}
	if r.Memory.Saved || r.Memory.SaveError != "memory_model_failed" || r.Status != "ended" || r.Outcome == nil {
		t.Fatalf("completion: %+v %+v", r, r.Memory)
	}
	select {
	case <-call.Done():
	default:
		t.Fatal("Done not closed")
	}

	// An agent keyed on email: a phone call has no email identity.
	e.model.Script(providertest.Reply{Content: "Hello."})
	c2, err := e.mgr.Open(ctx, voice.CallInfo{Direction: voice.Inbound, Agent: "mailer", PhoneNumber: "+34600999000"})
	if err != nil {
		t.Fatal(err)
	}
	d2 := make(chan error, 1)
	m2 := newPipe(8000)
	go func() { d2 <- c2.Run(ctx, m2, &controls{}) }()
	c2.Close(voice.OutcomeCompleted)
	<-d2
	r2, _ := e.mgr.Get(ctx, c2.ID())
	if r2.Memory.Off == "" || !strings.Contains(r2.Memory.Off, "email") || r2.Memory.Saved || r2.Memory.RecalledFacts != 0 {
		t.Fatalf("email-keyed agent on a phone call: %+v", r2.Memory)
	}
}

// A call closed before it ever ran (CANCEL before answer, no answer)
// completes at once: its record ends and its slot frees; a late Run
// returns without carrying media.
func TestCallClosedBeforeItRan(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	call, err := e.mgr.Open(ctx, voice.CallInfo{Direction: voice.Inbound, Agent: "receptionist", PhoneNumber: "+34600555000"})
	if err != nil {
		t.Fatal(err)
	}
	if e.mgr.Active() != 1 {
		t.Fatalf("active %d", e.mgr.Active())
	}
	call.Close(voice.OutcomeCancelled)
	select {
	case <-call.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a call closed before it ran never completed")
	}
	r, _ := e.mgr.Get(ctx, call.ID())
	if r.Status != "ended" || *r.Outcome != voice.OutcomeCancelled || r.AnsweredAt != nil || e.mgr.Active() != 0 {
		t.Fatalf("record %+v, active %d", r, e.mgr.Active())
	}
	if err := call.Run(ctx, newPipe(8000), &controls{}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.model.SpeechRequests()); n != 0 {
		t.Fatalf("%d speech requests for a call that never ran", n)
	}
}
