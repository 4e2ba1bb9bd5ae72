package voice

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/internal/pace"
	"github.com/stackbone/box/telemetry"
)

// attachment is what Run hands the call's owner.
type attachment struct {
	ctx context.Context
	t   Transport
	err chan error
}

// Run carries the call on t until it ends, then returns after the call's
// one completion (what was heard committed, the call recorded, memory
// saved once). ctx ending is a shutdown: the call ends with
// OutcomeShutdown. A call that already ended (End before Run) returns at
// once without carrying media. Run returns an error only when the call
// could not start (its speech engines); the call is still completed.
func (c *Call) Run(ctx context.Context, t Transport) error {
	a := attachment{ctx: ctx, t: t, err: make(chan error, 1)}
	select {
	case c.attach <- a:
	case <-c.done:
		return nil
	}
	<-c.done
	select {
	case err := <-a.err:
		return err
	default:
		return nil
	}
}

// live is the call's owner, from Open to its completion, and the one place
// that decides how a call ends: the first end reported by the transport
// or the call's own parts (End), the maximum length, or a shutdown
// (Run's ctx). Whatever ends the call, it then hangs up the transport,
// stops the call's parts, and completes the call exactly once.
func (c *Call) live() {
	_, span := telemetry.Tracer("voice").Start(context.Background(), "call", trace.WithAttributes(
		attribute.String("call.id", c.info.ID), attribute.String("call.direction", c.info.Direction),
		attribute.String("call.agent", c.info.Agent)))
	var end End
	select {
	case end = <-c.ends: // refused, cancelled or unanswered before it ran
	case a := <-c.attach:
		a.ctx = trace.ContextWithSpan(a.ctx, span)
		end = c.carry(a)
	}
	c.complete(end)
	span.SetAttributes(attribute.String("call.outcome", string(c.end.Outcome)))
	// Ended before done closes: a shutdown waits on done, then flushes the
	// traces, and a span still open then is never exported.
	span.End()
	c.m.cfg.Metrics.CallEnded(c.info.Direction, string(c.end.Outcome))
	c.m.remove(c)
	close(c.done)
}

// carry runs the call on its transport until an end is decided.
func (c *Call) carry(a attachment) End {
	// The speech engines count what they are sent on the call's meter.
	ctx := costs.WithMeter(context.WithoutCancel(a.ctx), &c.usage.Meter)
	c.t = a.t
	select {
	case end := <-c.ends:
		// Ended as it was handed over (a room abandoned before it ran):
		// nothing is answered, synthesised or played.
		_ = c.t.Hangup(ctx)
		return end
	default:
	}
	c.playout = newPlayout(c.info.SampleRate * int(FrameDuration/time.Millisecond) / 1000)
	var err error
	if c.stt, c.tts, err = c.m.cfg.Speech(c.info.Agent, c.agent, c.info.SampleRate); err != nil {
		a.err <- err
		_ = c.t.Hangup(ctx)
		return End{Outcome: OutcomeFailed, Reason: "the agent's speech engines are not available"}
	}
	c.m.cfg.Metrics.CallAnswered(c.info.Direction, c.clk.Since(c.started))
	answered := c.clk.Now()
	c.answered = &answered
	c.startRecording()
	screen := c.screening()
	if screen != nil {
		c.scr = newScreener(c.info.SampleRate)
	}
	if _, err := c.m.execEvent(ctx, eventAnswered, func() any { e := c.event(); e.AnsweredAt = &answered; return e }, nil,
		`UPDATE stackbone_platform.voice_calls SET status = 'active', answered_at = $2 WHERE id = $1`, c.info.ID, answered); err != nil {
		c.m.log.Warn("voice: mark answered", "call", c.info.ID, "error", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	goes := func(f func(context.Context)) { wg.Add(1); go func() { defer wg.Done(); f(runCtx) }() }
	utterances := make(chan utterance, 8)
	wake, stopPlay := c.m.pacers.Add(&callStream{c: c, ctx: runCtx})
	c.playout.wake = wake
	goes(func(ctx context.Context) { c.listen(ctx, utterances) })
	goes(func(ctx context.Context) { c.converse(ctx, utterances, screen) })

	maxLen := c.clk.Timer(c.info.MaxDuration)
	var end End
	select {
	case end = <-c.ends:
	case <-maxLen.C:
		end = End{Outcome: OutcomeMaxDuration}
	case <-a.ctx.Done():
		end = End{Outcome: OutcomeShutdown}
	}
	maxLen.Stop()
	// Every end hangs up, so the transport's side ends too; hanging up
	// after the other side left is harmless.
	_ = c.t.Hangup(ctx)
	c.endTransfer(ctx)
	stop()
	stopPlay()
	wg.Wait()
	return end
}

// canDraft reports whether an answer may start before the endpoint: no
// turn is being answered and nothing plays, so the conversation it starts
// from is the one it will answer.
func (c *Call) canDraft() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.answering && c.speaking == nil
}

// callStream is a call's playout as the Manager's pacers play it, at real
// time on a fixed 20 ms schedule, a talkspurt (speech after silence)
// starting the moment its first audio is playable (see pace).
type callStream struct {
	c        *Call
	ctx      context.Context
	speaking bool // the last frame written carried speech
}

func (s *callStream) Frame() bool {
	speech, ok := s.c.playFrame(s.ctx)
	s.speaking = speech
	return ok
}

// Batch is what the call's frames are queued in, if its transport batches
// them (pace.Batched).
func (s *callStream) Batch() pace.Flusher {
	if b, ok := s.c.t.(Batcher); ok {
		return b.Batch()
	}
	return nil
}

// Start begins a talkspurt off the schedule, unless one is playing (the
// schedule plays it).
func (s *callStream) Start() bool {
	if s.speaking {
		return false
	}
	if ts, ok := s.c.t.(Talkspurter); ok {
		ts.Talkspurt()
	}
	return true
}

// playFrame writes one frame of the playout and says whether it carried
// speech; ok is false once the call must end.
func (c *Call) playFrame(ctx context.Context) (speech, ok bool) {
	if src := c.source.Load(); src != nil {
		// On hold, or joined to a person: not the agent's voice.
		if err := c.out().WriteFrame(src.next()); err != nil && ctx.Err() == nil {
			c.End(OutcomeFailed, "the call's audio could not be sent")
			return false, false
		}
		return false, true
	}
	speech, finished, err := c.playout.Tick(c.out())
	if err != nil {
		if ctx.Err() == nil {
			c.m.log.Warn("voice: media write", "call", c.info.ID, "error", err)
			c.End(OutcomeFailed, "the agent's audio could not be sent")
		}
		return false, false
	}
	if speech {
		c.mu.Lock()
		t := c.speaking
		if t != nil && t.firstAudio.IsZero() {
			t.firstAudio = c.clk.Now()
		}
		c.mu.Unlock()
		if t != nil {
			c.recordSpeech(t.id)
		}
	}
	if finished {
		c.endAssistant(false)
	}
	return speech, true
}

// converse greets, then answers each caller turn in order. A screened
// call first finds out who answered (screen): a machine may end it there;
// with a person, the words heard meanwhile are answered when the agent has
// no greeting.
func (c *Call) converse(ctx context.Context, utterances <-chan utterance, screen *config.AnsweringMachine) {
	var held []utterance
	if screen != nil {
		var ok bool
		if held, ok = c.screen(ctx, utterances, screen); !ok {
			return
		}
	}
	c.sayConsent(ctx)
	var greeted time.Time
	if g := c.agent.Greeting; g != "" && c.note == "" {
		c.speakFixed(ctx, g)
		if screen != nil {
			// The greeting answers what the person said while they were
			// screened ("Hello?"), also an utterance that ends later.
			held, greeted = nil, c.clk.Now()
		}
	}
	for {
		var u utterance
		if len(held) > 0 {
			u, held = held[0], held[1:]
		} else {
			select {
			case <-ctx.Done():
				return
			case u = <-utterances:
			case d := <-c.digits:
				u = utterance{digit: d, endpoint: c.clk.Now()}
			}
		}
		if !greeted.IsZero() && u.digit == 0 && !u.lastVoice.IsZero() && u.lastVoice.Before(greeted) {
			continue
		}
		c.mu.Lock()
		c.answering = true
		c.mu.Unlock()
		c.newTurn(u).run(ctx)
		c.mu.Lock()
		c.answering = false
		c.mu.Unlock()
	}
}

// bargeIn stops the agent when the caller talks over it: the turn's
// generation is cancelled and it commits what was heard, before the
// caller's turn that interrupted it.
func (c *Call) bargeIn() {
	c.mu.Lock()
	t := c.speaking
	c.mu.Unlock()
	if t != nil {
		t.cancel()
	}
	c.endAssistant(true)
}

// endAssistant commits the assistant turn on the playout: everything when
// it played through, the heard part when cut.
func (c *Call) endAssistant(cut bool) {
	c.mu.Lock()
	t := c.speaking
	if t == nil {
		c.mu.Unlock()
		return
	}
	c.speaking = nil
	var text string
	if cut {
		text = c.playout.Interrupt()
	} else {
		text = c.playout.Finish()
	}
	c.mu.Unlock()
	if cut {
		c.transcript.CommitCut(t.id, text, c.clk.Now())
	} else {
		c.transcript.Commit(t.id, RoleAssistant, text, c.clk.Now())
	}
	close(t.committed)
}

// startSpeaking puts turn t on the playout; a turn still playing is cut by
// the new one.
func (c *Call) startSpeaking(t *turn) {
	c.endAssistant(true)
	c.mu.Lock()
	c.speaking = t
	c.playout.Start(t.id)
	c.mu.Unlock()
}

// speakFixed plays a fixed phrase (greeting, fallback) as its own turn; it
// is unverifiable, so it commits only if it plays through. It returns the
// turn, nil when the phrase could not be synthesized.
func (c *Call) speakFixed(ctx context.Context, text string) *turn {
	seg, err := c.tts.Synthesize(ctx, text, c.info.SampleRate)
	if err != nil {
		c.m.log.Warn("voice: fixed phrase", "call", c.info.ID, "error", err)
		return nil
	}
	return c.playFixed(seg)
}

// playFixed plays an unverifiable segment as its own turn.
func (c *Call) playFixed(seg Segment) *turn {
	seg.Unverifiable, seg.Words = true, nil
	t := c.newTurn(utterance{})
	c.startSpeaking(t)
	c.playout.Enqueue(t.id, seg)
	c.playout.Close(t.id)
	return t
}

// defaultFallbackSentence is what an agent says before it hangs up when
// its providers failed, unless its voice settings say otherwise.
const defaultFallbackSentence = "Sorry, I'm having trouble right now. Please call back in a little while."

// giveUp ends a call whose providers all failed for a part it cannot go
// on without: the agent says its fallback sentence through whatever
// text-to-speech engine still works (else plays its fallback audio file),
// and once that played (or the caller hung up) the call ends as
// provider_failed with the reason. Its save of what was heard happens as on
// every end.
func (c *Call) giveUp(ctx context.Context, reason string) {
	sentence, audio := defaultFallbackSentence, ""
	if v := c.agent.Voice; v != nil {
		if v.FallbackSentence != "" {
			sentence = v.FallbackSentence
		}
		audio = v.FallbackAudio
	}
	t := c.speakFixed(ctx, sentence)
	if t == nil && audio != "" {
		pcm, err := readWAV(audio, c.info.SampleRate)
		if err != nil {
			c.m.log.Warn("voice: fallback audio", "call", c.info.ID, "error", err)
		} else {
			t = c.playFixed(Segment{Text: sentence, PCM: pcm})
		}
	}
	if t != nil {
		select {
		case <-t.committed:
		case <-ctx.Done():
		}
	}
	c.m.log.Warn("voice: the call's providers failed; hanging up", "call", c.info.ID, "reason", reason)
	c.End(OutcomeProviderFailed, reason)
}

// DTMF hands a keypad digit to the agent as a caller turn. Digits beyond a
// small buffer are dropped rather than blocking the transport.
func (c *Call) DTMF(digit rune) {
	select {
	case c.digits <- digit:
	default:
	}
}

func keypadText(d rune) string { return fmt.Sprintf("(The caller pressed %c on the keypad.)", d) }
