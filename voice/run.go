package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/memory"
)

// fallbackText is said when a turn fails; it is never committed when cut.
const fallbackText = "Sorry, I had a problem there. Could you say that again?"

// utterance is one caller turn: speech to transcribe, or a keypad digit.
type utterance struct {
	pcm       []int16
	digit     rune
	lastVoice time.Time // the last voiced frame, for wire-to-wire
	endpoint  time.Time // when endpointing decided the turn ended
}

// Run carries the call on media until it ends, then performs the call's one
// completion (commit what was heard, record the call, save memory once) and
// returns. A call ends by Close (any transport path), the media ending or
// timing out, the maximum duration, or ctx (shutdown).
func (c *Call) Run(ctx context.Context, media Media, controls Controls) error {
	c.mu.Lock()
	select {
	case <-c.closing:
		// Closed before it ran: that close completes the call.
		c.mu.Unlock()
		<-c.done
		return nil
	default:
	}
	c.running = true
	c.mu.Unlock()
	defer c.finish(context.WithoutCancel(ctx))
	c.media, c.controls, c.rate = media, controls, media.SampleRate()
	c.playout = NewPlayout(c.rate * int(FrameDuration/time.Millisecond) / 1000)
	var err error
	if c.stt, c.tts, err = c.m.cfg.Speech(c.info.Agent, c.agent, c.rate); err != nil {
		c.Close(OutcomeFailed)
		_ = controls.Hangup(context.WithoutCancel(ctx))
		return err
	}
	if _, err := c.m.cfg.Pool.Exec(ctx, `UPDATE stackbone_platform.voice_calls SET status = 'active', answered_at = now() WHERE id = $1`, c.info.ID); err != nil {
		c.m.log.Warn("voice: mark answered", "call", c.info.ID, "error", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	utterances := make(chan utterance, 8)
	goes := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	goes(func() { c.listen(runCtx, utterances) })
	goes(func() { c.play(runCtx) })
	goes(func() { c.converse(runCtx, utterances) })
	maxTimer := time.NewTimer(c.m.cfg.MaxDuration)
	defer maxTimer.Stop()
	select {
	case <-c.closing:
	case <-maxTimer.C:
		c.Close(OutcomeMaxDuration)
	case <-ctx.Done():
		c.Close(OutcomeShutdown)
	}
	// Every close path hangs up, so a transport blocked in ReadFrame (a call
	// on hold has no media timeout) returns; hanging up twice is harmless.
	_ = controls.Hangup(context.WithoutCancel(ctx))
	cancel()
	wg.Wait()
	return nil
}

// listen reads caller frames: voice activity, endpointing and barge-in.
func (c *Call) listen(ctx context.Context, out chan<- utterance) {
	vad := NewVAD(c.m.cfg.VAD)
	var lastVoice time.Time
	for {
		frame, err := c.media.ReadFrame()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				c.Close(OutcomeCallerHangup)
			case errors.Is(err, ErrMediaTimeout):
				c.Close(OutcomeMediaTimeout)
			default:
				if ctx.Err() == nil {
					c.m.log.Warn("voice: media read", "call", c.info.ID, "error", err)
					c.Close(OutcomeFailed)
				}
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		ev := vad.Process(frame)
		if vad.LastLevel() > -45 {
			lastVoice = now
		}
		if speaking, n := vad.Speaking(); speaking && n >= c.m.cfg.BargeInFrames {
			c.bargeIn()
		}
		if ev == VADSpeechEnd {
			u := utterance{pcm: vad.Utterance(), lastVoice: lastVoice, endpoint: now}
			select {
			case out <- u:
			case <-ctx.Done():
				return
			}
		}
	}
}

// bargeIn stops the agent when the caller talks over it: generation is
// cancelled and the interrupted turn commits what was heard, before the
// caller's turn that interrupted it.
func (c *Call) bargeIn() {
	c.mu.Lock()
	cancel := c.cancelGen
	c.cancelGen = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.endAssistant(true)
}

// endAssistant commits the assistant turn on the playout: everything when it
// played through, the heard part when cut.
func (c *Call) endAssistant(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.speaking
	if id == 0 {
		return
	}
	c.speaking = 0
	var text string
	if cut {
		text = c.playout.Interrupt()
	} else {
		text = c.playout.Finish()
	}
	c.transcript.Commit(id, RoleAssistant, text, time.Now())
}

// play paces the playout at real time: one frame per tick.
func (c *Call) play(ctx context.Context) {
	ticks, stop := c.m.cfg.NewTicker(FrameDuration)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		c.mu.Lock()
		id := c.speaking
		c.mu.Unlock()
		speech, finished, err := c.playout.Tick(c.media)
		if err != nil {
			if ctx.Err() == nil {
				c.m.log.Warn("voice: media write", "call", c.info.ID, "error", err)
				c.Close(OutcomeFailed)
			}
			return
		}
		if speech && id != 0 {
			c.mu.Lock()
			if _, seen := c.firstOut[id]; !seen {
				c.firstOut[id] = time.Now()
			}
			c.mu.Unlock()
		}
		if finished {
			c.endAssistant(false)
		}
	}
}

// converse greets, then answers each caller turn in order.
func (c *Call) converse(ctx context.Context, utterances <-chan utterance) {
	if g := c.agent.Greeting; g != "" {
		c.speakFixed(ctx, g)
	}
	for {
		var u utterance
		select {
		case <-ctx.Done():
			return
		case u = <-utterances:
		case d := <-c.digits:
			u = utterance{digit: d, endpoint: time.Now()}
		}
		c.turn(ctx, u)
	}
}

// speakFixed plays a fixed phrase (greeting, fallback) as its own turn; it
// is unverifiable, so it commits only if it plays through.
func (c *Call) speakFixed(ctx context.Context, text string) {
	seg, err := c.tts.Synthesize(ctx, text, c.rate)
	if err != nil {
		c.m.log.Warn("voice: fixed phrase", "call", c.info.ID, "error", err)
		return
	}
	seg.Unverifiable, seg.Words = true, nil
	id := c.nextTurn()
	c.startSpeaking(id)
	c.playout.Enqueue(id, seg)
	c.playout.Close(id)
}

func (c *Call) startSpeaking(id int) {
	c.endAssistant(true) // a turn still on the playout is cut by the new one
	c.mu.Lock()
	c.speaking = id
	c.playout.Start(id)
	c.mu.Unlock()
}

// turn transcribes one caller turn, commits it, and streams the agent's
// answer sentence by sentence into the playout.
func (c *Call) turn(ctx context.Context, u utterance) {
	m := map[string]any{}
	var text string
	if u.digit != 0 {
		text = fmt.Sprintf("(The caller pressed %c on the keypad.)", u.digit)
	} else {
		m["endOfUtteranceMs"] = u.endpoint.Sub(u.lastVoice).Milliseconds()
		start := time.Now()
		var err error
		text, err = c.stt.Transcribe(ctx, u.pcm, c.rate)
		m["speechToTextMs"] = time.Since(start).Milliseconds()
		if err != nil {
			if ctx.Err() == nil {
				c.m.log.Warn("voice: speech-to-text", "call", c.info.ID, "error", err)
			}
			return
		}
		if text == "" {
			return
		}
	}
	// The caller's turn commits once final; an agent turn it interrupted
	// committed at barge-in, before it.
	c.endAssistant(true)
	c.transcript.Commit(c.nextTurn(), RoleUser, text, time.Now())

	genCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	id := c.nextTurn()
	c.startSpeaking(id)
	c.mu.Lock()
	c.cancelGen = cancel
	c.mu.Unlock()

	sentences := make(chan string, 16)
	var synth sync.WaitGroup
	synth.Add(1)
	turnStart := time.Now()
	var firstAudio time.Time
	go func() {
		defer synth.Done()
		for s := range sentences {
			t0 := time.Now()
			seg, err := c.tts.Synthesize(genCtx, s, c.rate)
			if err != nil {
				if genCtx.Err() == nil {
					c.m.log.Warn("voice: text-to-speech", "call", c.info.ID, "error", err)
				}
				continue
			}
			if firstAudio.IsZero() {
				firstAudio = time.Now()
				m["textToSpeechFirstByteMs"] = firstAudio.Sub(t0).Milliseconds()
			}
			c.playout.Enqueue(id, seg)
		}
	}()
	var split Sentences
	var firstToken time.Time
	res, err := c.m.cfg.Runtime.Turn(genCtx, agent.TurnRequest{
		Agent: c.info.Agent, Messages: c.messages(), System: c.recall, NoMemoryTools: true, Wire: "voice",
		ServerTools: c.callTools(),
	}, func(ev agent.Event) error {
		if ev.Kind != agent.EventTextDelta {
			return nil
		}
		if firstToken.IsZero() {
			firstToken = time.Now()
			m["timeToFirstTokenMs"] = firstToken.Sub(turnStart).Milliseconds()
		}
		for _, s := range split.Feed(ev.Text) {
			sentences <- s
		}
		return nil
	})
	if rest := split.Flush(); rest != "" && err == nil {
		sentences <- rest
	}
	close(sentences)
	synth.Wait()
	c.mu.Lock()
	c.cancelGen = nil
	c.mu.Unlock()
	if err != nil {
		if genCtx.Err() != nil {
			return // barge-in or hang-up: what played is already committed
		}
		c.m.log.Warn("voice: agent turn", "call", c.info.ID, "code", agent.ErrorCode(err))
		c.speakFixed(ctx, fallbackText)
		return
	}
	c.playout.Close(id)
	c.recordMetrics(ctx, id, res, u, m)
}

// recordMetrics adds the turn's timings to its run once its first audio
// went out (or the turn ended without audio).
func (c *Call) recordMetrics(ctx context.Context, id int, res agent.Result, u utterance, m map[string]any) {
	m["turn"] = id
	m["runId"] = res.RunID.String()
	go func() {
		// Wait for the first frame of the turn, bounded.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			c.mu.Lock()
			first, ok := c.firstOut[id]
			done := c.speaking != id
			c.mu.Unlock()
			if ok {
				if !u.lastVoice.IsZero() {
					m["wireToWireMs"] = first.Sub(u.lastVoice).Milliseconds()
				}
				break
			}
			if done {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(FrameDuration):
			}
		}
		c.mu.Lock()
		c.metrics = append(c.metrics, m)
		c.mu.Unlock()
		if err := c.m.cfg.Runs.MergeMetadata(context.WithoutCancel(ctx), res.RunID, map[string]any{"voice": m}); err != nil {
			c.m.log.Warn("voice: record metrics", "call", c.info.ID, "error", err)
		}
	}()
}

// callTools are the tools of this call: transfer_call when the agent has a
// transfer target.
func (c *Call) callTools() []agent.ServerTool {
	if c.agent.Voice == nil || c.agent.Voice.TransferTo == "" {
		return nil
	}
	target := c.agent.Voice.TransferTo
	return []agent.ServerTool{{
		Def: agent.Tool{Name: "transfer_call", Description: "Transfer the caller to a person. Use when the caller asks for a human or you cannot help.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"additionalProperties":false}`)},
		Run: func(ctx context.Context, _ agent.ToolCall, _ agent.Scope) (string, error) {
			if err := c.controls.Transfer(ctx, target); err != nil {
				return fmt.Sprintf(`{"transferred":false,"error":%q}`, err.Error()), nil
			}
			c.Close(OutcomeTransferred)
			return `{"transferred":true}`, nil
		},
	}}
}

// complete is the call's one completion, whatever closed it: commit what
// was heard of a turn in progress, record the call, and with save on run
// one memory add with the heard transcript. A failed save is recorded and
// not retried.
func (c *Call) complete(ctx context.Context) {
	if c.playout != nil {
		c.endAssistant(true)
	}
	c.mu.Lock()
	outcome := c.outcome
	metrics := c.metrics
	c.mu.Unlock()
	if outcome == "" {
		outcome = OutcomeCompleted
	}
	ended := time.Now()
	duration := ended.Sub(c.started).Seconds()
	entries := c.transcript.Entries()
	switch {
	case c.report.Off != "" || !c.view.Value.Save:
		c.report.NotSavedReason = c.report.Off
		if c.report.NotSavedReason == "" {
			c.report.NotSavedReason = "save is off"
		}
	case len(entries) == 0:
		c.report.NotSavedReason = "nothing was said and heard"
	default:
		msgs := make([]memory.Message, len(entries))
		for i, e := range entries {
			msgs[i] = memory.Message{Role: e.Role, Content: e.Text}
		}
		sctx, cancel := context.WithTimeout(ctx, c.m.cfg.SaveTimeout)
		started, dur, out, callID := c.started, duration, outcome, c.info.ID
		_, err := c.m.cfg.Memory.Add(sctx, memory.AddRequest{
			AgentID: c.info.Agent, UserID: c.sel.Value, Transcript: memory.Transcript{Messages: msgs},
			Instructions: c.view.Value.Instructions,
			Call:         memory.CallMeta{StartedAt: &started, DurationSeconds: &dur, Outcome: &out, RunID: &callID},
		})
		cancel()
		if err != nil {
			c.report.SaveError = memory.Code(err)
			if c.report.SaveError == "" {
				c.report.SaveError = "memory_unavailable"
			}
		} else {
			c.report.Saved = true
		}
	}
	tr, _ := json.Marshal(entries)
	if entries == nil {
		tr = []byte("[]")
	}
	mem, _ := json.Marshal(c.report)
	met, _ := json.Marshal(metrics)
	if metrics == nil {
		met = []byte("[]")
	}
	_, err := c.m.cfg.Pool.Exec(ctx, `UPDATE stackbone_platform.voice_calls SET status = 'ended', ended_at = $2, outcome = $3,
		duration_seconds = $4, transcript = $5, memory = $6, metrics = $7 WHERE id = $1`,
		c.info.ID, ended, outcome, duration, tr, mem, met)
	if err != nil {
		c.m.log.Warn("voice: record call end", "call", c.info.ID, "error", err)
	}
	c.m.log.Info("call ended", "call", c.info.ID, "agent", c.info.Agent, "outcome", outcome, "turns", len(entries),
		"saved", c.report.Saved, "save_error", c.report.SaveError)
}
