package providertest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"
)

// SpeechRate is the sample rate of the scripted text-to-speech ("pcm"
// format, 16-bit mono little-endian, as OpenAI's speech endpoint answers).
const SpeechRate = 24000

// SpeechMsPerChar is how long the scripted voice speaks per character of
// text, so longer sentences play longer.
const SpeechMsPerChar = 40

// toneSamples is one period of the 440 Hz speech tone at SpeechRate
// (SpeechRate / gcd(440, SpeechRate)).
const toneSamples = SpeechRate / 40

// audio holds the scripted speech-to-text answers and what was sent.
type audio struct {
	mu          sync.Mutex
	transcripts []string
	fallback    func(wav []byte) string
	speech      []string // texts asked to be spoken
	uploads     [][]byte // audio files received for transcription
	lastPCM     []byte   // the audio of the last scripted answer
	lastText    string
	live        Live
	liveOpened  int            // live connections opened since SetLive
	sessions    []*LiveSession // live transcription connections
	latency     AudioLatency
	cancelled   int // transcription requests the client gave up on
}

// AudioLatency holds the HTTP audio endpoints' answers back, as a hosted
// provider's processing would: a benchmark's provider profile.
type AudioLatency struct {
	// Transcription is the wait before /v1/audio/transcriptions answers.
	Transcription time.Duration
	// SpeechFirstByte is the wait before /v1/audio/speech sends its first
	// bytes; the rest follows as a stream, faster than real time.
	SpeechFirstByte time.Duration
}

// SetAudioLatency sets the audio endpoints' latency from the next request
// on.
func (s *Server) SetAudioLatency(l AudioLatency) {
	s.audio.mu.Lock()
	s.audio.latency = l
	s.audio.mu.Unlock()
}

// CancelledTranscriptions counts the transcription requests whose client
// went away before the answer (speculation the caller talked past).
func (s *Server) CancelledTranscriptions() int {
	s.audio.mu.Lock()
	defer s.audio.mu.Unlock()
	return s.audio.cancelled
}

// hold waits d unless the client goes away first (false).
func hold(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// ScriptTranscripts queues what /v1/audio/transcriptions answers, one
// text per utterance, in order. A request whose audio strictly extends the
// audio of the previous scripted answer (a caller's speculative
// transcription, then the whole utterance once it ended) is the same
// utterance and gets the same text again.
func (s *Server) ScriptTranscripts(texts ...string) {
	s.audio.mu.Lock()
	s.audio.transcripts = append(s.audio.transcripts, texts...)
	s.audio.mu.Unlock()
}

// RespondTranscripts sets the answer when the transcript queue is empty.
func (s *Server) RespondTranscripts(fn func(wav []byte) string) {
	s.audio.mu.Lock()
	s.audio.fallback = fn
	s.audio.mu.Unlock()
}

// SpeechRequests returns the texts sent to /v1/audio/speech so far.
func (s *Server) SpeechRequests() []string {
	s.audio.mu.Lock()
	defer s.audio.mu.Unlock()
	return append([]string(nil), s.audio.speech...)
}

// Uploads returns the audio files sent for transcription so far.
func (s *Server) Uploads() [][]byte {
	s.audio.mu.Lock()
	defer s.audio.mu.Unlock()
	return append([][]byte(nil), s.audio.uploads...)
}

func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		writeError(w, http.StatusBadRequest, "providertest: multipart: "+err.Error())
		return
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "providertest: no file")
		return
	}
	data, _ := io.ReadAll(f)
	s.record(r, nil)
	s.audio.mu.Lock()
	wait := s.audio.latency.Transcription
	s.audio.mu.Unlock()
	if !hold(r, wait) {
		s.audio.mu.Lock()
		s.audio.cancelled++
		s.audio.mu.Unlock()
		return
	}
	keep := !s.discarding()
	s.audio.mu.Lock()
	if keep {
		s.audio.uploads = append(s.audio.uploads, data)
	}
	text, ok := "", false
	pcm := wavData(data)
	if prev := s.audio.lastPCM; len(prev) > 0 && len(pcm) > len(prev) && bytes.Equal(pcm[:len(prev)], prev) {
		text, ok = s.audio.lastText, true
		s.audio.lastPCM = pcm
	} else if len(s.audio.transcripts) > 0 {
		text, s.audio.transcripts, ok = s.audio.transcripts[0], s.audio.transcripts[1:], true
		s.audio.lastPCM, s.audio.lastText = pcm, text
	} else if s.audio.fallback != nil {
		text, ok = s.audio.fallback(data), true
	}
	s.audio.mu.Unlock()
	if !ok {
		writeError(w, http.StatusInternalServerError, "providertest: no transcript scripted")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"text": text})
}

// wavData is the samples of a WAV file (after its 44-byte header).
func wavData(wav []byte) []byte {
	if len(wav) < 44 {
		return nil
	}
	return wav[44:]
}

// makeTone computes one period of the scripted voice's tone.
func (s *Server) makeTone() {
	s.tone = make([]byte, 2*toneSamples)
	for i := range toneSamples {
		binary.LittleEndian.PutUint16(s.tone[2*i:], uint16(int16(8000*math.Sin(2*math.Pi*440*float64(i)/SpeechRate))))
	}
}

// speak answers a 440 Hz tone lasting SpeechMsPerChar per character.
func (s *Server) speak(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.record(r, body)
	var req struct {
		Input          string `json:"input"`
		ResponseFormat string `json:"response_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.Input == "" {
		writeError(w, http.StatusBadRequest, "providertest: speech needs input")
		return
	}
	if !s.discarding() {
		s.audio.mu.Lock()
		s.audio.speech = append(s.audio.speech, req.Input)
		s.audio.mu.Unlock()
	}
	n := utf8.RuneCountInString(req.Input) * SpeechMsPerChar * SpeechRate / 1000
	// The tone repeats every toneSamples; a load run asks for thousands of
	// answers, so each is cut from one period computed once instead of a
	// sine per sample.
	s.toneOnce.Do(s.makeTone)
	pcm := make([]byte, 0, 2*n)
	for len(pcm) < 2*n {
		pcm = append(pcm, s.tone[:min(len(s.tone), 2*n-len(pcm))]...)
	}
	switch req.ResponseFormat {
	case "pcm":
		s.audio.mu.Lock()
		wait := s.audio.latency.SpeechFirstByte
		s.audio.mu.Unlock()
		if !hold(r, wait) {
			return
		}
		w.Header().Set("Content-Type", "audio/pcm")
		// Streamed in 100 ms pieces, as a streaming speech endpoint sends.
		b := pcm
		const piece = SpeechRate / 10 * 2
		for len(b) > 0 {
			n := min(piece, len(b))
			if _, err := w.Write(b[:n]); err != nil {
				return
			}
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			b = b[n:]
		}
	case "wav":
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(WAV(pcm, SpeechRate))
	default:
		writeError(w, http.StatusBadRequest, "providertest: speech supports response_format pcm or wav")
	}
}

// WAV wraps 16-bit mono little-endian PCM in a WAV header.
func WAV(pcm []byte, rate int) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+len(pcm)))
	b.WriteString("WAVEfmt ")
	_ = binary.Write(&b, binary.LittleEndian, uint32(16))
	_ = binary.Write(&b, binary.LittleEndian, uint16(1))
	_ = binary.Write(&b, binary.LittleEndian, uint16(1))
	_ = binary.Write(&b, binary.LittleEndian, uint32(rate))
	_ = binary.Write(&b, binary.LittleEndian, uint32(rate*2))
	_ = binary.Write(&b, binary.LittleEndian, uint16(2))
	_ = binary.Write(&b, binary.LittleEndian, uint16(16))
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(len(pcm)))
	b.Write(pcm)
	return b.Bytes()
}
