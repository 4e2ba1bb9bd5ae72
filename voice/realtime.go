package voice

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"
)

// RealtimeRate is the rate of the OpenAI Realtime API's PCM input.
const RealtimeRate = 24000

// RealtimeSTT transcribes over an OpenAI Realtime transcription session
// (GET {baseURL}/realtime?intent=transcription upgraded to a WebSocket):
// a session.update of type transcription without turn detection, caller
// audio as input_audio_buffer.append (base64 PCM16 at 24 kHz), an
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
	Options        LiveOptions
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
	update, _ := json.Marshal(map[string]any{
		"type": "session.update",
		"session": map[string]any{
			"type": "transcription",
			"audio": map[string]any{"input": map[string]any{
				"format":         map[string]any{"type": "audio/pcm", "rate": RealtimeRate},
				"transcription":  map[string]any{"model": r.Model},
				"turn_detection": nil, // the controller's endpointing commits
			}},
		},
	})
	opts := r.Options.withDefaults()
	wctx, cancel := context.WithTimeout(ctx, opts.WriteTimeout)
	err = conn.Write(wctx, websocket.MessageText, update)
	cancel()
	if err != nil {
		conn.CloseNow()
		return nil, openError{fmt.Errorf("%w: the session could not be set up", ErrSTTUnavailable)}
	}
	return newLiveStream(ctx, conn, &realtimeWire{text: map[string]string{}}, opts, rate, RealtimeRate), nil
}

// Transcribe implements Transcriber over one session.
func (r *RealtimeSTT) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	return transcribeLive(ctx, r, pcm, rate, r.Options.withDefaults().FinalTimeout)
}

// realtimeWire is the Realtime transcription protocol.
type realtimeWire struct {
	text map[string]string // item id → the transcript so far
}

func (w *realtimeWire) audio(pcm []int16) (websocket.MessageType, []byte) {
	raw := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
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

func (w *realtimeWire) finalize() []byte  { return []byte(`{"type":"input_audio_buffer.commit"}`) }
func (w *realtimeWire) keepAlive() []byte { return nil }
func (w *realtimeWire) closing() []byte   { return nil }

// settle: a commit is always answered (completed or failed).
func (w *realtimeWire) settle() (TranscriptEvent, bool) { return TranscriptEvent{}, false }

func (w *realtimeWire) decode(typ websocket.MessageType, msg []byte) ([]TranscriptEvent, error) {
	if typ != websocket.MessageText {
		return nil, nil
	}
	var ev struct {
		Type       string `json:"type"`
		ItemID     string `json:"item_id"`
		Delta      string `json:"delta"`
		Transcript string `json:"transcript"`
		Error      *struct {
			Type string `json:"type"`
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &ev); err != nil {
		return nil, fmt.Errorf("%w: the provider sent a message that is not JSON", ErrSTTFailed)
	}
	switch ev.Type {
	case "conversation.item.input_audio_transcription.delta":
		w.text[ev.ItemID] += ev.Delta
		return []TranscriptEvent{{Text: w.text[ev.ItemID]}}, nil
	case "conversation.item.input_audio_transcription.completed":
		delete(w.text, ev.ItemID)
		return []TranscriptEvent{{Text: ev.Transcript, Final: true}}, nil
	case "conversation.item.input_audio_transcription.failed", "error":
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
