package providertest

import (
	"bytes"
	"io"
	"net/http"
	"time"
)

// Endpoints of the scripted provider a Fault can be set on.
const (
	EndpointChat           = "chat"
	EndpointTranscriptions = "transcriptions"
	EndpointSpeech         = "speech"
	EndpointEmbeddings     = "embeddings"
)

// Fault makes one endpoint of the scripted provider misbehave, as a real
// provider does when it is down, overloaded or broken: the fault fields
// are checked in this order.
type Fault struct {
	// Refuse drops the connection without an answer (a provider that is
	// gone: the client sees a connection error).
	Refuse bool
	// Status answers this error status with an OpenAI-shaped error.
	Status int
	// Hang holds the request before its first byte this long, or until the
	// client goes away.
	Hang time.Duration
	// Garbage answers 200 with a body that is not the API's.
	Garbage bool
	// Cut answers 200 and the first bytes of a body, then drops the
	// connection.
	Cut bool
	// Stall answers 200 and the first 100 ms of a speech answer's audio
	// (raw PCM), then holds the rest this long, or until the client goes
	// away (a voice that hangs mid-sentence).
	Stall time.Duration
	// Trickle answers normally but slowly, in pieces this long apart (a
	// provider that trickles its answer): a streamed chat answer one event
	// (one token) at a time, any other body 16 bytes at a time.
	Trickle time.Duration
	// Times is how many requests the fault applies to; 0: every request
	// until ClearFault.
	Times int
	// Every applies the fault to one request in Every (2: half of them,
	// alternating); 0 or 1: every request.
	Every int
	seen  int // requests the fault has seen (for Every)
}

// SetFault sets endpoint's fault from the next request on.
func (s *Server) SetFault(endpoint string, f Fault) {
	s.mu.Lock()
	if s.faults == nil {
		s.faults = map[string]*Fault{}
	}
	s.faults[endpoint] = &f
	s.mu.Unlock()
}

// ClearFault makes endpoint answer normally again.
func (s *Server) ClearFault(endpoint string) {
	s.mu.Lock()
	delete(s.faults, endpoint)
	s.mu.Unlock()
}

// Faulted counts the requests a fault answered, by endpoint.
func (s *Server) Faulted(endpoint string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faulted[endpoint]
}

// faulty wraps endpoint's handler with its fault, when one is set.
func (s *Server) faulty(endpoint string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		f := s.faults[endpoint]
		if f != nil && f.Every > 1 {
			if f.seen++; f.seen%f.Every != 0 {
				f = nil // this one is answered normally
			}
		}
		var fault Fault
		if f != nil {
			fault = *f
			if f.Times > 0 {
				if f.Times--; f.Times == 0 {
					delete(s.faults, endpoint)
				}
			}
			if s.faulted == nil {
				s.faulted = map[string]int{}
			}
			s.faulted[endpoint]++
		}
		s.mu.Unlock()
		if f == nil {
			h(w, r)
			return
		}
		// The body is read whole first, as a provider does before it
		// answers: until then the server does not notice a client that
		// went away, and a held request would outlive its caller.
		body, _ := io.ReadAll(r.Body)
		if fault.Trickle > 0 {
			// Answered as normal (the handler reads and records the
			// request), only slowly.
			r.Body = io.NopCloser(bytes.NewReader(body))
			h(&trickleWriter{ResponseWriter: w, r: r, every: fault.Trickle, events: endpoint == EndpointChat}, r)
			return
		}
		s.record(r, body)
		switch {
		case fault.Refuse:
			drop(w)
		case fault.Status != 0:
			writeError(w, fault.Status, "providertest: injected fault")
		case fault.Hang > 0:
			if hold(r, fault.Hang) {
				writeError(w, http.StatusGatewayTimeout, "providertest: injected hang")
			}
		case fault.Garbage:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
		case fault.Stall > 0:
			w.Header().Set("Content-Type", "audio/pcm")
			s.toneOnce.Do(s.makeTone)
			for range 4 { // 100 ms
				_, _ = w.Write(s.tone)
			}
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			hold(r, fault.Stall)
		case fault.Cut:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "4096")
			_, _ = w.Write([]byte(`{"text":"`))
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			drop(w)
		default:
			h(w, r)
		}
	}
}

// drop closes the request's connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// trickleWriter sends a body in pieces of 16 bytes, every apart, flushing
// each (the first at once); with events, a server-sent event (one write of
// the stream) goes out whole as one piece. It stops when the client goes
// away.
type trickleWriter struct {
	http.ResponseWriter
	r      *http.Request
	every  time.Duration
	events bool
	sent   bool
}

func (t *trickleWriter) Write(p []byte) (int, error) {
	if t.events && bytes.HasPrefix(p, []byte("data: ")) {
		if t.sent && !hold(t.r, t.every) {
			return 0, http.ErrHandlerTimeout
		}
		n, err := t.ResponseWriter.Write(p)
		t.Flush()
		t.sent = true
		return n, err
	}
	n := 0
	for len(p) > 0 {
		if t.sent && !hold(t.r, t.every) {
			return n, http.ErrHandlerTimeout
		}
		k := min(16, len(p))
		m, err := t.ResponseWriter.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		t.Flush()
		t.sent, p = true, p[k:]
	}
	return n, nil
}

func (t *trickleWriter) Flush() {
	if fl, ok := t.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}
