package voice

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
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
	// rather than hold the media path.
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
	Text  string
	Final bool
	Err   error
}

// Synthesizer speaks one sentence at rate; the segment's Words are the
// engine's word timings when it has them.
type Synthesizer interface {
	Synthesize(ctx context.Context, text string, rate int) (Segment, error)
}

// ProviderSTT transcribes through an OpenAI-compatible
// /v1/audio/transcriptions endpoint (one request per utterance, as WAV).
type ProviderSTT struct {
	Model provider.Model
}

// Transcribe implements Transcriber.
func (p ProviderSTT) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	resp, err := p.Model.Client.CreateTranscription(ctx, openai.AudioRequest{
		Model: p.Model.Name, FilePath: "utterance.wav", Reader: bytes.NewReader(encodeWAV(pcm, rate)),
		Format: openai.AudioResponseFormatJSON,
	})
	if err != nil {
		return "", fmt.Errorf("voice: speech-to-text: %s", provider.Describe(err))
	}
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
	voice := p.Voice
	if voice == "" {
		voice = "alloy"
	}
	raw, err := p.Model.Client.CreateSpeech(ctx, openai.CreateSpeechRequest{
		Model: openai.SpeechModel(p.Model.Name), Input: text, Voice: openai.SpeechVoice(voice),
		ResponseFormat: openai.SpeechResponseFormatPcm,
	})
	if err != nil {
		return Segment{}, fmt.Errorf("voice: text-to-speech: %s", provider.Describe(err))
	}
	defer raw.Close()
	b, err := io.ReadAll(io.LimitReader(raw, 50<<20))
	if err != nil {
		return Segment{}, fmt.Errorf("voice: text-to-speech: read: %w", err)
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return Segment{Text: text, PCM: Resample(pcm, providerTTSRate, rate)}, nil
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
func encodeWAV(pcm []int16, rate int) []byte {
	var b bytes.Buffer
	data := len(pcm) * 2
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+data))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(rate * 2), uint16(2), uint16(16)} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(data))
	binary.Write(&b, binary.LittleEndian, pcm)
	return b.Bytes()
}

// sentenceSplitter splits streamed text into sentences as they complete, so each
// can be spoken as soon as it is whole. Feed returns the sentences the new
// text completed; Flush returns the rest.
type sentenceSplitter struct {
	buf strings.Builder
}

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
	DefaultSTT = "openai/whisper-1"
	DefaultTTS = "openai/tts-1"
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
		sttID, ttsID, voiceName, mode := DefaultSTT, DefaultTTS, "", ""
		if v := ag.Voice; v != nil {
			if v.STT != "" {
				sttID = v.STT
			}
			mode = v.STTMode
			if v.TTS != "" {
				ttsID = v.TTS
			}
			voiceName = v.Voice
		}
		sttModel, err := models.Resolve(sttID)
		if err != nil {
			return nil, nil, fmt.Errorf("voice: speech-to-text model: %w", err)
		}
		stt, err := transcriberFor(sttModel, mode)
		if err != nil {
			return nil, nil, err
		}
		if ttsID == "espeak" {
			if offline == nil {
				return nil, nil, fmt.Errorf("voice: the offline speech engine is not available in this build")
			}
			tts, err := offline(voiceName)
			return stt, tts, err
		}
		tts, err := models.Resolve(ttsID)
		if err != nil {
			return nil, nil, fmt.Errorf("voice: text-to-speech model: %w", err)
		}
		return stt, ProviderTTS{Model: tts, Voice: voiceName}, nil
	}
}

// transcriberFor is an agent's speech-to-text in its mode.
func transcriberFor(m provider.Model, mode string) (Transcriber, error) {
	base, key, connect := m.Endpoint()
	var live StreamingTranscriber
	switch mode {
	case "", "http":
		return ProviderSTT{Model: m}, nil
	case "realtime":
		live = &RealtimeSTT{BaseURL: base, APIKey: key, Model: m.Name, ConnectTimeout: connect}
	case "deepgram":
		live = &DeepgramSTT{BaseURL: base, APIKey: key, Model: m.Name, ConnectTimeout: connect}
	default:
		return nil, fmt.Errorf("voice: speech-to-text mode %q is not http, realtime or deepgram", mode)
	}
	return liveOrHTTP{StreamingTranscriber: live, http: ProviderSTT{Model: m}}, nil
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
