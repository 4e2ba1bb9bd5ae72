package voice

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The Deepgram-compatible turn-taking stream (Flux, {baseURL} with its
// /v1 as /v2, then /listen): caller audio goes as binary linear16 at the
// call's rate, and the provider answers TurnInfo messages whose event
// follows its turn state machine: StartOfTurn, Update (the turn's words
// so far), EagerEndOfTurn (it thinks the caller may be done),
// TurnResumed (they went on), EndOfTurn (the turn is over, with its
// words). The box's own endpointing ends a turn the provider has not
// with {"type":"ForceEndTurn"}, which the provider answers with an
// EndOfTurn; {"type":"CloseStream"} ends the stream. The stream has no
// keep-alive message of its own: an idle stream is kept with WebSocket
// pings.

// fluxThresholds are the end-of-turn confidences an eagerness asks for:
// eot_threshold, and eager_eot_threshold (0: no eager end of turn).
func fluxThresholds(eagerness string) (eot, eager float64) {
	switch eagerness {
	case "low":
		return 0.8, 0
	case "high":
		return 0.6, 0.4
	}
	return 0.7, 0.5
}

// fluxQuery is the turn-taking stream's query for a call at rate.
func fluxQuery(model string, rate int, eagerness string) map[string][]string {
	eot, eager := fluxThresholds(eagerness)
	q := map[string][]string{
		"encoding": {"linear16"}, "sample_rate": {strconv.Itoa(rate)},
		"eot_threshold": {strconv.FormatFloat(eot, 'f', -1, 64)},
	}
	if eager > 0 {
		q["eager_eot_threshold"] = []string{strconv.FormatFloat(eager, 'f', -1, 64)}
	}
	if model != "" {
		q["model"] = []string{model}
	}
	return q
}

// fluxBase is the provider's API root for the v2 endpoints.
func fluxBase(baseURL string) string {
	b := strings.TrimRight(baseURL, "/")
	if rest, ok := strings.CutSuffix(b, "/v1"); ok {
		return rest + "/v2"
	}
	return b + "/v2"
}

// fluxWire is the turn-taking protocol. The provider's turns and the
// box's utterances need not match: a turn the provider ended while the
// box's endpointing waits (the caller went on, or its VAD still heard
// them) joins the next, so the words of an utterance are every turn the
// provider ended since the last final, then the open one's.
type fluxWire struct {
	mu      sync.Mutex
	pending int      // ForceEndTurn sent, not answered by an EndOfTurn
	open    bool     // the provider has a turn open (StartOfTurn, no EndOfTurn since)
	ended   []string // turns the provider ended since the last final
	current string   // the open turn's words so far
}

func (w *fluxWire) audio(pcm []int16) (websocket.MessageType, []byte) {
	raw := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
	}
	return websocket.MessageBinary, raw
}

func (w *fluxWire) finalize() []byte {
	w.mu.Lock()
	w.pending++
	w.mu.Unlock()
	return []byte(`{"type":"ForceEndTurn"}`)
}

func (w *fluxWire) keepAlive() []byte { return nil }
func (w *fluxWire) closing() []byte   { return []byte(`{"type":"CloseStream"}`) }

// final (under w.mu) closes the utterance with the words so far.
func (w *fluxWire) final() TranscriptEvent {
	ev := TranscriptEvent{Text: joinWords(append(w.ended, w.current)), Final: true}
	w.ended, w.current = nil, ""
	return ev
}

// idleFinal implements idleAnswerer: when the provider ended the turn
// itself and opened none since, a ForceEndTurn would be ignored (or end
// the caller's next turn).
func (w *fluxWire) idleFinal() (TranscriptEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open || w.pending > 0 || len(w.ended) == 0 {
		return TranscriptEvent{}, false
	}
	return w.final(), true
}

// settle answers a ForceEndTurn the provider ignored because its turn
// ended before it arrived (it sends nothing for it).
func (w *fluxWire) settle() (TranscriptEvent, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending == 0 || w.open {
		return TranscriptEvent{}, false
	}
	w.pending--
	return w.final(), true
}

func (w *fluxWire) decode(typ websocket.MessageType, msg []byte) ([]TranscriptEvent, error) {
	if typ != websocket.MessageText {
		return nil, nil
	}
	var m struct {
		Type           string  `json:"type"`
		Event          string  `json:"event"`
		Transcript     string  `json:"transcript"`
		AudioWindowEnd float64 `json:"audio_window_end"`
		Code           string  `json:"code"`
		ErrCode        string  `json:"err_code"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, fmt.Errorf("%w: the provider sent a message that is not JSON", ErrSTTFailed)
	}
	switch m.Type {
	case "TurnInfo":
	case "Error":
		return nil, fmt.Errorf("%w: the provider reported an error (%s)", ErrSTTFailed, clipWord(m.Code+m.ErrCode))
	default: // Connected, ConfigureSuccess...
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	text := strings.TrimSpace(m.Transcript)
	words := func() string { return joinWords(append(w.ended[:len(w.ended):len(w.ended)], text)) }
	switch m.Event {
	case "StartOfTurn":
		w.open, w.current = true, text
		if len(w.ended) > 0 {
			// A turn the provider ended was not the end of the
			// utterance: the caller went on.
			return []TranscriptEvent{{Text: words(), Turn: TurnResumed}}, nil
		}
		return []TranscriptEvent{{Text: words()}}, nil
	case "Update":
		w.open, w.current = true, text
		return []TranscriptEvent{{Text: words()}}, nil
	case "EagerEndOfTurn":
		w.open, w.current = true, text
		return []TranscriptEvent{{Text: words(), Turn: TurnEager}}, nil
	case "TurnResumed":
		w.open, w.current = true, text
		return []TranscriptEvent{{Text: words(), Turn: TurnResumed}}, nil
	case "EndOfTurn":
		w.open, w.current = false, text
		if w.pending > 0 {
			// The answer to a ForceEndTurn (or the provider's own end
			// of the turn, which answers it as well).
			w.pending--
			return []TranscriptEvent{w.final()}, nil
		}
		w.ended, w.current = append(w.ended, text), ""
		ev := TranscriptEvent{Text: joinWords(w.ended), Settled: true, Turn: TurnEnd}
		if m.AudioWindowEnd > 0 {
			ev.Through = time.Duration(m.AudioWindowEnd * float64(time.Second))
		}
		return []TranscriptEvent{ev}, nil
	}
	return nil, nil
}
