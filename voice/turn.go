package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"go.opentelemetry.io/otel/trace"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/telemetry"
)

// fallbackText is said when a turn fails; it is never committed when cut.
const fallbackText = "Sorry, I had a problem there. Could you say that again?"

// utterance is one caller turn: speech to transcribe, or a keypad digit.
type utterance struct {
	pcm       []int16
	digit     rune
	began     time.Time // the first voiced frame
	lastVoice time.Time // the last voiced frame, for wire-to-wire
	endpoint  time.Time // when endpointing decided the turn ended
	reason    string    // why endpointing ended it (endComplete, ...)

	// The transcript, when it is not one request at the endpoint: the
	// speculation the turn ended on, or the live stream's final.
	spec  *speculation
	final <-chan sttResult
	// draft is the answer started before the endpoint was confirmed, on
	// the words known then (nil: none).
	draft *generation
	// wasted is the speculative provider work cancelled during the turn.
	wasted []map[string]any
	// span is the turn's trace span, begun when the caller started
	// speaking (nil for a keypad digit).
	span trace.Span
	// overlap, when set, is the utterance's talking over the agent, to be
	// settled on its transcript: it may be no turn (see settleOverlap).
	overlap *overlap
}

// turn is one spoken exchange: the caller's utterance, its commit, the
// agent's answer streamed sentence by sentence into synthesis and the
// playout, the answer's commit from the playout clock, and the turn's
// metrics. A fixed phrase (greeting, fallback) is a turn without a caller
// side. The call waits for every turn's metrics before it is recorded.
type turn struct {
	c  *Call
	u  utterance
	id int // the assistant side's turn number

	cancel     context.CancelFunc // stops generation (barge-in)
	committed  chan struct{}      // closed once the assistant side committed
	firstAudio time.Time          // the first voiced frame played (under c.mu)
	// interruptions are the caller's overlaps of this turn's speech
	// (under c.mu; see overlap).
	interruptions []map[string]any
	// voices reports the engines that spoke the answer (read once it
	// committed: sentences are spoken after the model is done).
	voices  *engineReport
	metrics map[string]any
}

func (c *Call) newTurn(u utterance) *turn {
	return &turn{c: c, u: u, id: c.nextTurn(), cancel: func() {}, committed: make(chan struct{}), metrics: map[string]any{}}
}

func (c *Call) nextTurn() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.turnSeq++
	return c.turnSeq
}

// run transcribes the caller's side, commits it, and streams the agent's
// answer into the playout. It returns once the answer was generated and
// queued; the playout commits it (played through, or cut), and then the
// turn records its metrics.
func (t *turn) run(ctx context.Context) {
	c := t.c
	span := t.u.span
	if span == nil {
		ctx, span = telemetry.Tracer("voice").Start(ctx, "turn")
	} else {
		// The turn's span began with the caller's speech, so its
		// speculation and preemptive answer are inside it.
		ctx = trace.ContextWithSpan(ctx, span)
	}
	defer span.End()
	var text string
	if t.u.digit != 0 {
		text = keypadText(t.u.digit)
	} else {
		t.metrics["endOfUtteranceMs"] = t.u.endpoint.Sub(t.u.lastVoice).Milliseconds()
		t.metrics["endpoint"] = t.u.reason
		if len(t.u.wasted) > 0 {
			t.metrics["wasted"] = t.u.wasted
		}
		start := c.clk.Now()
		var err error
		text, err = t.transcribe(ctx)
		t.metrics["speechToTextMs"] = c.clk.Since(start).Milliseconds()
		if o := t.u.overlap; o != nil && !c.settleOverlap(o, text) {
			return // a backchannel or a noise: the agent went on
		}
		if err != nil {
			if ctx.Err() == nil {
				c.m.log.Warn("voice: speech-to-text", "call", c.info.ID, "error", err)
				switch {
				case errors.Is(err, ErrSpeechDown):
					c.giveUp(ctx, "every speech-to-text provider is down")
				case errors.Is(err, ErrSpeechChain):
					c.speakFixed(ctx, fallbackText) // the words are lost: ask again
				}
			}
			return
		}
		if text == "" {
			return
		}
	}
	g := t.u.draft
	if g != nil && (g.text != text || !g.current()) {
		// The final transcript differs from the one the model was started
		// on, or the conversation moved since: start again.
		c.abandon(g, "differs")
		t.u.wasted = append(t.u.wasted, g.wasted("differs"))
		t.metrics["wasted"] = t.u.wasted
		g = nil
	}
	if g == nil {
		g = c.generate(ctx, text, c.messages())
	} else {
		t.metrics["preemptive"] = true
	}
	// The caller's side commits once final; an agent turn it interrupted
	// committed at barge-in, before it.
	c.endAssistant(true)
	userTurn := c.nextTurn()
	c.transcript.Commit(userTurn, RoleUser, text, c.clk.Now())
	c.heardCaller(userTurn, text, t.u)
	t.id = c.nextTurn() // after the caller's side
	t.cancel, t.voices = g.cancel, g.voices
	c.startSpeaking(t)
	g.confirm(t)
	<-g.done
	// The generation's work is over (its audio is on the playout): its
	// context goes, so the call's keeps no child of each turn.
	defer g.cancel()
	res, err := g.res, g.err
	for k, v := range g.metrics {
		if at, ok := v.(time.Time); ok {
			// The first audio playable, from the endpoint: what the turn
			// waited on its providers after the caller stopped.
			if !t.u.endpoint.IsZero() {
				t.metrics["audioReadyMs"] = at.Sub(t.u.endpoint).Milliseconds()
			}
			continue
		}
		t.metrics[k] = v
	}
	if len(res.ToolRuns) > 0 {
		t.metrics["tools"] = res.ToolRuns
	}
	if g.fill.wasSaid() {
		t.metrics["fillerAfterMs"] = g.fill.after.Milliseconds()
	}
	if err != nil {
		if g.ctx.Err() != nil {
			return // barge-in or the call's end: what played is already committed
		}
		c.m.log.Warn("voice: agent turn", "call", c.info.ID, "code", agent.ErrorCode(err))
		if errors.Is(err, agent.ErrProvidersDown) {
			c.giveUp(ctx, "every model provider is down")
			return
		}
		c.speakFixed(ctx, fallbackText)
		return
	}
	c.playout.Close(t.id)
	t.metrics["turn"] = t.id
	t.metrics["runId"] = res.RunID.String()
	c.turns.Add(1)
	go t.record(res)
}

// transcribe is the caller's words: the live stream's final, the
// speculation the turn ended on, or else one request now (also when the
// stream or the speculation failed). The time it takes from the endpoint
// is the turn's speechToTextMs.
func (t *turn) transcribe(ctx context.Context) (string, error) {
	c := t.c
	switch {
	case t.u.final != nil:
		t.metrics["transcription"] = "stream"
		select {
		case r := <-t.u.final:
			if r.err == nil {
				return r.text, nil
			}
			c.m.log.Warn("voice: speech-to-text stream", "call", c.info.ID, "error", r.err)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	case t.u.spec != nil:
		t.metrics["transcription"] = "speculative"
		select {
		case <-t.u.spec.done:
			if t.u.spec.err == nil {
				t.engines(partSTT, t.u.spec.report)
				return t.u.spec.text, nil
			}
			if ctx.Err() == nil {
				c.m.log.Warn("voice: speculative speech-to-text", "call", c.info.ID, "error", t.u.spec.err)
			}
		case <-ctx.Done():
			t.u.spec.cancel()
			return "", ctx.Err()
		}
	}
	t.metrics["transcription"] = "request"
	ctx, report := withReport(ctx, partSTT)
	text, err := c.stt.Transcribe(ctx, t.u.pcm, c.info.SampleRate)
	t.engines(partSTT, report)
	return text, err
}

// engines puts which engines of part served the turn into its metrics
// ("speechToTextBy", "textToSpeechBy"), when a chain reported.
func (t *turn) engines(part string, r *engineReport) {
	if v := r.view(); v != nil {
		t.metrics[part+"By"] = v
	}
}

// spoken is a sentence for synthesis; a filler is said while a tool runs.
type spoken struct {
	text   string
	filler bool
	// queued, when set, is closed once every sentence before it reached
	// the playout (a mark, not a sentence).
	queued chan struct{}
}

// filler says the agent's filler phrase, once per turn, when a server
// tool has run longer than the agent's voice.fillerAfter (700 ms by
// default). It goes through the turn's playout like any sentence, so the
// heard transcript commits it only if it played, and the caller can talk
// over it.
type filler struct {
	c        *Call
	say      func(spoken)
	after    time.Duration
	fallback string

	mu    sync.Mutex
	timer *clock.Timer
	said  bool
}

func (c *Call) newFiller(say func(spoken)) *filler {
	f := &filler{c: c, say: say, after: config.DefaultFillerAfter}
	if v := c.agent.Voice; v != nil {
		f.fallback = v.Filler
		if v.FillerAfter > 0 {
			f.after = v.FillerAfter
		}
	}
	return f
}

// start arms the filler as a tool starts running; phrase is the tool's own
// filler ("" for the agent's).
func (f *filler) start(phrase string) {
	if phrase == "" {
		phrase = f.fallback
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if phrase == "" || f.said || f.timer != nil {
		return
	}
	var timer *clock.Timer
	timer = f.c.clk.AfterFunc(f.after, func() {
		f.mu.Lock()
		if f.timer != timer || f.said {
			f.mu.Unlock()
			return
		}
		f.said, f.timer = true, nil
		f.mu.Unlock()
		f.say(spoken{text: phrase, filler: true})
	})
	f.timer = timer
}

func (f *filler) wasSaid() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.said
}

// stop disarms the filler as the tool ends (or the turn does).
func (f *filler) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
}

// record adds the turn's timings to the call and to its run once the
// answer committed (played through or cut, at the latest when the call
// completes).
func (t *turn) record(res agent.Result) {
	c := t.c
	defer c.turns.Done()
	<-t.committed
	c.mu.Lock()
	if !t.firstAudio.IsZero() && !t.u.lastVoice.IsZero() {
		t.metrics["wireToWireMs"] = t.firstAudio.Sub(t.u.lastVoice).Milliseconds()
	}
	if len(t.interruptions) > 0 {
		t.metrics["interruptions"] = t.interruptions
	}
	t.engines(partTTS, t.voices)
	c.keepMetrics(t.metrics)
	c.mu.Unlock()
	for key, stage := range map[string]string{"endOfUtteranceMs": "end_of_speech", "speechToTextMs": "speech_to_text",
		"timeToFirstTokenMs": "first_token", "textToSpeechFirstByteMs": "first_audio", "wireToWireMs": "wire_to_wire"} {
		if ms, ok := t.metrics[key].(int64); ok {
			c.m.cfg.Metrics.TurnStage(stage, time.Duration(ms)*time.Millisecond)
		}
	}
	if err := c.m.cfg.Runs.MergeMetadata(context.Background(), res.RunID, map[string]any{"voice": t.metrics}); err != nil {
		c.m.log.Warn("voice: record metrics", "call", c.info.ID, "error", err)
	}
}

// keepMetrics (under mu) keeps one turn's figures for the call's record.
// They are plain values (numbers, strings, the engines' and tools'
// reports), so encoding them cannot fail; one that did would be logged and
// left out.
func (c *Call) keepMetrics(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		c.m.log.Warn("voice: turn metrics not kept", "call", c.info.ID, "error", err)
		return
	}
	c.metrics = append(c.metrics, b)
}

// messages is the conversation as the caller heard it: the model never
// sees generated text that did not play.
func (c *Call) messages() []agent.Message { return c.transcript.Messages() }

// Entries is the heard transcript so far (the live transcript of a call page).
func (c *Call) Entries() []Entry { return c.transcript.Entries() }

// callTools are the tools of this call: transfer_call when the agent has a
// transfer target, send_dtmf when it may press keys and the line can carry
// them.
func (c *Call) callTools() []agent.ServerTool {
	var out []agent.ServerTool
	if v := c.agent.Voice; v != nil && v.Transfer != nil && len(v.Transfer.Targets) > 0 && c.m.cfg.DialLeg != nil && c.info.SampleRate == 8000 {
		out = append(out, c.transferTargetsTool(v.Transfer))
	} else if v != nil && v.TransferTo != "" {
		out = append(out, c.transferTool(v.TransferTo))
	}
	if kp, ok := c.t.(Keypad); ok && c.agent.Voice != nil && c.agent.Voice.Keypad {
		out = append(out, c.keypadTool(kp))
	}
	return out
}

func (c *Call) transferTool(target string) agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: "transfer_call", Description: "Transfer the caller to a person. Use when the caller asks for a human or you cannot help.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"}},"additionalProperties":false}`)},
		Run: func(ctx context.Context, _ agent.ToolCall, _ agent.Scope) (string, error) {
			if err := c.t.Transfer(ctx, target); err != nil {
				return fmt.Sprintf(`{"transferred":false,"error":%q}`, err.Error()), nil
			}
			c.End(OutcomeTransferred, "")
			return `{"transferred":true}`, nil
		},
	}
}

// pressKeys sends digits once what the agent said before has played (a
// person finishes "I'll press one" before pressing), holding the playout
// while they sound: a filler or the next sentence waits for the tones.
func (c *Call) pressKeys(ctx context.Context, kp Keypad, digits string) error {
	if err := c.waitPlayed(ctx); err != nil {
		return err
	}
	c.playout.holdForKeys()
	defer c.playout.releaseKeys()
	return kp.SendDigits(ctx, digits)
}

// waitPlayed returns once nothing is queued or playing: what the agent
// said before a tool acts is heard first.
func (c *Call) waitPlayed(ctx context.Context) error {
	for c.playout.Playing() {
		select {
		case <-c.clk.After(FrameDuration):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// keypadTool presses keys on the line (an automated menu, an extension, a
// PIN the person gave): the tones go out in place of the agent's voice and
// the tool returns once the last one did.
func (c *Call) keypadTool(kp Keypad) agent.ServerTool {
	return agent.ServerTool{
		Def: agent.Tool{Name: "send_dtmf", Description: "Press keys on the phone's keypad, for example to choose an option of an automated menu or dial an extension. " +
			"digits: 0-9, * and #; w waits half a second.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"digits":{"type":"string","pattern":"^[0-9*#A-Dw]{1,64}$"}},"required":["digits"],"additionalProperties":false}`)},
		Run: func(ctx context.Context, call agent.ToolCall, _ agent.Scope) (string, error) {
			var args struct {
				Digits string `json:"digits"`
			}
			if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil || ValidDigits(args.Digits) != nil {
				return fmt.Sprintf(`{"sent":false,"error":%q}`, ErrBadDigits.Error()), nil
			}
			if err := c.pressKeys(ctx, kp, args.Digits); err != nil {
				return fmt.Sprintf(`{"sent":false,"error":%q}`, err.Error()), nil
			}
			return fmt.Sprintf(`{"sent":%q}`, args.Digits), nil
		},
	}
}
