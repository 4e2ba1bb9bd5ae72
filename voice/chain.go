package voice

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider"
)

// Errors of the speech chains.
var (
	// ErrSpeechChain: every speech engine of an agent's chain failed (or
	// was skipped while its provider's circuit is open).
	ErrSpeechChain = errors.New("voice: every speech engine of the chain failed")
	// ErrSpeechDown: every engine failed and each provider's circuit is
	// open: the part is down, not failing once. It is also ErrSpeechChain.
	ErrSpeechDown = fmt.Errorf("%w, and every provider is down", ErrSpeechChain)
)

// sttEntry is one speech-to-text engine of an agent's chain.
type sttEntry struct {
	id      string
	circuit *provider.Circuit // nil: an engine with no provider
	stt     Transcriber
}

// ttsEntry is one text-to-speech engine of an agent's chain.
type ttsEntry struct {
	id      string
	circuit *provider.Circuit
	tts     Synthesizer
}

// allow reports whether an engine's provider takes a request now.
func allow(c *provider.Circuit) bool { return c == nil || c.Allow() }

// verdict reports a request's outcome to an engine's circuit: a failure
// unless it succeeded or was cancelled (a barge-in or the call's end says
// nothing of the provider).
func verdict(ctx context.Context, c *provider.Circuit, err error) {
	switch {
	case c == nil:
	case err == nil:
		c.Success()
	case ctx.Err() != nil:
		c.Release()
	default:
		c.Fail("speech_failed")
	}
}

// chainSTT is an agent's speech-to-text: the one engine, or a chain that
// tries each in order (a live first engine keeps streaming; an utterance it
// cannot transcribe goes whole to the next).
func chainSTT(entries []sttEntry, firstByte time.Duration) Transcriber {
	if len(entries) == 1 && entries[0].circuit == nil {
		return entries[0].stt
	}
	c := sttChain{entries: entries, firstByte: firstByte}
	if live, ok := entries[0].stt.(StreamingTranscriber); ok {
		return liveSTTChain{StreamingTranscriber: live, sttChain: c}
	}
	return c
}

// sttChain tries each engine in order; an engine that is not the last has
// firstByte to answer.
type sttChain struct {
	entries   []sttEntry
	firstByte time.Duration
}

// Transcribe implements Transcriber: the first engine whose circuit lets a
// request through and that answers.
func (s sttChain) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	var last error
	rep := reportOf(ctx, partSTT)
	for i, e := range s.entries {
		if !allow(e.circuit) {
			rep.skip(e.id, skipReason(nil))
			continue
		}
		actx, _, done := bound(ctx, s.firstByte, 0, i < len(s.entries)-1)
		text, err := e.stt.Transcribe(actx, pcm, rate)
		err = done(err)
		verdict(ctx, e.circuit, err)
		if err == nil {
			rep.serve(e.id)
		}
		if err == nil || ctx.Err() != nil {
			return text, err
		}
		rep.skip(e.id, skipReason(err))
		last = fmt.Errorf("%s: %w", e.id, err)
	}
	return "", chainFailed(last, sttDown(s.entries))
}

// sttDown reports whether every engine's provider is held down.
func sttDown(entries []sttEntry) bool {
	for _, e := range entries {
		if e.circuit == nil || !e.circuit.Down() {
			return false
		}
	}
	return true
}

// liveSTTChain streams to the chain's live first engine; a whole
// utterance goes through the chain.
type liveSTTChain struct {
	StreamingTranscriber
	sttChain
}

// Transcribe implements Transcriber.
func (l liveSTTChain) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	return l.sttChain.Transcribe(ctx, pcm, rate)
}

// chainTTS is an agent's text-to-speech: the one engine, or a chain that
// speaks each sentence with the first engine that can.
func chainTTS(entries []ttsEntry, firstByte, chunk time.Duration) Synthesizer {
	if len(entries) == 1 && entries[0].circuit == nil {
		return entries[0].tts
	}
	c := ttsChain{entries: entries, firstByte: firstByte, chunk: chunk}
	if _, ok := entries[0].tts.(StreamingSynthesizer); ok {
		return streamingTTSChain{c}
	}
	return c
}

// ttsChain speaks whole sentences (its first engine does not stream, and
// may give word timings).
type ttsChain struct {
	entries   []ttsEntry
	firstByte time.Duration // for an engine that is not the last, to its first audio
	chunk     time.Duration // and between two pieces of its audio after that
}

// streamingTTSChain streams each sentence's audio as it arrives, from the
// first engine that can speak it.
type streamingTTSChain struct{ ttsChain }

// Synthesize implements Synthesizer.
func (t ttsChain) Synthesize(ctx context.Context, text string, rate int) (Segment, error) {
	var last error
	rep := reportOf(ctx, partTTS)
	for i, e := range t.entries {
		if !allow(e.circuit) {
			rep.skip(e.id, skipReason(nil))
			continue
		}
		actx, _, done := bound(ctx, t.firstByte, 0, i < len(t.entries)-1)
		seg, err := e.tts.Synthesize(actx, text, rate)
		err = done(err)
		verdict(ctx, e.circuit, err)
		if err == nil {
			rep.serve(e.id)
		}
		if err == nil || ctx.Err() != nil {
			return seg, err
		}
		rep.skip(e.id, skipReason(err))
		last = fmt.Errorf("%s: %w", e.id, err)
	}
	return Segment{}, chainFailed(last, false)
}

// SynthesizeStream implements StreamingSynthesizer: an engine that fails
// before any of the sentence's audio arrived hands it to the next. One that
// fails after (its stream cut, or silent between two pieces of audio for
// the chunk bound: a stall, or a trickle too slow to play) stops the sentence short where it was: with no
// word timings, no engine can go on from the middle of a sentence, so the
// next engine says the whole sentence again, as a person cut off repeats
// theirs; the caller hears its start twice, and the heard transcript holds
// it once.
func (t streamingTTSChain) SynthesizeStream(ctx context.Context, text string, rate int, emit func(pcm []int16)) error {
	var last error
	rep := reportOf(ctx, partTTS)
	for i, e := range t.entries {
		if !allow(e.circuit) {
			rep.skip(e.id, skipReason(nil))
			continue
		}
		actx, arrived, done := bound(ctx, t.firstByte, t.chunk, i < len(t.entries)-1)
		var err error
		if st, ok := e.tts.(StreamingSynthesizer); ok {
			err = st.SynthesizeStream(actx, text, rate, func(pcm []int16) {
				arrived() // the bound starts again: a stall fails the engine too
				emit(pcm)
			})
		} else {
			var seg Segment
			if seg, err = e.tts.Synthesize(actx, text, rate); err == nil {
				emit(seg.PCM)
			}
		}
		err = done(err)
		verdict(ctx, e.circuit, err)
		if err == nil {
			rep.serve(e.id)
		}
		if err == nil || ctx.Err() != nil {
			return err
		}
		rep.skip(e.id, skipReason(err))
		last = fmt.Errorf("%s: %w", e.id, err)
	}
	return chainFailed(last, false)
}

// errNoFirstByte cancels a speech request that gave nothing within its
// bound.
var errNoFirstByte = errors.New("voice: no first byte in time")

// bound gives an engine that is not a chain's last (more) firstByte to
// start answering: arrived gives it chunk (0: firstByte) again (a streamed
// answer calls it on each piece, so a stall or a trickle between two
// pieces is bounded too; a whole answer once it came); done stops the
// clock, turns the cancellation it caused into a timeout of the engine (so
// the chain moves on) and frees the bound's context.
func bound(ctx context.Context, firstByte, chunk time.Duration, more bool) (actx context.Context, arrived func(), done func(error) error) {
	if firstByte <= 0 || !more {
		return ctx, func() {}, func(err error) error { return err }
	}
	if chunk <= 0 {
		chunk = firstByte
	}
	actx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(firstByte, func() { cancel(errNoFirstByte) })
	var started atomic.Bool
	return actx, func() { started.Store(true); timer.Reset(chunk) }, func(err error) error {
		timer.Stop()
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errNoFirstByte) {
			err = fmt.Errorf("%w after %s", errNoFirstByte, firstByte)
			if started.Load() {
				err = fmt.Errorf("%w: nothing more after %s", errNoFirstByte, chunk)
			}
		}
		cancel(nil)
		return err
	}
}

// firstByteBound is ag's voice.firstByteTimeout, or the default.
func firstByteBound(ag config.Agent) time.Duration {
	if v := ag.Voice; v != nil && v.FirstByteTimeout > 0 {
		return v.FirstByteTimeout
	}
	return DefaultFirstByteTimeout
}

// chunkBound is ag's voice.chunkTimeout, or its first-byte bound.
func chunkBound(ag config.Agent) time.Duration {
	if v := ag.Voice; v != nil && v.ChunkTimeout > 0 {
		return v.ChunkTimeout
	}
	return firstByteBound(ag)
}

// chainFailed is a chain's error: ErrSpeechDown when its providers are
// held down, else ErrSpeechChain, with the last engine's failure.
func chainFailed(last error, down bool) error {
	kind := ErrSpeechChain
	if down {
		kind = ErrSpeechDown
	}
	if last == nil {
		return fmt.Errorf("%w: every provider's circuit is open", kind)
	}
	return fmt.Errorf("%w (last: %v)", kind, last)
}

// readWAV reads a 16-bit mono PCM WAV file, resampled to rate.
func readWAV(path string, rate int) ([]int16, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pcm, fileRate, err := DecodeWAV(b)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, filepath.Base(path))
	}
	return Resample(pcm, fileRate, rate), nil
}

// DecodeWAV reads a 16-bit mono PCM WAV file: its samples and their rate.
// A data chunk whose size is not filled in (a file still being written)
// runs to the end of the file.
func DecodeWAV(b []byte) (pcm []int16, rate int, err error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, errors.New("voice: not a WAV file")
	}
	for i := 12; i+8 <= len(b); {
		id, size := string(b[i:i+4]), int(binary.LittleEndian.Uint32(b[i+4:i+8]))
		i += 8
		switch {
		case id == "fmt " && size >= 16 && i+16 <= len(b):
			format, channels, bits := binary.LittleEndian.Uint16(b[i:]), binary.LittleEndian.Uint16(b[i+2:]), binary.LittleEndian.Uint16(b[i+14:])
			if format != 1 || channels != 1 || bits != 16 {
				return nil, 0, errors.New("voice: the WAV file is not 16-bit mono PCM")
			}
			rate = int(binary.LittleEndian.Uint32(b[i+4:]))
		case id == "data" && rate > 0:
			data := b[i:]
			if size > 0 && size <= len(data) {
				data = data[:size]
			}
			pcm = make([]int16, len(data)/2)
			for j := range pcm {
				pcm[j] = int16(binary.LittleEndian.Uint16(data[2*j:]))
			}
			return pcm, rate, nil
		}
		if size < 0 || i+size > len(b) {
			break
		}
		i += size + size%2
	}
	return nil, 0, errors.New("voice: the WAV file has no 16-bit mono PCM data")
}

// Parts whose engines a turn reports (engineReport).
const (
	partSTT = "speechToText"
	partTTS = "textToSpeech"
)

// engineReport is which engines of a chain served a turn's part, and why
// the others were skipped, as the turn's metrics show them (the run's
// voice metadata): {"servedBy": [...], "skipped": [{"engine", "reason"}]}.
type engineReport struct {
	mu      sync.Mutex
	served  []string
	skipped []map[string]string
}

type reportKey string

// withReport gives ctx a report of part's engines.
func withReport(ctx context.Context, part string) (context.Context, *engineReport) {
	r := &engineReport{}
	return context.WithValue(ctx, reportKey(part), r), r
}

// reportOf is ctx's report of part, or nil.
func reportOf(ctx context.Context, part string) *engineReport {
	r, _ := ctx.Value(reportKey(part)).(*engineReport)
	return r
}

func (r *engineReport) serve(id string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !slices.Contains(r.served, id) {
		r.served = append(r.served, id)
	}
}

func (r *engineReport) skip(id, reason string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped = append(r.skipped, map[string]string{"engine": id, "reason": reason})
}

// view is the report for the turn's metrics; nil when no chain reported.
func (r *engineReport) view() map[string]any {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.served) == 0 && len(r.skipped) == 0 {
		return nil
	}
	v := map[string]any{"servedBy": slices.Clone(r.served)}
	if len(r.skipped) > 0 {
		v["skipped"] = slices.Clone(r.skipped)
	}
	return v
}

// skipReason names why an engine did not serve: its circuit was open, it
// timed out, or it failed.
func skipReason(err error) string {
	switch {
	case err == nil:
		return "circuit open"
	case errors.Is(err, errNoFirstByte), errors.Is(err, provider.ErrTimeout):
		return "provider_timeout"
	}
	return "provider_error"
}
