package voice

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/stackbone/box/telemetry"
)

// listen is the caller's side of the call: voice activity, endpointing
// and interruptions. Caller frames are heard on the transport's goroutine
// (Call.Hear); this goroutine hears the news of transcripts and a gap's
// silence, and hands ended utterances to out. While the caller speaks,
// their audio goes to the streaming transcriber (when the agent's has
// one) or, after a short silence, the utterance so far is sent for a
// speculative transcription; what comes back feeds endpointing (see
// endpointing.delay), and the turn takes the transcript of the endpoint.
// A speculation the caller talked past is cancelled and counted as wasted.
func (c *Call) listen(ctx context.Context, out chan<- utterance) {
	l := c.newListener(ctx)
	defer l.close()
	var readBy func(time.Time) bool
	if r, ok := c.t.(SharedReader); ok {
		readBy = r.ReadBy
	}
	c.inbox.start(l.step, readBy)
	err := c.inbox.serve(ctx, func() bool { return l.handOff(out) })
	if errors.Is(err, ErrMediaTimeout) {
		c.End(OutcomeMediaTimeout, "")
	}
}

// handOff gives the turns the utterances the listener ended, in order;
// false when the call ended first. It runs on the listen goroutine.
func (l *listener) handOff(out chan<- utterance) bool {
	for {
		l.c.inbox.mu.Lock()
		if len(l.ended) == 0 {
			l.c.inbox.mu.Unlock()
			return true
		}
		u := l.ended[0]
		l.ended[0] = utterance{}
		l.ended = l.ended[1:]
		l.c.inbox.mu.Unlock()
		select {
		case out <- u:
		case <-l.ctx.Done():
			return false
		}
	}
}

// listener is the caller's side of a call, one frame at a time: its steps
// run on the transport's goroutine (a frame) or the call's listen
// goroutine (news, a gap's silence), one at a time under the inbox's mu.
type listener struct {
	c     *Call
	ctx   context.Context
	ended []utterance // for the turns, handed over by the listen goroutine
	ep    endpointing
	in    interruption
	det   *vad
	wake  func() // a transcript arrived: look at the endpoint again

	stream TranscriptStream // the call's live stream, nil without one
	live   *liveSTT         // its reader, nil once it failed

	lastVoice time.Time    // the last frame that may hold speech (Heard), for wire-to-wire
	voicedAt  time.Time    // the last frame the VAD counted as voiced
	bg        background   // whether a long utterance's words still come
	began     time.Time    // the first voiced frame of the utterance in progress
	spec      *speculation // of the utterance in progress
	draft     *generation  // the answer started before the endpoint
	eager     bool         // draft started on the provider's eager end of turn
	wasted    []map[string]any
	span      trace.Span // the turn's, from the start of speech
	ov        *overlap   // the utterance in progress talks over the agent
	pending   *overlap   // the overlap the next emitted utterance settles
}

func (c *Call) newListener(ctx context.Context) *listener {
	l := &listener{c: c, ctx: ctx, ep: newEndpointing(c.agent, c.m.cfg.VAD), in: newInterruption(c.agent),
		wake: c.inbox.wake}
	vadCfg := c.m.cfg.VAD
	vadCfg.EndFrames = int((l.ep.max + FrameDuration - 1) / FrameDuration)
	if v := c.agent.Voice; v != nil && v.VAD != "" {
		vadCfg.Detector = v.VAD
	}
	det, err := newVAD(vadCfg, c.info.SampleRate)
	if err != nil {
		// A call is better heard by the energy detector than not at all.
		c.m.log.Warn("voice: voice activity detector, energy instead", "call", c.info.ID, "error", err)
		vadCfg.Detector = VADEnergy
		det, _ = newVAD(vadCfg, c.info.SampleRate)
	}
	l.det = det
	if st, ok := c.stt.(StreamingTranscriber); ok {
		stream, err := st.Listen(ctx, c.info.SampleRate)
		if err != nil {
			c.m.log.Warn("voice: speech-to-text stream", "call", c.info.ID, "error", err)
		} else {
			l.stream = stream
			l.live = newLiveSTT(stream, c.clk, c.info.SampleRate, l.wake)
		}
	}
	return l
}

// close lets go of the utterance in progress as the call ends.
func (l *listener) close() {
	l.bg.drop()
	l.discard()
	l.abandon("the call ended")
	l.dropSpan()
	if l.stream != nil {
		l.stream.Close()
	}
}

// step takes one caller frame (nil: only a transcript arrived) and ends
// the utterance when its endpoint came; false when the call ended while
// the turn was handed over.
func (l *listener) step(frame []int16, now time.Time) bool {
	if frame != nil {
		ended, ok := l.hear(frame, now)
		if ended || !ok {
			return ok
		}
	}
	return l.endpoint(now)
}

// hear runs a frame through voice activity detection, the overlap with
// the agent's speech and the live stream; ended says the VAD's longest
// delay ended the utterance (handed over unless it was no turn).
func (l *listener) hear(frame []int16, now time.Time) (ended, ok bool) {
	if l.c.transferring.Load() {
		return false, true // on hold or with the person: no turn
	}
	det := l.det
	wasSpeaking, _ := det.Speaking()
	ev := det.Process(frame)
	if det.Heard() {
		l.lastVoice = now
	}
	speaking, _ := det.Speaking()
	l.overlapStep(speaking, now)
	if l.c.scr != nil {
		l.c.scr.hear(frame, speaking && det.Silent() == 0, now)
	}
	if l.live != nil && (speaking || wasSpeaking) {
		pcm := frame
		if ev == vadSpeechStart {
			pcm = det.Snapshot() // the onset frames too
		}
		l.live.send(pcm, speaking && det.Silent() == 0)
	}
	switch {
	case ev == vadSpeechStart:
		l.bg.reset(now)
		l.discard()
		l.abandon("the caller went on")
		l.dropSpan()
		_, l.span = telemetry.Tracer("voice").Start(l.ctx, "turn")
		l.voicedAt = now
		l.began = now.Add(-time.Duration(det.cfg.StartFrames-1) * FrameDuration)
		if l.live != nil {
			l.live.begin()
		}
	case ev == vadDiscard:
		l.noise()
	case ev == vadSpeechEnd:
		l.bg.drop()
		// The longest delay passed without a decision.
		text, known := l.words()
		_, reason := l.ep.delay(text, known, l.live == nil)
		if reason != endTrailing {
			reason = endSilence
		}
		if !l.kept(false) {
			return true, true
		}
		return true, l.emit(utterance{pcm: det.Utterance(), began: l.began, lastVoice: l.lastVoice, endpoint: now, reason: reason})
	case speaking && det.Silent() == 0:
		l.voicedAt = now
		l.discard() // the caller went on
		l.abandon("the caller went on")
		if l.live != nil {
			l.live.wentOn()
		}
	case speaking && l.live == nil && l.spec == nil && now.Sub(l.voicedAt) >= speculateAfter:
		l.spec = l.c.speculate(l.inTurn(), det.Snapshot(), l.wake)
	}
	if speaking && ev == vadNone {
		if text, over := l.backgroundOnly(now); over {
			return true, l.endOnBackground(text, now)
		}
	}
	return false, true
}

// endpoint ends the utterance in progress once the silence after it is as
// long as its words ask for (see endpointing.delay), or at once when the
// speech-to-text provider ended the turn (TurnEnd), and may start the
// answer before that (preemptive generation): on the provider's eager end
// of turn, abandoned when it says the caller resumed, or when the words
// so far make the endpoint near.
func (l *listener) endpoint(now time.Time) bool {
	if speaking, _ := l.det.Speaking(); !speaking || l.det.Silent() == 0 {
		return true
	}
	signal := ""
	if l.live != nil {
		signal = l.live.signal()
	}
	if l.eager && signal != TurnEager && signal != TurnEnd {
		l.abandon("the turn resumed")
	}
	text, known := l.words()
	if signal == TurnEager && text != "" && (l.draft == nil || l.draft.text != text) && l.c.canDraft() {
		// The provider thinks the caller may be done: the answer starts
		// now, held until the turn ends (TurnEnd, or the endpoint).
		l.abandon("the words changed")
		l.draft, l.eager = l.c.generate(l.inTurn(), text, l.c.messages()), true
	}
	d, reason := l.ep.delay(text, known, l.live == nil)
	if signal == TurnEnd {
		d, reason = 0, endTurn
	}
	if (reason == endComplete || reason == endClosed || reason == endSentence) && (l.draft == nil || l.draft.text != text) &&
		now.Sub(l.voicedAt)+l.c.m.answerLeadOf(l.c.info.Agent) >= d && l.c.canDraft() {
		// Likely the end: start the answer now, held until the endpoint
		// is confirmed, as early as its usual time to the first playable
		// audio (the model's first token and the first speech bytes)
		// makes it ready by the endpoint, and no earlier: a pause the
		// caller talks past costs an abandoned model run (the turn's
		// wasted work), so it is not spent where it cannot shorten the
		// wait.
		l.abandon("the words changed")
		l.draft = l.c.generate(l.inTurn(), text, l.c.messages())
	}
	if now.Sub(l.voicedAt) < d {
		return true
	}
	return l.cut(now, reason)
}

// cut ends the utterance in progress now, for reason; false when the call
// ended while the turn was handed over.
func (l *listener) cut(now time.Time, reason string) bool {
	l.bg.drop()
	pcm, ok := l.det.Cut()
	if !ok {
		l.noise() // a click or a cough
		return true
	}
	if !l.kept(false) {
		return true
	}
	return l.emit(utterance{pcm: pcm, began: l.began, lastVoice: l.lastVoice, endpoint: now, reason: reason})
}

// overlapStep follows the caller's sound over the agent's speech: the
// first sound pauses the agent; words (or long speech) make it yield; a
// quiet caller whose words are only backchannels, or none in time, lets
// it go on (see Interruptions in interrupt.go).
func (l *listener) overlapStep(speaking bool, now time.Time) {
	c, in, det := l.c, l.in, l.det
	if c.toMachine.Load() {
		return
	}
	if speaking && l.ov == nil {
		if t := c.agentTurn(); t != nil {
			l.ov = &overlap{t: t}
			if !in.immediate {
				c.pause(l.ov)
			}
		}
	}
	ov := l.ov
	if ov == nil || ov.yielded {
		return
	}
	if speaking && det.Silent() == 0 {
		ov.voiced++
	}
	voiced := time.Duration(ov.voiced) * FrameDuration
	text, known := l.words()
	words := in.substantive(text)
	// noWords: the overlap's own transcription (HTTP) found no words in
	// it that are more than backchannels, though it went on: other voices,
	// a television.
	noWords := false
	if l.live == nil && !in.immediate {
		ov.heard.follow(l, ov, speaking, voiced)
		if ov.heard.known {
			heard := in.substantive(ov.heard.text)
			words, noWords = max(words, heard), heard == 0
		}
	}
	// The words known of the overlap so far: a speculation the caller
	// talked past is discarded, what it said is not forgotten.
	ov.seen = max(ov.seen, words)
	quiet := !speaking || det.Silent() >= overlapQuietFrames
	late := ov.paused() && now.Sub(ov.pausedAt) >= in.resumeAfter
	switch {
	case in.immediate:
		if voiced >= in.immediateAfter {
			l.yield(0)
		}
	case words >= in.minWords || (voiced >= in.minVoiced && ((text == "" && !noWords) || words > 0)) ||
		(ov.seen > 0 && voiced >= in.minVoiced/2):
		// Enough words; or long speech with nothing known to be a
		// backchannel (nor, by its own transcription, to hold no words);
		// or a word that is none ("Sorry,", "Wait,") and the caller still
		// talking half as long.
		l.yield(max(words, ov.seen))
	case ov.paused() && ov.seen == 0 && ((quiet && (known || late)) || (!quiet && late && noWords)):
		// Only backchannels, or no words in time: the agent goes on,
		// also under a sound that goes on without words (other voices on
		// the line, a television). A word that is more ("No," "Wait,")
		// holds the pause until the utterance ends: the caller is most
		// likely going on.
		c.resume(ov, words)
	}
}

// yield gives the caller the turn: the agent's is cut where it paused.
func (l *listener) yield(words int) {
	l.ov.yielded = true
	if l.c.agentTurn() == l.ov.t {
		l.c.recordOverlap(l.ov, overlapYielded, words)
		l.c.bargeIn()
	}
}

// kept decides, as the utterance in progress ends, whether it is a turn of
// the caller: not when it talked over the agent without making it yield (a
// backchannel, a cough, a noise burst), which resumes the agent and is
// dropped. When its words are not known yet, the paused agent waits for
// them: the utterance goes to the turn, which settles the overlap on its
// transcript (settleOverlap). noise says the VAD found no utterance in it.
func (l *listener) kept(noise bool) bool {
	c, in := l.c, l.in
	o := l.ov
	l.ov = nil
	if o == nil {
		return true
	}
	o.heard.drop()
	if o.yielded {
		return true
	}
	if in.immediate {
		c.recordOverlap(o, overlapIgnored, 0)
		return true
	}
	text, known := l.words()
	if w := in.substantive(text); w >= in.minWords {
		l.ov = o
		l.yield(w)
		l.ov = nil
		return true
	}
	if !noise && !known {
		l.pending = o
		c.waitForWords(o, in)
		return true
	}
	c.resume(o, in.substantive(text))
	l.discard()
	l.abandon("the caller did not take the turn")
	l.dropSpan()
	if l.live != nil && !l.live.failed() {
		l.live.finalize() // its words are no part of the next utterance
	}
	return false
}

// noise lets go of an utterance too short to be speech.
func (l *listener) noise() {
	l.kept(true)
	l.discard()
	l.abandon("noise")
	l.dropSpan()
}

// emit hands the utterance that ended to the conversation, with what was
// started for it; false when the call ended first.
func (l *listener) emit(u utterance) bool {
	u.overlap, l.pending = l.pending, nil
	u.span, l.span = l.span, nil
	u.draft, l.draft, l.eager = l.draft, nil, false
	u.wasted, l.wasted = l.wasted, nil
	if l.live != nil {
		if l.live.failed() {
			l.live = nil
		} else {
			u.final = l.live.finalize()
		}
	}
	if l.live == nil && l.spec != nil {
		u.spec, l.spec = l.spec, nil
	}
	if l.ctx.Err() != nil {
		return false
	}
	l.ended = append(l.ended, u)
	l.c.inbox.poke()
	return true
}

// words is what is known of the words of the utterance in progress, and
// whether it covers all of its speech (it arrived after the silence
// began).
func (l *listener) words() (string, bool) {
	if l.live != nil {
		return l.live.words(l.voicedAt)
	}
	if l.spec != nil {
		return l.spec.answer()
	}
	return "", false
}

// dropSpan ends the trace span of an utterance that was no turn.
func (l *listener) dropSpan() {
	if l.span != nil {
		l.span.SetAttributes(attribute.Bool("turn.discarded", true))
		l.span.End()
		l.span = nil
	}
}

// inTurn is the context of the turn's provider requests.
func (l *listener) inTurn() context.Context {
	if l.span == nil {
		return l.ctx
	}
	return trace.ContextWithSpan(l.ctx, l.span)
}

// abandon drops the answer started before the endpoint.
func (l *listener) abandon(why string) {
	if l.draft != nil {
		l.c.abandon(l.draft, why)
		l.wasted = append(l.wasted, l.draft.wasted(why))
		l.draft, l.eager = nil, false
	}
}

// discard cancels the speculative transcription of the utterance.
func (l *listener) discard() {
	if l.spec == nil {
		return
	}
	l.spec.cancel()
	_, answered := l.spec.answer()
	l.wasted = append(l.wasted, map[string]any{"kind": "transcription", "answered": answered,
		"ms": l.c.clk.Since(l.spec.started).Milliseconds()})
	l.spec = nil
}
