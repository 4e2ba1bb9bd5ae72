package providertest

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/zaf/g711"
)

// The live transcription endpoints, at their wire: GET /v1/realtime
// (?intent=transcription) speaks the OpenAI Realtime transcription session
// and GET /v1/listen a Deepgram-compatible live transcription. Both answer
// from the same transcript script as /v1/audio/transcriptions
// (ScriptTranscripts, RespondTranscripts): while audio arrives they send
// interim results that reveal the next scripted transcript a word at a
// time (or, with Live.HeardInterims, what RespondTranscripts' function
// hears in the audio so far), and a configurable delay after a commit or
// Finalize the final transcript of the audio since the previous one. With
// Live.EndOfSpeech the provider also settles utterances itself, as a
// hosted provider's own end-of-speech detection does.

// DefaultFinalDelay is how long after a commit or Finalize the scripted
// final transcript arrives (the streaming profile of issue 16).
const DefaultFinalDelay = 150 * time.Millisecond

// Live scripts how the live endpoints behave; the zero value is a healthy
// provider with the defaults in the field comments.
type Live struct {
	// FinalDelay is the wait between a commit or Finalize and its final
	// transcript (default DefaultFinalDelay).
	FinalDelay time.Duration
	// InterimEvery is how much received speech (audio louder than
	// silence) brings one more interim word (default 200 ms).
	InterimEvery time.Duration
	// ErrorAfter, when set, makes the provider report an error once this
	// much audio arrived on a connection: a Realtime error event, or a
	// Deepgram close with code 1011.
	ErrorAfter time.Duration
	// DropAfter, when set, drops the connection without a close frame
	// once this much audio arrived.
	DropAfter time.Duration
	// Connections, when set, limits ErrorAfter and DropAfter to the first
	// connections opened after SetLive (1: only the first fails).
	Connections int
	// Stall stops reading after the handshake (a provider that cannot keep
	// up): the client's sends back up.
	Stall bool
	// Endpointing plays Deepgram's own endpointing: the first silence
	// after speech settles the utterance (is_final and speech_final with
	// its transcript), and a Finalize with no speech after that gets no
	// answer at all.
	Endpointing bool
	// EndOfSpeech, when set, plays the provider's own end-of-speech
	// detection (OpenAI server VAD, on Realtime only for a session whose
	// turn_detection asks for server_vad; Deepgram endpointing): once this much
	// silence followed speech on the stream, the utterance is settled at
	// once with the transcript of its audio so far, without a commit or
	// Finalize. Realtime sends input_audio_buffer.speech_stopped (its
	// audio_end_ms is the stream's audio so far), .committed and the
	// item's .completed; Deepgram a Results with is_final and
	// speech_final. A later Finalize with no speech since gets no answer
	// on Deepgram; a later commit is answered as usual (the audio since,
	// silence, transcribed).
	EndOfSpeech time.Duration
	// HeardInterims makes each interim what RespondTranscripts' function
	// hears in the utterance's audio so far (a recogniser revising its
	// words as more comes), instead of the next scripted transcript
	// revealed a word at a time; one goes each InterimEvery of audio from
	// the utterance's first speech on, pauses included, when the words
	// changed. Without such a function, or while transcripts are scripted,
	// the interims reveal words as usual.
	HeardInterims bool
	// InterimLag holds each interim back this long after the audio it
	// covers arrived (a recogniser's processing time; default none).
	InterimLag time.Duration
	// Refuse answers the WebSocket upgrade with 503 (a provider without
	// live transcription).
	Refuse bool
	// ErrorMessage is the text of a scripted error (default one that quotes
	// a key, to prove clients never relay it).
	ErrorMessage string
	// EndOfTurn plays the provider's turn detection on the sessions that
	// ask for it (a Realtime session whose turn_detection is
	// semantic_vad; every turn-taking stream at /v2/listen): once this
	// much silence followed the turn's speech, the provider ends the turn
	// (default 300 ms). Realtime sends input_audio_buffer.speech_started
	// when speech begins and, at the end, .speech_stopped, .committed and
	// the item's .completed; the turn-taking stream sends TurnInfo
	// messages: StartOfTurn, an Update per interim, EndOfTurn with the
	// turn's transcript.
	EndOfTurn time.Duration
	// EagerEndOfTurn is the silence after which a turn-taking stream whose
	// query sets eager_eot_threshold sends EagerEndOfTurn with the
	// transcript its EndOfTurn will have (default 150 ms); speech before
	// the EndOfTurn sends TurnResumed and the turn goes on.
	EagerEndOfTurn time.Duration
}

// TurnEvent is a turn signal a live session sent: Event is the Realtime
// event type (input_audio_buffer.speech_started, .speech_stopped) or the
// TurnInfo event (StartOfTurn, Update, EagerEndOfTurn, TurnResumed,
// EndOfTurn), Transcript its words, Audio how much of the session's audio
// had arrived.
type TurnEvent struct {
	Event      string
	Transcript string
	Audio      time.Duration
}

// Signals are the session's turn signals without the interim Updates,
// in order, and where on the stream's audio the provider last ended a
// turn (EndOfTurn, or Realtime's speech_stopped; 0 for never).
func (s LiveSession) Signals() (events []string, ended time.Duration) {
	for _, ev := range s.Turns {
		if ev.Event != "Update" {
			events = append(events, ev.Event)
		}
		if ev.Event == "EndOfTurn" || ev.Event == "input_audio_buffer.speech_stopped" {
			ended = ev.Audio
		}
	}
	return events, ended
}

// LiveSession is what one live connection carried.
type LiveSession struct {
	// Protocol is "realtime", "deepgram" or "flux" (the turn-taking
	// stream).
	Protocol string
	Query    url.Values
	Header   http.Header
	// Rate is the sample rate of Audio: 24000 on Realtime (8000 when the
	// session takes G.711 µ-law, audio/pcmu, decoded into Audio), the
	// query's sample_rate on Deepgram.
	Rate int
	// Audio is every sample received, in order; FirstAudio and LastAudio
	// are when its first and last pieces arrived (a client streaming as
	// the caller speaks spreads them over the speech, one handing over a
	// whole utterance does not).
	Audio                 []int16
	FirstAudio, LastAudio time.Time
	// Messages are the text messages received other than audio
	// (session.update, input_audio_buffer.commit, Finalize, KeepAlive,
	// CloseStream...), as sent.
	Messages []string
	// Interims and Finals are the transcripts sent back.
	Interims, Finals []string
	// InterimAudio is, for each of Interims, how much of the session's
	// audio had arrived when it was made (an interim sent while speech
	// arrives is well before its utterance's end).
	InterimAudio []time.Duration
	// Turns are the turn signals sent back, in order.
	Turns []TurnEvent
	// Ended is set once the connection is over.
	Ended bool
}

// SetLive sets how the live endpoints behave from the next message on.
func (s *Server) SetLive(l Live) {
	s.audio.mu.Lock()
	s.audio.live, s.audio.liveOpened = l, 0
	s.audio.mu.Unlock()
}

// LiveSessions returns a copy of every live connection so far, in the
// order they opened.
func (s *Server) LiveSessions() []LiveSession {
	s.audio.mu.Lock()
	defer s.audio.mu.Unlock()
	out := make([]LiveSession, len(s.audio.sessions))
	for i, ls := range s.audio.sessions {
		c := *ls
		c.Audio = append([]int16(nil), ls.Audio...)
		c.Messages = append([]string(nil), ls.Messages...)
		c.Interims = append([]string(nil), ls.Interims...)
		c.InterimAudio = append([]time.Duration(nil), ls.InterimAudio...)
		c.Finals = append([]string(nil), ls.Finals...)
		c.Turns = append([]TurnEvent(nil), ls.Turns...)
		out[i] = c
	}
	return out
}

// liveConn is one live connection on the server's side.
type liveConn struct {
	s    *Server
	conn *websocket.Conn
	sess *LiveSession
	rate int
	nth  int // connections opened before it since SetLive
	out  chan outItem
	// ctx ends with the connection: the client went away, the sender
	// closed it, or the server stopped.
	ctx    context.Context
	cancel context.CancelFunc
	words  int    // interim words revealed of the utterance in progress
	voiced int    // samples of the utterance in progress louder than silence
	quiet  int    // samples of silence since the utterance's last speech
	spoken int    // samples since the utterance's first speech
	said   string // the last interim text sent of the utterance in progress
	heard  int    // samples received on the connection
	start  int    // where the utterance in progress starts in sess.Audio
	// discard keeps only the utterance in progress (DiscardRequests).
	discard bool
	// ownEndpoint: the provider's end-of-speech detection is on for this
	// connection (Live.EndOfSpeech applies): always on Deepgram, where
	// endpointing is on unless the client turns it off, and on Realtime
	// when the session asked for server VAD.
	ownEndpoint atomic.Bool
	// turns: the session asked for the provider's turn detection (see
	// Live.EndOfTurn).
	turns atomic.Bool
}

// outItem is a message the sender writes not before at.
type outItem struct {
	at    time.Time
	data  []byte
	close websocket.StatusCode // after data: close with it (-1 drop, 0 none)
}

func (s *Server) openLive(w http.ResponseWriter, r *http.Request, protocol string, rate int) (*liveConn, bool) {
	s.record(r, nil)
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return nil, false
	}
	conn.SetReadLimit(16 << 20)
	sess := &LiveSession{Protocol: protocol, Query: r.URL.Query(), Header: r.Header.Clone(), Rate: rate}
	s.audio.mu.Lock()
	s.audio.sessions = append(s.audio.sessions, sess)
	nth := s.audio.liveOpened
	s.audio.liveOpened++
	s.audio.mu.Unlock()
	s.mu.Lock()
	discard := s.discard
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	lc := &liveConn{s: s, conn: conn, sess: sess, rate: rate, nth: nth, out: make(chan outItem, 1024), ctx: ctx, cancel: cancel,
		discard: discard}
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	go lc.send()
	return lc, true
}

// send writes queued messages in order, each not before its time, so a
// final held for its delay also holds the interims of the next utterance.
func (c *liveConn) send() {
	defer c.cancel()
	for {
		select {
		case <-c.ctx.Done():
			return
		case it := <-c.out:
			if d := time.Until(it.at); d > 0 {
				select {
				case <-time.After(d):
				case <-c.ctx.Done():
					return
				}
			}
			if it.data != nil {
				_ = c.conn.Write(c.ctx, websocket.MessageText, it.data)
			}
			switch {
			case it.close == -1:
				c.conn.CloseNow()
				return
			case it.close != 0:
				_ = c.conn.Close(it.close, "NET-0001")
				return
			}
		}
	}
}

func (c *liveConn) queue(v any, after time.Duration) {
	b, _ := json.Marshal(v)
	c.out <- outItem{at: time.Now().Add(after), data: b}
}

// closeAfter ends the connection once what is queued went out, after
// delay: with code, or dropped without a close frame (-1).
// pcm is a binary message's 16-bit little-endian samples; a message of
// an odd length is refused (the stream closes, as a provider would).
func (c *liveConn) pcm(msg []byte) ([]int16, bool) {
	if len(msg)%2 != 0 {
		c.closeAfter(0, websocket.StatusPolicyViolation)
		return nil, false
	}
	pcm := make([]int16, len(msg)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(msg[2*i:]))
	}
	return pcm, true
}

func (c *liveConn) closeAfter(delay time.Duration, code websocket.StatusCode) {
	c.out <- outItem{at: time.Now().Add(delay), close: code}
	<-c.ctx.Done()
}

func (c *liveConn) end() {
	c.cancel()
	c.s.audio.mu.Lock()
	c.sess.Ended = true
	c.s.audio.mu.Unlock()
	c.conn.CloseNow()
}

// heardAudio is what the script makes of a piece of audio on a
// connection.
type heardAudio struct {
	interim string // the next interim text ("" for none)
	// delta is what interim adds to the one before ("" when it revises
	// it: Realtime's deltas cannot).
	delta      string
	fail, drop bool // fail or drop the connection now
	// endOfSpeech: the provider's own end-of-speech detection settles
	// the utterance now (Live.EndOfSpeech).
	endOfSpeech bool
	live        Live
	// voiced: the piece is speech; quietBefore and quietAfter are the
	// silence since the utterance's speech before and after it (0 before
	// any speech); at is the connection's audio after it.
	voiced                  bool
	quietBefore, quietAfter time.Duration
	at                      time.Duration
}

// crossed reports whether this piece's silence reached d.
func (h heardAudio) crossed(d time.Duration) bool {
	return d > 0 && h.quietBefore < d && h.quietAfter >= d
}

// received records audio and says what the script makes of it.
func (c *liveConn) received(pcm []int16) heardAudio {
	a := &c.s.audio
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.live
	h := heardAudio{live: l}
	before := c.heard
	now := time.Now()
	if c.sess.FirstAudio.IsZero() {
		c.sess.FirstAudio = now
	}
	c.sess.LastAudio = now
	c.sess.Audio = append(c.sess.Audio, pcm...)
	c.heard += len(pcm)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Second / time.Duration(c.rate) }
	scripted := l.Connections == 0 || c.nth < l.Connections
	if scripted && l.ErrorAfter > 0 && ms(before) < l.ErrorAfter && ms(c.heard) >= l.ErrorAfter {
		h.fail = true
		return h
	}
	if scripted && l.DropAfter > 0 && ms(before) < l.DropAfter && ms(c.heard) >= l.DropAfter {
		h.drop = true
		return h
	}
	every := l.InterimEvery
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	h.quietBefore, h.at = ms(c.quiet), ms(c.heard)
	if voiced(pcm) {
		h.voiced = true
		c.voiced += len(pcm)
		c.quiet = 0
	} else if c.voiced > 0 {
		c.quiet += len(pcm)
		h.quietAfter = ms(c.quiet)
		if l.EndOfSpeech > 0 && c.ownEndpoint.Load() && ms(c.quiet) >= l.EndOfSpeech && ms(c.quiet-len(pcm)) < l.EndOfSpeech {
			h.endOfSpeech = true
			return h
		}
	}
	if c.voiced > 0 {
		c.spoken += len(pcm)
	}
	if l.HeardInterims && len(a.transcripts) == 0 && a.fallback != nil {
		// A recogniser works through the pauses too: the words it
		// heard so far go each InterimEvery of audio once speech began.
		if ms(c.spoken)/every <= time.Duration(c.words) {
			return h
		}
		c.words = int(ms(c.spoken) / every)
		if text := a.fallback(WAV(pcmBytes(c.sess.Audio[c.start:]), c.rate)); text != "" && text != c.said {
			c.interim(&h, text)
		}
		return h
	}
	if ms(c.voiced)/every <= time.Duration(c.words) {
		return h
	}
	// The words come from what the final will be: the next scripted
	// transcript, or the fallback's answer to the utterance so far.
	var next string
	switch {
	case len(a.transcripts) > 0:
		next = a.transcripts[0]
	case a.fallback != nil:
		next = a.fallback(WAV(pcmBytes(c.sess.Audio[c.start:]), c.rate))
	}
	words := strings.Fields(next)
	if c.words >= len(words) {
		return h
	}
	c.words++
	c.interim(&h, strings.Join(words[:c.words], " "))
	return h
}

// interim (under the audio lock) sends text as the utterance's next
// interim.
func (c *liveConn) interim(h *heardAudio, text string) {
	h.interim = text
	if rest, ok := strings.CutPrefix(text, c.said); ok {
		h.delta = rest
		if c.said == "" {
			h.delta = strings.TrimLeft(rest, " ")
		}
	}
	c.said = text
	c.sess.Interims = append(c.sess.Interims, text)
	c.sess.InterimAudio = append(c.sess.InterimAudio, time.Duration(c.heard)*time.Second/time.Duration(c.rate))
}

// next is the transcript the utterance in progress will have (the next
// scripted one, or the fallback's answer to its audio so far), without
// taking it from the script.
func (c *liveConn) next() string {
	a := &c.s.audio
	a.mu.Lock()
	if len(a.transcripts) > 0 {
		defer a.mu.Unlock()
		return a.transcripts[0]
	}
	utter := append([]int16(nil), c.sess.Audio[c.start:]...)
	fallback := a.fallback
	a.mu.Unlock()
	if fallback == nil {
		return ""
	}
	return fallback(WAV(pcmBytes(utter), c.rate))
}

// turn records a turn signal sent.
func (c *liveConn) turn(event, transcript string, at time.Duration) {
	c.s.audio.mu.Lock()
	c.sess.Turns = append(c.sess.Turns, TurnEvent{Event: event, Transcript: transcript, Audio: at})
	c.s.audio.mu.Unlock()
}

func (l Live) endOfTurn() time.Duration {
	if l.EndOfTurn > 0 {
		return l.EndOfTurn
	}
	return 300 * time.Millisecond
}

func (l Live) eagerEndOfTurn() time.Duration {
	if l.EagerEndOfTurn > 0 {
		return l.EagerEndOfTurn
	}
	return 150 * time.Millisecond
}

// final takes the transcript of the utterance since the last final from
// the script; ok is false when the script has none. On a session with
// turn detection, an utterance without speech (the silence after the
// provider ended the turn) is "" and takes nothing from the script.
func (c *liveConn) final() (text string, ok bool, l Live) {
	a := &c.s.audio
	a.mu.Lock()
	if c.turns.Load() && c.voiced == 0 {
		c.start, c.words, c.quiet, c.spoken, c.said = len(c.sess.Audio), 0, 0, 0, ""
		if c.discard {
			c.sess.Audio, c.start = c.sess.Audio[:0], 0
		}
		c.sess.Finals = append(c.sess.Finals, "")
		l = a.live
		a.mu.Unlock()
		return "", true, l
	}
	utter := append([]int16(nil), c.sess.Audio[c.start:]...)
	c.start, c.words, c.voiced, c.quiet, c.spoken, c.said = len(c.sess.Audio), 0, 0, 0, 0, ""
	if c.discard {
		// A load run keeps no call's audio past its utterance.
		c.sess.Audio, c.start = c.sess.Audio[:0], 0
	}
	l = a.live
	fallback := a.fallback
	if len(a.transcripts) > 0 {
		text, a.transcripts, ok = a.transcripts[0], a.transcripts[1:], true
	}
	a.mu.Unlock()
	if !ok && fallback != nil {
		text, ok = fallback(WAV(pcmBytes(utter), c.rate)), true
	}
	if ok {
		a.mu.Lock()
		c.sess.Finals = append(c.sess.Finals, text)
		a.mu.Unlock()
	}
	return text, ok, l
}

func (c *liveConn) message(msg string) {
	c.s.audio.mu.Lock()
	c.sess.Messages = append(c.sess.Messages, msg)
	c.s.audio.mu.Unlock()
}

func (l Live) finalDelay() time.Duration {
	if l.FinalDelay > 0 {
		return l.FinalDelay
	}
	return DefaultFinalDelay
}

func (l Live) errorMessage() string {
	if l.ErrorMessage != "" {
		return l.ErrorMessage
	}
	return "scripted failure for the key sk-live-secret"
}

func (s *Server) stalled() bool {
	s.audio.mu.Lock()
	defer s.audio.mu.Unlock()
	return s.audio.live.Stall
}

// refused answers the upgrade itself when the script refuses it or the
// request's credentials are not the protocol's (a key is optional, as on
// the HTTP endpoints, but one sent must be in the protocol's scheme).
func (s *Server) refused(w http.ResponseWriter, r *http.Request, scheme string) bool {
	s.audio.mu.Lock()
	refuse := s.audio.live.Refuse
	s.audio.mu.Unlock()
	auth := r.Header.Get("Authorization")
	switch {
	case refuse:
		s.record(r, nil)
		writeError(w, http.StatusServiceUnavailable, "providertest: live transcription refused by the script")
	case auth != "" && !strings.HasPrefix(auth, scheme+" "):
		s.record(r, nil)
		writeError(w, http.StatusUnauthorized, "providertest: the key goes as Authorization: "+scheme+" KEY")
	default:
		return false
	}
	return true
}

// realtime is the OpenAI Realtime transcription session.
func (s *Server) realtime(w http.ResponseWriter, r *http.Request) {
	if s.refused(w, r, "Bearer") {
		return
	}
	c, ok := s.openLive(w, r, "realtime", 24000)
	if !ok {
		return
	}
	defer c.end()
	c.queue(map[string]any{"type": "session.created", "session": map[string]any{"type": "transcription", "id": "sess_test"}}, 0)
	if s.stalled() {
		<-c.ctx.Done()
		return
	}
	configured, ulaw, item := false, false, 1
	speaking := false // a semantic_vad session heard speech begin, and no end of turn since
	errorEvent := func(code, msg string) {
		c.queue(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "code": code, "message": msg}}, 0)
	}
	for {
		_, msg, err := c.conn.Read(c.ctx)
		if err != nil {
			return
		}
		var ev struct {
			Type    string `json:"type"`
			Audio   string `json:"audio"`
			Session struct {
				Type  string `json:"type"`
				Audio struct {
					Input struct {
						Format struct {
							Type string `json:"type"`
							Rate int    `json:"rate"`
						} `json:"format"`
						TurnDetection *struct {
							Type string `json:"type"`
						} `json:"turn_detection"`
					} `json:"input"`
				} `json:"audio"`
				InputAudioFormat string `json:"input_audio_format"`
			} `json:"session"`
		}
		if err := json.Unmarshal(msg, &ev); err != nil {
			errorEvent("invalid_json", "providertest: not JSON")
			continue
		}
		if ev.Type != "input_audio_buffer.append" {
			c.message(string(msg))
		}
		itemID := "item_" + strconv.Itoa(item)
		switch ev.Type {
		case "session.update":
			f := ev.Session.Audio.Input.Format
			if ev.Session.Type != "transcription" || !(f.Type == "audio/pcm" && f.Rate == 24000 || f.Type == "audio/pcmu") {
				errorEvent("invalid_value", "providertest: a transcription session takes audio/pcm at 24000 or audio/pcmu")
				continue
			}
			if f.Type == "audio/pcmu" && !ulaw {
				ulaw, c.rate = true, 8000
				c.s.audio.mu.Lock()
				c.sess.Rate = 8000
				c.s.audio.mu.Unlock()
			}
			configured = true
			td := ev.Session.Audio.Input.TurnDetection
			c.ownEndpoint.Store(td != nil && td.Type == "server_vad")
			c.turns.Store(td != nil && td.Type == "semantic_vad")
			c.queue(map[string]any{"type": "session.updated", "session": map[string]any{"type": "transcription"}}, 0)
		case "transcription_session.update":
			if ev.Session.InputAudioFormat != "pcm16" {
				errorEvent("invalid_value", "providertest: input_audio_format must be pcm16")
				continue
			}
			configured = true
			c.queue(map[string]any{"type": "transcription_session.updated"}, 0)
		case "input_audio_buffer.append":
			if !configured {
				errorEvent("session_not_configured", "providertest: send session.update first")
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(ev.Audio)
			if err != nil || !ulaw && len(raw)%2 != 0 {
				errorEvent("invalid_audio", "providertest: audio is not base64 PCM16 or G.711 µ-law")
				continue
			}
			var pcm []int16
			if ulaw {
				pcm = make([]int16, len(raw))
				for i, b := range raw {
					pcm[i] = g711.DecodeUlawFrame(b)
				}
			} else {
				pcm = make([]int16, len(raw)/2)
				for i := range pcm {
					pcm[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
				}
			}
			h := c.received(pcm)
			semantic := c.turns.Load()
			if semantic && h.voiced && !speaking {
				// The semantic VAD heard speech begin.
				speaking = true
				c.queue(map[string]any{"type": "input_audio_buffer.speech_started", "item_id": itemID,
					"audio_start_ms": h.at.Milliseconds()}, 0)
				c.turn("input_audio_buffer.speech_started", "", h.at)
			}
			switch {
			case h.fail:
				c.queue(map[string]any{"type": "error", "error": map[string]any{"type": "server_error", "code": "scripted_error", "message": h.live.errorMessage()}}, 0)
			case h.drop:
				c.closeAfter(0, -1)
				return
			case semantic && speaking && h.crossed(h.live.endOfTurn()):
				// The semantic VAD ends the turn: it commits the item
				// itself.
				speaking = false
				end := h.at + time.Duration(len(pcm))*time.Second/time.Duration(c.rate)
				item++
				c.queue(map[string]any{"type": "input_audio_buffer.speech_stopped", "item_id": itemID, "audio_end_ms": end.Milliseconds()}, 0)
				c.turn("input_audio_buffer.speech_stopped", "", end)
				c.queue(map[string]any{"type": "input_audio_buffer.committed", "item_id": itemID}, 0)
				c.complete(itemID, -1)
			case h.endOfSpeech:
				// The server's VAD commits the item itself.
				c.s.audio.mu.Lock()
				endMs := int64(c.heard) * 1000 / int64(c.rate)
				c.s.audio.mu.Unlock()
				item++
				c.queue(map[string]any{"type": "input_audio_buffer.speech_stopped", "item_id": itemID, "audio_end_ms": endMs}, 0)
				c.queue(map[string]any{"type": "input_audio_buffer.committed", "item_id": itemID}, 0)
				c.complete(itemID, 0)
			case h.delta != "":
				c.queue(map[string]any{"type": "conversation.item.input_audio_transcription.delta", "item_id": itemID, "content_index": 0, "delta": h.delta}, h.live.InterimLag)
			}
		case "input_audio_buffer.commit":
			c.s.audio.mu.Lock()
			empty := len(c.sess.Audio) == c.start
			c.s.audio.mu.Unlock()
			if empty {
				errorEvent("input_audio_buffer_commit_empty", "providertest: the buffer is empty")
				continue
			}
			item++
			c.queue(map[string]any{"type": "input_audio_buffer.committed", "item_id": itemID}, 0)
			c.complete(itemID, -1)
		default:
			errorEvent("unknown_event", fmt.Sprintf("providertest: unknown event %q", clip(ev.Type, 40)))
		}
	}
}

// complete sends a committed Realtime item's transcript of the utterance
// since the last one, delay after now (-1: the script's FinalDelay).
func (c *liveConn) complete(itemID string, delay time.Duration) {
	text, ok, l := c.final()
	if delay < 0 {
		delay = l.finalDelay()
	}
	if !ok {
		c.queue(map[string]any{"type": "conversation.item.input_audio_transcription.failed", "item_id": itemID,
			"error": map[string]any{"type": "transcription_error", "code": "no_transcript_scripted", "message": "providertest: no transcript scripted"}}, delay)
		return
	}
	c.queue(map[string]any{"type": "conversation.item.input_audio_transcription.completed", "item_id": itemID, "content_index": 0, "transcript": text}, delay)
}

// deepgram is a Deepgram-compatible live transcription.
func (s *Server) deepgram(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rate, err := strconv.Atoi(q.Get("sample_rate"))
	switch {
	case s.refused(w, r, "Token"):
		return
	case q.Get("encoding") != "linear16" || err != nil || rate < 8000 || rate > 48000:
		s.record(r, nil)
		writeError(w, http.StatusBadRequest, "providertest: listen needs encoding=linear16 and sample_rate")
		return
	}
	c, ok := s.openLive(w, r, "deepgram", rate)
	if !ok {
		return
	}
	defer c.end()
	c.ownEndpoint.Store(q.Get("endpointing") != "false")
	if s.stalled() {
		<-c.ctx.Done()
		return
	}
	interimOn := q.Get("interim_results") == "true"
	// results is a Results message over the utterance in progress, from
	// its start to the audio received so far (seconds on the stream).
	results := func(text string, final, fromFinalize bool) map[string]any {
		c.s.audio.mu.Lock()
		// On the stream's time (a load run keeps only the utterance in
		// progress of sess.Audio).
		end := float64(c.heard) / float64(rate)
		start := end - float64(len(c.sess.Audio)-c.start)/float64(rate)
		c.s.audio.mu.Unlock()
		return map[string]any{"type": "Results", "channel_index": []int{0, 1}, "is_final": final, "speech_final": final,
			"from_finalize": fromFinalize, "start": start, "duration": end - start,
			"channel": map[string]any{"alternatives": []map[string]any{{"transcript": text, "confidence": 0.99}}}}
	}
	endpointed := false // the provider's endpointing settled the last utterance
	for {
		typ, msg, err := c.conn.Read(c.ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			pcm, ok := c.pcm(msg)
			if !ok {
				return
			}
			spoke := c.voiced > 0
			h := c.received(pcm)
			switch {
			case h.fail:
				c.closeAfter(0, websocket.StatusInternalError)
				return
			case h.drop:
				c.closeAfter(0, -1)
				return
			case h.endOfSpeech || (h.live.Endpointing && spoke && !voiced(pcm)):
				// The provider's endpointing: settled at once (with
				// Endpointing, at the first silence after speech).
				msg := results("", true, false)
				text, ok, _ := c.final()
				if !ok {
					c.closeAfter(0, websocket.StatusInternalError)
					return
				}
				msg["channel"] = map[string]any{"alternatives": []map[string]any{{"transcript": text, "confidence": 0.99}}}
				c.queue(msg, 0)
				endpointed = true
			case h.interim != "" && interimOn:
				c.queue(results(h.interim, false, false), h.live.InterimLag)
			}
			continue
		}
		c.message(string(msg))
		var m struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(msg, &m)
		switch m.Type {
		case "Finalize":
			if endpointed && c.voiced == 0 {
				// Nothing left to process: no answer, as Deepgram does.
				endpointed = false
				continue
			}
			endpointed = false
			msg := results("", true, true)
			text, ok, l := c.final()
			if !ok {
				c.closeAfter(l.finalDelay(), websocket.StatusInternalError)
				return
			}
			msg["channel"] = map[string]any{"alternatives": []map[string]any{{"transcript": text, "confidence": 0.99}}}
			c.queue(msg, l.finalDelay())
		case "KeepAlive":
		case "CloseStream":
			b, _ := json.Marshal(map[string]any{"type": "Metadata", "request_id": "req_test"})
			c.out <- outItem{at: time.Now(), data: b, close: websocket.StatusNormalClosure}
			<-c.ctx.Done()
			return
		default:
			c.closeAfter(0, websocket.StatusPolicyViolation)
			return
		}
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// voiced reports whether a piece of audio is louder than line silence
// (RMS over 300), as a recogniser hears words only in speech.
func voiced(pcm []int16) bool {
	if len(pcm) == 0 {
		return false
	}
	var sum float64
	for _, v := range pcm {
		sum += float64(v) * float64(v)
	}
	return sum/float64(len(pcm)) > 300*300
}

// pcmBytes is 16-bit samples as little-endian bytes.
func pcmBytes(pcm []int16) []byte {
	raw := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
	}
	return raw
}

// flux is a Deepgram-compatible turn-taking stream (/v2/listen): binary
// linear16 audio at the query's sample_rate in, TurnInfo messages out
// (see Live.EndOfTurn and Live.EagerEndOfTurn); ForceEndTurn ends the
// open turn (an EndOfTurn after the script's FinalDelay) and is ignored
// with none open; CloseStream closes the stream.
func (s *Server) flux(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rate, err := strconv.Atoi(q.Get("sample_rate"))
	switch {
	case s.refused(w, r, "Token"):
		return
	case q.Get("encoding") != "linear16" || err != nil || rate < 8000 || rate > 48000 || q.Get("model") == "":
		s.record(r, nil)
		writeError(w, http.StatusBadRequest, "providertest: v2 listen needs model, encoding=linear16 and sample_rate")
		return
	}
	c, ok := s.openLive(w, r, "flux", rate)
	if !ok {
		return
	}
	defer c.end()
	c.turns.Store(true)
	eagerOn := q.Get("eager_eot_threshold") != ""
	seq := 0
	c.queue(map[string]any{"type": "Connected", "request_id": "req_test", "sequence_id": seq}, 0)
	if s.stalled() {
		<-c.ctx.Done()
		return
	}
	open, eager, index := false, false, 0
	var turnStart time.Duration
	info := func(event, transcript string, at time.Duration, delay time.Duration) {
		seq++
		words := []map[string]any{}
		for _, w := range strings.Fields(transcript) {
			words = append(words, map[string]any{"word": w, "confidence": 0.98})
		}
		confidence := 0.1
		switch event {
		case "EagerEndOfTurn":
			confidence = 0.55
		case "EndOfTurn":
			confidence = 0.9
		}
		c.queue(map[string]any{"type": "TurnInfo", "request_id": "req_test", "sequence_id": seq, "event": event,
			"turn_index": index, "audio_window_start": turnStart.Seconds(), "audio_window_end": at.Seconds(),
			"transcript": transcript, "words": words, "end_of_turn_confidence": confidence}, delay)
		c.turn(event, transcript, at)
	}
	// endTurn closes the open turn with the script's transcript.
	endTurn := func(at, delay time.Duration) bool {
		text, ok, _ := c.final()
		if !ok {
			c.closeAfter(delay, websocket.StatusInternalError)
			return false
		}
		info("EndOfTurn", text, at, delay)
		open, eager = false, false
		index++
		return true
	}
	for {
		typ, msg, err := c.conn.Read(c.ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			pcm, ok := c.pcm(msg)
			if !ok {
				return
			}
			h := c.received(pcm)
			at := h.at + time.Duration(len(pcm))*time.Second/time.Duration(rate)
			switch {
			case h.fail:
				c.closeAfter(0, websocket.StatusInternalError)
				return
			case h.drop:
				c.closeAfter(0, -1)
				return
			}
			switch {
			case h.voiced && !open:
				open, turnStart = true, h.at
				info("StartOfTurn", "", at, h.live.InterimLag)
			case h.voiced && eager:
				eager = false
				info("TurnResumed", c.saidSoFar(), at, h.live.InterimLag)
			}
			switch {
			case h.interim != "" && open && !eager:
				info("Update", h.interim, at, h.live.InterimLag)
			case open && !h.voiced && h.crossed(h.live.endOfTurn()):
				if !endTurn(at, h.live.InterimLag) {
					return
				}
			case open && !h.voiced && !eager && eagerOn && h.crossed(h.live.eagerEndOfTurn()):
				eager = true
				info("EagerEndOfTurn", c.next(), at, h.live.InterimLag)
			}
			continue
		}
		c.message(string(msg))
		var m struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(msg, &m)
		switch m.Type {
		case "ForceEndTurn":
			if !open {
				continue // no turn in progress: ignored
			}
			c.s.audio.mu.Lock()
			at := time.Duration(c.heard) * time.Second / time.Duration(rate)
			l := c.s.audio.live
			c.s.audio.mu.Unlock()
			if !endTurn(at, l.finalDelay()) {
				return
			}
		case "Configure":
			c.queue(map[string]any{"type": "ConfigureSuccess", "request_id": "req_test"}, 0)
		case "CloseStream":
			c.out <- outItem{at: time.Now(), close: websocket.StatusNormalClosure}
			<-c.ctx.Done()
			return
		default:
			c.closeAfter(0, websocket.StatusPolicyViolation)
			return
		}
	}
}

// saidSoFar is the last interim of the utterance in progress.
func (c *liveConn) saidSoFar() string {
	c.s.audio.mu.Lock()
	defer c.s.audio.mu.Unlock()
	return c.said
}
