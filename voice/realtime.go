package voice

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/stackbone/box/internal/companding"
)

// RealtimeRate is the rate of the OpenAI Realtime API's PCM input.
const RealtimeRate = 24000

// telephoneRate is the rate of a G.711 call: its audio goes to the
// Realtime API as G.711 µ-law (audio/pcmu), as it came off the line,
// instead of resampled to 24 kHz PCM: a sixth of the bytes and no
// resampling on every frame, and nothing lost (the line's audio is
// G.711 already).
const telephoneRate = 8000

// RealtimeSTT transcribes over an OpenAI Realtime transcription session
// (GET {baseURL}/realtime?intent=transcription upgraded to a WebSocket):
// a session.update of type transcription with the provider's server VAD,
// caller audio as input_audio_buffer.append (base64 PCM16 at 24 kHz, or
// G.711 µ-law for an 8 kHz call), an
// input_audio_buffer.commit at each Finalize; the provider answers
// conversation.item.input_audio_transcription.delta events (interim) and a
// .completed event (the final).
type RealtimeSTT struct {
	// BaseURL is the provider's API root (https://api.openai.com/v1).
	BaseURL string
	// APIKey is sent as a bearer token; it appears in no error or log.
	APIKey string
	// Model is the transcription model (gpt-4o-transcribe, whisper-1...).
	Model string
	// ConnectTimeout bounds opening the WebSocket (default 10 s).
	ConnectTimeout time.Duration
	// Semantic turns the provider's turn detection to semantic_vad with
	// Eagerness (low, medium, high or auto; default auto): it ends a turn
	// when the words sound finished rather than after a fixed silence,
	// and its speech_stopped is the turn's end (TurnEnd).
	Semantic  bool
	Eagerness string
	Options   LiveOptions
}

// Listen implements StreamingTranscriber.
func (r *RealtimeSTT) Listen(ctx context.Context, rate int) (TranscriptStream, error) {
	u, err := wsURL(r.BaseURL, "/realtime", url.Values{"intent": {"transcription"}})
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	if r.APIKey != "" {
		h.Set("Authorization", "Bearer "+r.APIKey)
	}
	conn, err := dialLive(ctx, u, h, r.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	opts := r.Options.withDefaults()
	format, wire, proto := map[string]any{"type": "audio/pcm", "rate": RealtimeRate}, RealtimeRate, newRealtimeWire()
	if rate == telephoneRate {
		format, wire, proto.ulaw = map[string]any{"type": "audio/pcmu"}, telephoneRate, true
	}
	// The provider commits and transcribes each stretch of speech after
	// this much silence (settled words); the controller's endpointing
	// still decides the turn and commits what is left.
	detect := map[string]any{"type": "server_vad", "silence_duration_ms": opts.ProviderSilence.Milliseconds()}
	if r.Semantic {
		// The provider ends the turn when the words sound finished: its
		// speech_stopped ends the utterance.
		eagerness := r.Eagerness
		if eagerness == "" {
			eagerness = "auto"
		}
		detect = map[string]any{"type": "semantic_vad", "eagerness": eagerness}
		proto.semantic = true
	}
	update, _ := json.Marshal(map[string]any{
		"type": "session.update",
		"session": map[string]any{
			"type": "transcription",
			"audio": map[string]any{"input": map[string]any{
				"format":         format,
				"transcription":  map[string]any{"model": r.Model},
				"turn_detection": detect,
			}},
		},
	})
	wctx, cancel := context.WithTimeout(ctx, opts.WriteTimeout)
	err = conn.Write(wctx, websocket.MessageText, update)
	cancel()
	if err != nil {
		conn.CloseNow()
		return nil, openError{fmt.Errorf("%w: the session could not be set up", ErrSTTUnavailable)}
	}
	return newLiveStream(ctx, conn, proto, opts, rate, wire), nil
}

// Transcribe implements Transcriber over one session.
func (r *RealtimeSTT) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	return transcribeLive(ctx, r, pcm, rate, r.Options.withDefaults().FinalTimeout)
}

// realtimeWire is the Realtime transcription protocol. Items are
// committed by the client's commits and, when the provider detects the end
// of speech itself (server VAD), by the provider: an utterance the
// controller finalizes is every item committed before the one its commit
// made, in the order the provider committed them, and its final waits for
// all their transcripts. Items the provider committed and transcribed
// before that are settled words (Settled events, through the audio end of
// its speech_stopped).
type realtimeWire struct {
	mu      sync.Mutex
	text    map[string]string        // item id → the transcript so far (deltas)
	order   []string                 // committed items not yet in a final, in order
	done    map[string]string        // item id → its completed transcript
	vadEnd  map[string]time.Duration // items the provider committed → where their audio ended
	mine    map[string]bool          // items a commit of ours made
	commits int                      // our commits not yet matched to a committed event
	ulaw    bool                     // the audio goes as G.711 µ-law (audio/pcmu)
	// semantic: the session's turn detection is semantic_vad, whose
	// speech_stopped ends the turn; ended says one did since the last
	// speech_started.
	semantic, ended bool
}

func newRealtimeWire() *realtimeWire {
	return &realtimeWire{text: map[string]string{}, done: map[string]string{}, vadEnd: map[string]time.Duration{}, mine: map[string]bool{}}
}

func (w *realtimeWire) audio(pcm []int16) (websocket.MessageType, []byte) {
	var raw []byte
	if w.ulaw {
		raw = companding.AppendUlaw(make([]byte, 0, len(pcm)), pcm)
	} else {
		raw = make([]byte, 2*len(pcm))
		for i, v := range pcm {
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
		}
	}
	// Built by hand: 50 of these a second on every call, and base64 needs
	// no JSON escaping.
	const head, tail = `{"type":"input_audio_buffer.append","audio":"`, `"}`
	b := make([]byte, len(head)+base64.StdEncoding.EncodedLen(len(raw))+len(tail))
	n := copy(b, head)
	base64.StdEncoding.Encode(b[n:], raw)
	copy(b[n+base64.StdEncoding.EncodedLen(len(raw)):], tail)
	return websocket.MessageText, b
}

func (w *realtimeWire) finalize() []byte {
	w.mu.Lock()
	w.commits++
	w.mu.Unlock()
	return []byte(`{"type":"input_audio_buffer.commit"}`)
}

func (w *realtimeWire) keepAlive() []byte { return nil }
func (w *realtimeWire) closing() []byte   { return nil }

// settle: a commit is always answered (completed, failed, or an empty
// buffer's error).
func (w *realtimeWire) settle() (TranscriptEvent, bool) { return TranscriptEvent{}, false }

// words (under w.mu) is the text of the committed items in order, then
// of item when it is not committed yet.
func (w *realtimeWire) words(item string) string {
	var parts []string
	for _, it := range w.order {
		if t, ok := w.done[it]; ok {
			parts = append(parts, t)
		} else {
			parts = append(parts, w.text[it])
		}
	}
	if item != "" && !slices.Contains(w.order, item) {
		parts = append(parts, w.text[item])
	}
	return joinWords(parts)
}

// progress (under w.mu) is what the committed items now say: the final of
// each utterance whose items all completed up to one of our commits, then
// the settled words when the items before any other all completed.
func (w *realtimeWire) progress() []TranscriptEvent {
	var evs []TranscriptEvent
	for {
		n := -1
		for i, it := range w.order {
			if _, ok := w.done[it]; !ok {
				break
			}
			if w.mine[it] {
				n = i
				break
			}
		}
		if n < 0 {
			break
		}
		var parts []string
		for _, it := range w.order[:n+1] {
			parts = append(parts, w.done[it])
			delete(w.done, it)
			delete(w.text, it)
			delete(w.vadEnd, it)
			delete(w.mine, it)
		}
		w.order = w.order[n+1:]
		evs = append(evs, TranscriptEvent{Text: joinWords(parts), Final: true})
	}
	var parts []string
	var through time.Duration
	for _, it := range w.order {
		t, ok := w.done[it]
		if !ok {
			break
		}
		parts, through = append(parts, t), w.vadEnd[it]
	}
	if len(parts) > 0 {
		evs = append(evs, TranscriptEvent{Text: joinWords(parts), Settled: true, Through: through})
	}
	return evs
}

func (w *realtimeWire) decode(typ websocket.MessageType, msg []byte) ([]TranscriptEvent, error) {
	if typ != websocket.MessageText {
		return nil, nil
	}
	var ev struct {
		Type       string `json:"type"`
		ItemID     string `json:"item_id"`
		Delta      string `json:"delta"`
		Transcript string `json:"transcript"`
		AudioEndMs int64  `json:"audio_end_ms"`
		Error      *struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &ev); err != nil {
		return nil, fmt.Errorf("%w: the provider sent a message that is not JSON", ErrSTTFailed)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Type {
	case "input_audio_buffer.speech_started":
		if w.ended {
			w.ended = false
			return []TranscriptEvent{{Text: w.words(ev.ItemID), Turn: TurnResumed}}, nil
		}
	case "input_audio_buffer.speech_stopped":
		// The provider's own end-of-speech detection: it commits this
		// item itself.
		w.vadEnd[ev.ItemID] = time.Duration(ev.AudioEndMs) * time.Millisecond
		if w.semantic {
			// The end of the turn; its words follow (completed).
			w.ended = true
			return []TranscriptEvent{{Turn: TurnEnd}}, nil
		}
	case "input_audio_buffer.committed":
		if _, vad := w.vadEnd[ev.ItemID]; !vad && w.commits > 0 {
			w.mine[ev.ItemID] = true
			w.commits--
		}
		w.order = append(w.order, ev.ItemID)
	case "conversation.item.input_audio_transcription.delta":
		w.text[ev.ItemID] += ev.Delta
		return []TranscriptEvent{{Text: w.words(ev.ItemID)}}, nil
	case "conversation.item.input_audio_transcription.completed":
		if !slices.Contains(w.order, ev.ItemID) {
			// Completed without a committed event first: the answer to
			// our oldest commit.
			w.order = append(w.order, ev.ItemID)
			w.mine[ev.ItemID] = true
			w.commits = max(w.commits-1, 0)
		}
		w.done[ev.ItemID] = ev.Transcript
		return w.progress(), nil
	case "error":
		if ev.Error != nil && ev.Error.Code == "input_audio_buffer_commit_empty" && w.commits > 0 {
			// Our commit came after the provider's own commit took all
			// the audio: the utterance is the items before it.
			w.commits--
			empty := fmt.Sprintf("empty_%d", len(w.order))
			w.order = append(w.order, empty)
			w.mine[empty], w.done[empty] = true, ""
			return w.progress(), nil
		}
		fallthrough
	case "conversation.item.input_audio_transcription.failed":
		// The provider's message is not relayed (it can quote what it was
		// sent); its type and code say enough.
		kind, code := "", ""
		if ev.Error != nil {
			kind, code = ev.Error.Type, ev.Error.Code
		}
		return nil, fmt.Errorf("%w: the provider reported %s (%s %s)", ErrSTTFailed, ev.Type, clipWord(kind), clipWord(code))
	}
	return nil, nil
}

// clipWord keeps a provider's error type or code short and printable.
func clipWord(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if len(out) == 48 {
			break
		}
		if r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			out = append(out, r)
		}
	}
	return string(out)
}
