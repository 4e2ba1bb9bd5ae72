package voice

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stackbone/box/agent"
)

// generation is the agent's answer to the caller's words: the model run
// streamed sentence by sentence into synthesis. It may start before the
// turn is confirmed (preemptive generation, on a speculative or interim
// transcript while endpointing goes on): until confirm, nothing of it
// reaches the playout and no server tool runs; text and audio wait. A
// generation never confirmed is abandoned: its run is cancelled (its run
// row says so), nothing of it played, was committed or reaches the model
// again.
type generation struct {
	c       *Call
	text    string // the caller's words it answers
	history int    // heard transcript entries it was started on
	ctx     context.Context
	cancel  context.CancelFunc
	gate    chan struct{} // closed by confirm
	started time.Time
	fill    *filler
	// tooled: a tool ran, so its time to the first audio says nothing of
	// the agent's usual answer lead.
	tooled atomic.Bool

	t *turn // set by confirm, before gate closes

	done    chan struct{} // closed once res and err are set
	res     agent.Result
	err     error
	metrics map[string]any // written before done closes
	// voices reports which text-to-speech engines spoke the answer.
	voices *engineReport
}

// generate starts the answer to text after messages (the heard
// conversation before it, Call.messages: the generation takes it over).
func (c *Call) generate(ctx context.Context, text string, messages []agent.Message) *generation {
	gctx, cancel := context.WithCancel(ctx)
	gctx, voices := withReport(gctx, partTTS)
	g := &generation{c: c, text: text, history: c.transcript.Len(), ctx: gctx, cancel: cancel, voices: voices,
		gate: make(chan struct{}), started: c.clk.Now(), done: make(chan struct{}), metrics: map[string]any{}}
	msgs := append(messages, agent.Message{Role: RoleUser, Content: text})
	go g.run(msgs)
	return g
}

// confirmed reports whether confirm was called.
func (g *generation) confirmed() bool {
	select {
	case <-g.gate:
		return true
	default:
		return false
	}
}

// confirm hands the generation its turn (already on the playout): from
// now on its audio plays and its tools run.
func (g *generation) confirm(t *turn) {
	g.t = t
	close(g.gate)
}

// hold waits for confirm; false if the generation was abandoned first.
func (g *generation) hold() bool {
	select {
	case <-g.gate:
		return true
	case <-g.ctx.Done():
		return false
	}
}

// current reports whether the conversation is still the one the
// generation was started on: nothing was committed since and nothing
// plays.
func (g *generation) current() bool {
	c := g.c
	c.mu.Lock()
	idle := c.speaking == nil
	c.mu.Unlock()
	return idle && c.transcript.Len() == g.history
}

// abandon cancels an unconfirmed generation; its run row is marked
// cancelled (also when the model had finished) with voice.preemptive =
// "abandoned" and the reason: nobody heard it.
func (c *Call) abandon(g *generation, why string) {
	g.cancel()
	go func() {
		<-g.done
		if g.res.RunID == [16]byte{} {
			return
		}
		if err := c.m.cfg.Runs.Cancel(context.Background(), g.res.RunID, map[string]any{
			"voice": map[string]any{"preemptive": "abandoned", "reason": why}}); err != nil {
			c.m.log.Warn("voice: mark abandoned run", "call", c.info.ID, "error", err)
		}
	}()
}

// wasted describes an abandoned generation for the turn's metrics.
func (g *generation) wasted(why string) map[string]any {
	return map[string]any{"kind": "generation", "reason": why, "ms": g.c.clk.Since(g.started).Milliseconds()}
}

// run is the generation's body: the model run, the sentences it streams,
// their synthesis, all held until confirm.
func (g *generation) run(messages []agent.Message) {
	defer close(g.done)
	c := g.c
	sentences := make(chan spoken, 16)
	// say queues a sentence for synthesis; the filler's timer says its
	// phrase from another goroutine, so the channel closes under the lock.
	var sayMu sync.Mutex
	sayClosed := false
	say := func(s spoken) {
		sayMu.Lock()
		defer sayMu.Unlock()
		if !sayClosed {
			sentences <- s
		}
	}
	var mmu sync.Mutex
	metric := func(k string, v any) {
		mmu.Lock()
		g.metrics[k] = v
		mmu.Unlock()
	}
	var synth sync.WaitGroup
	synth.Add(1)
	go func() {
		defer synth.Done()
		g.synthesize(sentences, metric)
	}()
	g.fill = c.newFiller(say)
	var split sentenceSplitter
	firstToken := true
	res, err := c.m.cfg.Runtime.Turn(g.ctx, agent.TurnRequest{
		Agent: c.info.Agent, Instructions: c.agent.Instructions, Messages: messages, System: c.system(), NoMemoryTools: true, Wire: "voice",
		ServerTools: c.callTools(), FirstByte: c.firstByte(), Chunk: chunkBound(c.agent), Models: c.agent.Model,
	}, func(ev agent.Event) error {
		switch ev.Kind {
		case agent.EventToolRunning:
			g.tooled.Store(true)
			// No tool acts for words the caller may not have finished.
			if !g.hold() {
				return g.ctx.Err()
			}
			// What the agent said before the tool is on the playout
			// before the tool acts ("I'll put you through", then the
			// transfer), not after it.
			if rest := split.Flush(); rest != "" {
				say(spoken{text: rest})
			}
			queued := make(chan struct{})
			say(spoken{queued: queued})
			select {
			case <-queued:
			case <-g.ctx.Done():
				return g.ctx.Err()
			}
			g.fill.start(ev.Text)
			return nil
		case agent.EventToolResult:
			g.fill.stop()
			return nil
		case agent.EventTextDelta:
		default:
			return nil
		}
		if firstToken {
			firstToken = false
			metric("timeToFirstTokenMs", c.clk.Since(g.started).Milliseconds())
		}
		for _, s := range split.Feed(ev.Text) {
			say(spoken{text: s})
		}
		return nil
	})
	g.fill.stop()
	if rest := split.Flush(); rest != "" && err == nil {
		say(spoken{text: rest})
	}
	sayMu.Lock()
	sayClosed = true
	close(sentences)
	sayMu.Unlock()
	synth.Wait()
	c.countTurn(res, err)
	g.res, g.err = res, err
}

// synthesize speaks each sentence; before confirm its audio is kept here,
// after it goes to the playout (as it arrives, with a streaming engine).
func (g *generation) synthesize(sentences <-chan spoken, metric func(string, any)) {
	c := g.c
	first, playable := true, false
	ready := func() {
		if !playable {
			playable = true
			metric("audioReadyAt", c.clk.Now())
			if !g.tooled.Load() {
				c.m.sawAnswerLead(c.info.Agent, c.clk.Since(g.started))
			}
		}
	}
	for s := range sentences {
		if s.queued != nil {
			close(s.queued)
			continue
		}
		t0 := c.clk.Now()
		firstByte := func() {
			if first {
				first = false
				metric("textToSpeechFirstByteMs", c.clk.Since(t0).Milliseconds())
			}
		}
		if st, ok := c.tts.(StreamingSynthesizer); ok {
			// The first bytes play as they arrive; the next sentence is
			// synthesised while this one plays. This engine has no word
			// timings: a sentence is heard only once all of it played.
			var seg *Segment
			// The pieces arrived before confirm, as the engine handed
			// them over (each its own: not copied again to be held).
			var held [][]int16
			open := func() bool {
				if seg == nil && g.confirmed() {
					seg = c.playout.Stream(g.t.id, Segment{Text: s.text})
					if len(held) > 0 {
						ready()
					}
					c.playout.Append(seg, held...)
					held = nil
				}
				return seg != nil
			}
			err := st.SynthesizeStream(g.ctx, s.text, c.info.SampleRate, func(pcm []int16) {
				firstByte()
				if open() {
					ready()
					c.playout.Append(seg, pcm)
				} else {
					held = append(held, pcm)
				}
			})
			if err != nil && g.ctx.Err() == nil {
				c.m.log.Warn("voice: text-to-speech", "call", c.info.ID, "error", err)
			}
			if !g.hold() {
				break
			}
			open()
			c.playout.Seal(seg, err != nil)
			continue
		}
		seg, err := c.tts.Synthesize(g.ctx, s.text, c.info.SampleRate)
		if err != nil {
			if g.ctx.Err() == nil {
				c.m.log.Warn("voice: text-to-speech", "call", c.info.ID, "error", err)
			}
			continue
		}
		if s.filler {
			// Heard only once all of it played: a cut filler is not
			// committed word by word.
			seg.Words = nil
		}
		firstByte()
		if !g.hold() {
			break
		}
		ready()
		c.playout.Enqueue(g.t.id, seg)
	}
	for s := range sentences {
		// Abandoned: let the run finish saying what it says, unheard.
		if s.queued != nil {
			close(s.queued)
		}
	}
}

// DefaultFirstByteTimeout is how long a call waits for a model's first
// token before the next model of the agent's chain answers.
const DefaultFirstByteTimeout = 1500 * time.Millisecond

// firstByte is the agent's voice.firstByteTimeout, or the default.
func (c *Call) firstByte() time.Duration { return firstByteBound(c.agent) }

// system is the call's system context for the model: the recalled memory,
// and what screening found when a menu answered.
func (c *Call) system() string {
	c.mu.Lock()
	note := c.note
	c.mu.Unlock()
	switch {
	case note == "":
		return c.recall
	case c.recall == "":
		return note
	}
	return c.recall + "\n\n" + note
}
