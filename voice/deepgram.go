package voice

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// DeepgramSTT transcribes over a Deepgram-compatible live transcription
// WebSocket ({baseURL}/listen with encoding=linear16, the call's own
// sample_rate and interim_results=true; the key as "Authorization: Token
// KEY"). Caller audio goes as binary frames; {"type":"Finalize"} at each
// Finalize flushes the provider, whose Results messages carry interim
// text (is_final false), settled pieces (is_final true) and the answer to
// the Finalize (from_finalize true), which closes the utterance; when the
// provider's endpointing settled it all before, the Finalize gets no
// answer, and the utterance closes once nothing is left unsettled (see
// LiveOptions.SettleAfter).
// {"type":"KeepAlive"} holds an idle stream open and {"type":"CloseStream"}
// ends it.
type DeepgramSTT struct {
	// BaseURL is the provider's API root (https://api.deepgram.com/v1).
	BaseURL string
	// APIKey is sent as "Token KEY"; it appears in no error or log.
	APIKey string
	// Model is the provider's model (nova-3...).
	Model string
	// ConnectTimeout bounds opening the WebSocket (default 10 s).
	ConnectTimeout time.Duration
	// TurnTaking opens the provider's turn-taking stream instead (see
	// fluxWire), whose end-of-turn thresholds follow Eagerness (low,
	// medium, high, auto).
	TurnTaking bool
	Eagerness  string
	Options    LiveOptions
}

// Listen implements StreamingTranscriber. The audio goes at the call's
// rate: the protocol takes any.
func (d *DeepgramSTT) Listen(ctx context.Context, rate int) (TranscriptStream, error) {
	h := http.Header{}
	if d.APIKey != "" {
		h.Set("Authorization", "Token "+d.APIKey)
	}
	if d.TurnTaking {
		u, err := wsURL(fluxBase(d.BaseURL), "/listen", fluxQuery(d.Model, rate, d.Eagerness))
		if err != nil {
			return nil, err
		}
		conn, err := dialLive(ctx, u, h, d.ConnectTimeout)
		if err != nil {
			return nil, err
		}
		return newLiveStream(ctx, conn, &fluxWire{}, d.Options.withDefaults(), rate, 0), nil
	}
	q := url.Values{
		"encoding": {"linear16"}, "sample_rate": {strconv.Itoa(rate)}, "channels": {"1"},
		"interim_results": {"true"}, "punctuate": {"true"},
	}
	if d.Model != "" {
		q.Set("model", d.Model)
	}
	u, err := wsURL(d.BaseURL, "/listen", q)
	if err != nil {
		return nil, err
	}
	conn, err := dialLive(ctx, u, h, d.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	return newLiveStream(ctx, conn, &deepgramWire{rate: rate}, d.Options.withDefaults(), rate, 0), nil
}

// Transcribe implements Transcriber over one stream.
func (d *DeepgramSTT) Transcribe(ctx context.Context, pcm []int16, rate int) (string, error) {
	return transcribeLive(ctx, d, pcm, rate, d.Options.withDefaults().FinalTimeout)
}

// deepgramWire is the live protocol: settled pieces (is_final) accumulate
// until the utterance's Finalize is answered. Deepgram answers a Finalize
// (from_finalize) only when audio was left to process: when its own
// endpointing already settled every word, nothing comes. So the wire
// counts the audio time it sent at each Finalize; a settled result that
// reaches that time answers it too, and settle answers it once nothing
// unsettled is outstanding.
type deepgramWire struct {
	rate int

	mu       sync.Mutex
	sent     float64   // seconds of audio sent
	pending  []float64 // the audio time of each unanswered Finalize
	answered float64   // the audio time of the last answered Finalize
	settled  []string  // pieces of the utterance in progress
	open     bool      // an interim with words is not settled yet
}

// slack absorbs the rounding of the provider's start and duration.
const deepgramSlack = 0.05

func (w *deepgramWire) audio(pcm []int16) (websocket.MessageType, []byte) {
	raw := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
	}
	w.mu.Lock()
	w.sent += float64(len(pcm)) / float64(w.rate)
	w.mu.Unlock()
	return websocket.MessageBinary, raw
}

func (w *deepgramWire) finalize() []byte {
	w.mu.Lock()
	w.pending = append(w.pending, w.sent)
	w.mu.Unlock()
	return []byte(`{"type":"Finalize"}`)
}

func (w *deepgramWire) keepAlive() []byte { return []byte(`{"type":"KeepAlive"}`) }
func (w *deepgramWire) closing() []byte   { return []byte(`{"type":"CloseStream"}`) }

// answer closes the utterance (under w.mu).
func (w *deepgramWire) answer() TranscriptEvent {
	ev := TranscriptEvent{Text: joinWords(w.settled), Final: true}
	w.answered, w.pending, w.settled, w.open = w.pending[0], w.pending[1:], nil, false
	return ev
}

func (w *deepgramWire) settle() (TranscriptEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 || w.open {
		return TranscriptEvent{}, false
	}
	return w.answer(), true
}

func (w *deepgramWire) decode(typ websocket.MessageType, msg []byte) ([]TranscriptEvent, error) {
	if typ != websocket.MessageText {
		return nil, nil
	}
	var m struct {
		Type         string  `json:"type"`
		IsFinal      bool    `json:"is_final"`
		FromFinalize bool    `json:"from_finalize"`
		Start        float64 `json:"start"`
		Duration     float64 `json:"duration"`
		Channel      struct {
			Alternatives []struct {
				Transcript string `json:"transcript"`
			} `json:"alternatives"`
		} `json:"channel"`
		// An error message: its variant is a code; its description is
		// not relayed.
		ErrCode string `json:"err_code"`
		Variant string `json:"variant"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("%w: the provider sent a message that is not JSON", ErrSTTFailed)
	}
	switch m.Type {
	case "Results":
	case "Error":
		return nil, fmt.Errorf("%w: the provider reported an error (%s)", ErrSTTFailed, clipWord(m.ErrCode+m.Variant))
	default: // Metadata, SpeechStarted, UtteranceEnd
		return nil, nil
	}
	text := ""
	if len(m.Channel.Alternatives) > 0 {
		text = strings.TrimSpace(m.Channel.Alternatives[0].Transcript)
	}
	end := m.Start + m.Duration
	w.mu.Lock()
	defer w.mu.Unlock()
	timed := m.Start > 0 || m.Duration > 0
	if m.FromFinalize && timed && end <= w.answered+deepgramSlack && (len(w.pending) == 0 || end < w.pending[0]-deepgramSlack) {
		// The late answer to a Finalize settle already answered.
		return nil, nil
	}
	if !m.IsFinal {
		w.open = text != ""
		return []TranscriptEvent{{Text: joinWords(append(w.settled[:len(w.settled):len(w.settled)], text))}}, nil
	}
	if text != "" {
		w.settled = append(w.settled, text)
	}
	w.open = false
	if len(w.pending) > 0 && (m.FromFinalize || (timed && end >= w.pending[0]-deepgramSlack)) {
		return []TranscriptEvent{w.answer()}, nil
	}
	// Settled by the provider's endpointing (or a long utterance's
	// finished piece): these words hold through end.
	ev := TranscriptEvent{Text: joinWords(w.settled), Settled: true}
	if timed {
		ev.Through = time.Duration(end * float64(time.Second))
	}
	return []TranscriptEvent{ev}, nil
}
