package voice

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/costs"
	"github.com/stackbone/box/provider"
)

// Transcriber turns one utterance into text.
type Transcriber interface {
	Transcribe(ctx context.Context, pcm []int16, rate int) (string, error)
}

// StreamingTranscriber is a Transcriber that can also listen while the
// caller speaks: audio goes to the provider as it arrives, and interim and
// final transcripts come back. The call controller uses Listen when the
// agent's transcriber offers it and Transcribe otherwise.
type StreamingTranscriber interface {
	Transcriber
	// Listen opens one live transcription for a call at rate; it lasts
	// until Close or ctx ends.
	Listen(ctx context.Context, rate int) (TranscriptStream, error)
}

// TranscriptStream is one live transcription of a call's caller audio.
type TranscriptStream interface {
	// Send passes caller audio in order as it arrives. It does not wait on
	// the network: a stream that cannot keep up fails (an Err event)
	// rather than hold the media path. pcm is the controller's again once
	// Send returns (it reuses the frame): a stream copies what it keeps.
	Send(pcm []int16) error
	// Finalize asks for the final transcript of the audio sent since the
	// previous final: the controller's endpointing decided the caller
	// stopped. The answer arrives on Results with Final set.
	Finalize() error
	// Results carries interim and final transcripts in order; it is
	// closed when the stream ends, after an event with Err if it failed.
	Results() <-chan TranscriptEvent
	// Close ends the stream and releases its connection.
	Close() error
}

// TranscriptEvent is an interim or final transcript of the utterance in
// progress, or the error that ended the stream.
type TranscriptEvent struct {
	// Text is the whole utterance so far (interim) or its transcript
	// (final), not a delta.
	Text string
	// Final marks the answer to a Finalize.
	Final bool
	// Settled marks an interim the provider's own end-of-speech detection
	// settled (OpenAI server VAD, Deepgram endpointing): its words will
	// not change, and they cover the stream's audio up to Through (0: the
	// wire does not say how far).
	Settled bool
	Through time.Duration
	// Turn is the provider's turn signal, on a stream that has one (see
	// TurnDetection): TurnEager, TurnResumed or TurnEnd; "" for none.
	Turn string
	Err  error
}

// The turn signals of a turn-taking stream (TranscriptEvent.Turn).
const (
	// TurnEager: the provider thinks the caller may be done (Deepgram's
	// EagerEndOfTurn); Text is the turn's words. The answer may start.
	TurnEager = "eager"
	// TurnResumed: the caller went on after an eager end of turn
	// (TurnResumed); an answer started on it is abandoned.
	TurnResumed = "resumed"
	// TurnEnd: the provider ended the turn (Deepgram's EndOfTurn, with the
	// turn's words Settled; the Realtime semantic VAD's speech_stopped,
	// whose words follow).
	TurnEnd = "end"
)

// Synthesizer speaks one sentence at rate; the segment's Words are the
// engine's word timings when it has them.
type Synthesizer interface {
	Synthesize(ctx context.Context, text string, rate int) (Segment, error)
}

// StreamingSynthesizer is a Synthesizer that hands the audio of a sentence
// over as it arrives, so the call plays its first bytes while the rest is
// still being synthesised. The call controller uses it when the agent's
// synthesizer offers it.
type StreamingSynthesizer interface {
	Synthesizer
	// SynthesizeStream speaks text at rate, calling emit with each piece of
	// audio in order as it arrives; it returns once all of it arrived. An
	// error after some audio was emitted means the sentence stopped short.
	// Each piece is emit's to keep: the engine does not touch it again.
	SynthesizeStream(ctx context.Context, text string, rate int, emit func(pcm []int16)) error
}

// ProviderSTT transcribes through an OpenAI-compatible
// /v1/audio/transcriptions endpoint (one request per utterance, as WAV).
type ProviderSTT struct {
	Model provider.Model
}

// Transcribe implements Transcriber.
func (p ProviderSTT) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	wav, _ := wavBuffers.Get().(*[]byte)
	if wav == nil {
		wav = new([]byte)
	}
	*wav = appendWAV((*wav)[:0], pcm, rate)
	resp, err := p.Model.Client.CreateTranscription(ctx, openai.AudioRequest{
		Model: p.Model.Name, FilePath: "utterance.wav", Reader: bytes.NewReader(*wav),
		Format: openai.AudioResponseFormatJSON,
	})
	// The request is over, its body read: the encoding serves the next.
	wavBuffers.Put(wav)
	if err != nil {
		return "", fmt.Errorf("voice: speech-to-text: %s", provider.Describe(err))
	}
	costs.MeterOf(ctx).SpeechToText(p.Model.ID, len(pcm), rate)
	return strings.TrimSpace(resp.Text), nil
}

// ProviderTTS speaks through an OpenAI-compatible /v1/audio/speech
// endpoint as 24 kHz PCM, resampled to the call's rate. It has no word
// timings, so a sentence it speaks counts as heard only once all of it
// played.
type ProviderTTS struct {
	Model provider.Model
	Voice string
}

// providerTTSRate is the rate of the "pcm" response format.
const providerTTSRate = 24000

// Synthesize implements Synthesizer.
func (p ProviderTTS) Synthesize(ctx context.Context, text string, rate int) (Segment, error) {
	var pcm []int16
	err := p.SynthesizeStream(ctx, text, rate, func(b []int16) { pcm = append(pcm, b...) })
	if err != nil {
		return Segment{}, err
	}
	return Segment{Text: text, PCM: pcm}, nil
}

// ttsReadChunk is how much of a streamed speech response is read at a time
// (about 40 ms of 24 kHz PCM): small enough that the first frame plays as
// soon as it arrives.
const ttsReadChunk = 2048

// SynthesizeStream implements StreamingSynthesizer: the "pcm" response is
// read as the provider sends it and resampled on the way.
func (p ProviderTTS) SynthesizeStream(ctx context.Context, text string, rate int, emit func(pcm []int16)) error {
	voice := p.Voice
	if voice == "" {
		voice = "alloy"
	}
	raw, err := p.Model.Client.CreateSpeech(ctx, openai.CreateSpeechRequest{
		Model: openai.SpeechModel(p.Model.Name), Input: text, Voice: openai.SpeechVoice(voice),
		ResponseFormat: openai.SpeechResponseFormatPcm,
	})
	if err != nil {
		return fmt.Errorf("voice: text-to-speech: %s", provider.Describe(err))
	}
	// Accepted, the text is billed, whether or not its audio plays.
	costs.MeterOf(ctx).TextToSpeech(p.Model.ID, utf8.RuneCountInString(text))
	defer raw.Close()
	// A broken provider or a proxy in front of it can answer 200 with a
	// page or a JSON error: never played to the caller as if it were audio.
	if ct := strings.ToLower(raw.Header().Get("Content-Type")); strings.HasPrefix(ct, "text/") || strings.Contains(ct, "json") {
		return fmt.Errorf("voice: text-to-speech: the provider answered %s, not audio", clipType(ct))
	}
	rs := newStreamResampler(providerTTSRate, rate)
	// One read buffer, with room for a sample split across two reads in
	// front, and one buffer of samples: the resampler copies what it
	// keeps and emits new slices (without resampling, the samples
	// themselves go out, so they are new each time).
	buf := make([]byte, 1+ttsReadChunk)
	var samples []int16
	odd := false // buf[0] holds the first byte of a split sample
	total := 0
	for {
		n, rerr := raw.Read(buf[1:])
		if n > 0 {
			total += n
			if total > 50<<20 {
				return fmt.Errorf("voice: text-to-speech: the response is too long")
			}
			b := buf[1 : 1+n]
			if odd {
				b = buf[:1+n]
			}
			if rs.from == rs.to || cap(samples) < len(b)/2 {
				samples = make([]int16, len(b)/2)
			}
			pcm := samples[:len(b)/2]
			for i := range pcm {
				pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
			}
			if odd = len(b)%2 == 1; odd {
				buf[0] = b[len(b)-1]
			}
			if out := rs.push(pcm); len(out) > 0 {
				emit(out)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fmt.Errorf("voice: text-to-speech: read: %w", rerr)
		}
	}
	if out := rs.flush(); len(out) > 0 {
		emit(out)
	}
	return nil
}

// streamResampler is Resample over audio that arrives in pieces: it gives
// exactly what Resample gives for the whole, as far as the input so far
// decides it.
type streamResampler struct {
	from, to int
	k        int     // moving-average width when going down (1: none)
	last     []int16 // the last k inputs, a ring (the moving sum's window)
	slot     int     // the ring's next slot
	n        int     // inputs so far
	sum      int32
	held     int16 // down by a whole ratio: the output that goes out next
	// src is the low-passed input from index base on: only what the
	// outputs still to come read, so a long answer keeps a few samples,
	// not the whole of its audio.
	src  []int16
	base int
	next int // the next output sample to produce
}

func newStreamResampler(from, to int) *streamResampler {
	r := &streamResampler{from: from, to: to, k: 1}
	if to < from {
		r.k = max((from+to-1)/to, 1)
		r.last = make([]int16, r.k)
	}
	return r
}

func (r *streamResampler) push(pcm []int16) []int16 {
	if r.from == r.to {
		return pcm
	}
	if r.k <= 1 {
		r.src = append(r.src, pcm...)
		r.n += len(pcm)
		return r.emit(false)
	}
	if r.from == r.k*r.to {
		return r.pushWhole(pcm)
	}
	for _, v := range pcm {
		r.src = append(r.src, r.lowPass(v))
	}
	return r.emit(false)
}

// lowPass takes the next input and gives its moving average.
func (r *streamResampler) lowPass(v int16) int16 {
	r.take(v)
	return int16(r.sum / int32(min(r.n, r.k)))
}

// take adds the next input to the moving sum. The ring's slot is kept by
// hand: a division per sample for it was most of a resampler's time
// (24,000 samples a second per speaking call).
func (r *streamResampler) take(v int16) {
	if r.n >= r.k {
		r.sum -= int32(r.last[r.slot]) // the input k before this one
	}
	r.last[r.slot] = v
	if r.slot++; r.slot == r.k {
		r.slot = 0
	}
	r.sum += int32(v)
	r.n++
}

// pushWhole is push down by a whole ratio (24 kHz to 8 kHz: k inputs to
// an output). Output i is the moving average at input k*i, which the
// interpolation gives (it falls on that input), and it goes out once
// input k*i+k-1 arrived, as emit would let it: nothing is kept but the
// ring, and the other inputs' averages are never taken.
func (r *streamResampler) pushWhole(pcm []int16) []int16 {
	out := make([]int16, 0, len(pcm)/r.k+1)
	for _, v := range pcm {
		if r.slot == 0 { // this input's index is a multiple of k
			r.held = r.lowPass(v)
		} else {
			r.take(v)
		}
		if r.slot == 0 { // input k*i+k-1 arrived: output i goes out
			out = append(out, r.held)
		}
	}
	return out
}

// flush produces the outputs that needed the input's end.
func (r *streamResampler) flush() []int16 {
	if r.from == r.to || r.from == r.k*r.to {
		return nil
	}
	return r.emit(true)
}

func (r *streamResampler) emit(final bool) []int16 {
	size := r.base + len(r.src) // low-passed samples so far
	total := -1
	if final {
		total = int(int64(size) * int64(r.to) / int64(r.from))
	}
	// What the input so far gives, at most (one allocation per push).
	out := make([]int16, 0, max(0, int(int64(size)*int64(r.to)/int64(r.from))-r.next+1))
	for {
		i := r.next
		if final && i >= total {
			break
		}
		pos := float64(i) * float64(r.from) / float64(r.to)
		j := int(pos)
		if !final && (j+1 >= size || int64(i+1)*int64(r.from) > int64(size)*int64(r.to)) {
			break // needs the sample after j, or may be past the end
		}
		if j >= size {
			break
		}
		a := float64(r.src[j-r.base])
		b := a
		if j+1 < size {
			b = float64(r.src[j+1-r.base])
		}
		out = append(out, int16(a+(b-a)*(pos-float64(j))))
		r.next++
	}
	// Drop what no output to come reads (they read from the next one's j).
	if keep := int(float64(r.next)*float64(r.from)/float64(r.to)) - r.base; keep > 0 {
		keep = min(keep, len(r.src))
		r.src = r.src[:copy(r.src, r.src[keep:])]
		r.base += keep
	}
	return out
}

// Resample converts 16-bit mono PCM between rates by linear interpolation,
// after a moving-average low-pass when going down, which keeps speech
// intelligible at telephone rates without a DSP dependency.
func Resample(in []int16, from, to int) []int16 {
	if from == to || len(in) == 0 {
		return in
	}
	src := in
	if to < from {
		// Average over the decimation factor to cut what the target rate
		// cannot carry.
		k := (from + to - 1) / to
		if k > 1 {
			src = make([]int16, len(in))
			var sum int
			for i := range in {
				sum += int(in[i])
				if i >= k {
					sum -= int(in[i-k])
				}
				n := min(i+1, k)
				src[i] = int16(sum / n)
			}
		}
	}
	n := int(int64(len(src)) * int64(to) / int64(from))
	out := make([]int16, n)
	for i := range out {
		pos := float64(i) * float64(from) / float64(to)
		j := int(pos)
		frac := pos - float64(j)
		a := float64(src[j])
		b := a
		if j+1 < len(src) {
			b = float64(src[j+1])
		}
		out[i] = int16(a + (b-a)*frac)
	}
	return out
}

// encodeWAV wraps 16-bit mono PCM in a WAV container.
func encodeWAV(pcm []int16, rate int) []byte { return appendWAV(nil, pcm, rate) }

// wavBuffers holds utterances' WAV encodings for reuse (*[]byte): a
// transcription request encodes every utterance, and speculations
// several times each.
var wavBuffers sync.Pool

// appendWAV is encodeWAV into dst's memory when it has room.
func appendWAV(dst []byte, pcm []int16, rate int) []byte {
	// One allocation at most, of the exact size, the header and samples
	// put in place (binary.Write would copy the samples through
	// reflection into a buffer that grows by doubling: three times the
	// bytes, per utterance).
	data := len(pcm) * 2
	b := slices.Grow(dst[:0], 44+data)[:44+data]
	le := binary.LittleEndian
	copy(b[0:], "RIFF")
	le.PutUint32(b[4:], uint32(36+data))
	copy(b[8:], "WAVEfmt ")
	le.PutUint32(b[16:], 16)             // fmt chunk size
	le.PutUint16(b[20:], 1)              // PCM
	le.PutUint16(b[22:], 1)              // mono
	le.PutUint32(b[24:], uint32(rate))   // sample rate
	le.PutUint32(b[28:], uint32(rate*2)) // byte rate
	le.PutUint16(b[32:], 2)              // block align
	le.PutUint16(b[34:], 16)             // bits per sample
	copy(b[36:], "data")
	le.PutUint32(b[40:], uint32(data))
	for i, v := range pcm {
		le.PutUint16(b[44+2*i:], uint16(v))
	}
	return b
}

// sentenceSplitter splits streamed text into sentences as they complete, so each
// can be spoken as soon as it is whole. Feed returns the sentences the new
// text completed; Flush returns the rest. A long first sentence breaks at
// a clause boundary (a comma, a semicolon, a colon, a dash), so the caller
// hears the answer begin without waiting for all of it.
type sentenceSplitter struct {
	buf  strings.Builder
	said bool // a piece was returned
}

// Clause breaks of a long first sentence: the piece is at least
// clauseMinRunes long and only taken once the sentence has run past
// clauseLongRunes without ending.
const (
	clauseMinRunes  = 24
	clauseLongRunes = 60
)

// Feed adds streamed text.
func (s *sentenceSplitter) Feed(delta string) []string {
	s.buf.WriteString(delta)
	text := s.buf.String()
	var out []string
	start := 0
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		if rs[i] != '.' && rs[i] != '!' && rs[i] != '?' && rs[i] != '\n' {
			continue
		}
		// A sentence ends at terminal punctuation followed by space (not a
		// decimal point or an abbreviation inside a word).
		if i+1 >= len(rs) {
			break
		}
		if rs[i] != '\n' && !unicode.IsSpace(rs[i+1]) {
			continue
		}
		if sent := strings.TrimSpace(string(rs[start : i+1])); sent != "" {
			out = append(out, sent)
		}
		start = i + 1
	}
	if len(out) == 0 && !s.said && len(rs)-start >= clauseLongRunes {
		for i := start + clauseMinRunes; i+1 < len(rs); i++ {
			if strings.ContainsRune(",;:—", rs[i]) && unicode.IsSpace(rs[i+1]) {
				out = append(out, strings.TrimSpace(string(rs[start:i+1])))
				start = i + 1
				break
			}
		}
	}
	s.said = s.said || len(out) > 0
	s.buf.Reset()
	s.buf.WriteString(string(rs[start:]))
	return out
}

// Flush returns what is left once the text is complete.
func (s *sentenceSplitter) Flush() string {
	rest := strings.TrimSpace(s.buf.String())
	s.buf.Reset()
	return rest
}

// Default speech models when an agent's voice settings name none.
const (
	DefaultSTT = config.DefaultSTT
	DefaultTTS = config.DefaultTTS
)

// Models resolves provider/model ids (*provider.Registry).
type Models interface {
	Resolve(id string) (provider.Model, error)
}

// ProviderSpeech is the SpeechFactory of the box: each agent's voice
// settings name its speech-to-text and text-to-speech models on the
// configured providers; "espeak" names the offline engine. voice.sttMode
// picks how speech-to-text reaches the provider: http (ProviderSTT),
// realtime (RealtimeSTT) or deepgram (DeepgramSTT); a live one falls back
// to the provider's HTTP transcription when its WebSocket cannot be opened
// for a Transcribe.
func ProviderSpeech(models Models, offline func(voice string) (Synthesizer, error)) SpeechFactory {
	return func(_ string, ag config.Agent, _ int) (Transcriber, Synthesizer, error) {
		sttIDs, ttsIDs, voiceName, mode := config.ModelChain{DefaultSTT}, config.ModelChain{DefaultTTS}, "", ""
		if v := ag.Voice; v != nil {
			if len(v.STT) > 0 {
				sttIDs = v.STT
			}
			mode = v.STTMode
			if len(v.TTS) > 0 {
				ttsIDs = v.TTS
			}
			voiceName = v.Voice
		}
		var stts []sttEntry
		for i, id := range sttIDs {
			m, err := models.Resolve(id)
			if err != nil {
				return nil, nil, fmt.Errorf("voice: speech-to-text model: %w", err)
			}
			entryMode := mode
			if i > 0 && mode != "" && mode != "http" {
				entryMode = "http" // a live stream goes to the first; the others take the utterance whole
			}
			t, err := transcriberFor(m, entryMode, ag.Voice)
			if err != nil {
				return nil, nil, err
			}
			stts = append(stts, sttEntry{id: id, circuit: m.EndpointCircuit(provider.EndpointTranscriptions), stt: t})
		}
		var ttss []ttsEntry
		for _, id := range ttsIDs {
			if id == "espeak" {
				if offline == nil {
					return nil, nil, fmt.Errorf("voice: the offline speech engine is not available in this build")
				}
				tts, err := offline(voiceName)
				if err != nil {
					return nil, nil, err
				}
				ttss = append(ttss, ttsEntry{id: id, tts: tts})
				continue
			}
			m, err := models.Resolve(id)
			if err != nil {
				return nil, nil, fmt.Errorf("voice: text-to-speech model: %w", err)
			}
			ttss = append(ttss, ttsEntry{id: id, circuit: m.EndpointCircuit(provider.EndpointSpeech), tts: ProviderTTS{Model: m, Voice: voiceName}})
		}
		firstByte := firstByteBound(ag)
		// A transcription answers the utterance whole, so it gets twice the
		// bound a first token or a first piece of audio gets.
		return chainSTT(stts, 2*firstByte), chainTTS(ttss, firstByte, chunkBound(ag)), nil
	}
}

// transcriberFor is an agent's speech-to-text in its mode; v's
// turnDetection provider asks a live mode for the provider's turn signal.
func transcriberFor(m provider.Model, mode string, v *config.AgentVoice) (Transcriber, error) {
	base, key, connect := m.Endpoint()
	turns, eagerness := false, ""
	if v != nil {
		turns, eagerness = v.TurnDetection == config.TurnDetectionProvider, v.Eagerness
	}
	var live StreamingTranscriber
	switch mode {
	case "", "http":
		return ProviderSTT{Model: m}, nil
	case "realtime":
		live = &RealtimeSTT{BaseURL: base, APIKey: key, Model: m.Name, ConnectTimeout: connect, Semantic: turns, Eagerness: eagerness}
	case "deepgram":
		live = &DeepgramSTT{BaseURL: base, APIKey: key, Model: m.Name, ConnectTimeout: connect, TurnTaking: turns, Eagerness: eagerness}
	default:
		return nil, fmt.Errorf("voice: speech-to-text mode %q is not http, realtime or deepgram", mode)
	}
	return liveOrHTTP{StreamingTranscriber: meteredLive{live, m.ID}, http: ProviderSTT{Model: m}}, nil
}

// liveOrHTTP is a live transcriber whose Transcribe falls back to the
// provider's HTTP transcription when the stream cannot be opened (the
// controller uses Transcribe when Listen fails). A stream that opened and
// then failed fails the utterance: its audio is gone.
type liveOrHTTP struct {
	StreamingTranscriber
	http ProviderSTT
}

// Transcribe implements Transcriber.
func (l liveOrHTTP) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	text, err := l.StreamingTranscriber.Transcribe(ctx, pcm, rate)
	if oe := (openError{}); errors.As(err, &oe) {
		return l.http.Transcribe(ctx, pcm, rate)
	}
	return text, err
}

// clipType is a content type's media type, for an error message.
func clipType(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	if len(ct) > 40 {
		ct = ct[:40]
	}
	return ct
}
