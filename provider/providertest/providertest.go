// Package providertest is the one stand-in the box's tests use: a scripted
// OpenAI-compatible HTTP server that plays the model provider at its wire and
// records every request it was sent. It also plays live transcription over
// WebSocket (an OpenAI Realtime transcription session at /v1/realtime, a
// Deepgram-compatible /v1/listen and its turn-taking stream at /v2/listen;
// see Live and LiveSessions).
//
//	srv := providertest.New(t)
//	srv.Script(providertest.Reply{Content: `{"operations":[],"summary":"hi"}`})
//	cfg.Providers["openai"] = config.Provider{BaseURL: srv.URL()}
//	... run the code under test ...
//	got := srv.ChatRequests()[0]
package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Reply is one scripted answer to a chat completion request.
type Reply struct {
	// Content is the assistant message text.
	Content string
	// Status, when not 0 or 200, answers an OpenAI-shaped error with Message.
	Status  int
	Message string
	// Delay holds the answer back; the wait ends early if the client goes away.
	Delay time.Duration
	// Gate, when non-nil, holds the answer until the channel is closed or
	// receives a value.
	Gate <-chan struct{}
	// PromptTokens and CompletionTokens are reported as usage (defaults 10 and 5).
	PromptTokens, CompletionTokens int
	// ToolCalls are function calls the model makes (finish reason
	// tool_calls). Streamed, each call's arguments arrive in two pieces.
	ToolCalls []Call
	// Finish overrides the finish reason ("length" for a cut answer).
	Finish string
	// Raw, when set, is the whole answer: status 200 with this body as it
	// is (a misbehaving provider: HTML, truncated JSON, anything).
	Raw string
	// Cut closes a streamed answer cleanly after its content chunks,
	// without the finish chunk or [DONE] (a stream cut in the middle); a
	// plain answer ends in the middle of its JSON.
	Cut bool
	// Stall holds a streamed answer this long after its first content
	// chunk (a provider that hangs mid-stream), a plain answer in the
	// middle of its JSON; the wait ends early if the client goes away.
	Stall time.Duration
	// ChunkDelay paces a streamed answer: the wait between content chunks,
	// as a real model generates tokens over time.
	ChunkDelay time.Duration
}

// Call is a scripted function call.
type Call struct {
	ID, Name, Arguments string
}

// ToolCall makes a scripted function call with JSON arguments.
func ToolCall(id, name string, args any) Call {
	b, _ := json.Marshal(args)
	return Call{ID: id, Name: name, Arguments: string(b)}
}

// Request is one recorded request.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Chat is the decoded body of a chat completion request.
	Chat *openai.ChatCompletionRequest
	// Embeddings is the decoded body of an embeddings request.
	Embeddings *EmbeddingsRequest
}

// Server is a scripted provider. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	discard  bool
	script   []Reply
	fallback func(*openai.ChatCompletionRequest) Reply
	byModel  func(model string) Reply
	requests []Request
	audio    audio
	emb      embedState
	done     chan struct{} // closed by Close: live connections end

	faults  map[string]*Fault
	faulted map[string]int

	toneOnce sync.Once
	tone     []byte // one period of the speech tone, 16-bit PCM

	pending atomic.Int64 // HTTP requests being answered
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := Start()
	t.Cleanup(s.Close)
	return s
}

// Start starts a server on 127.0.0.1 outside a test (the load command uses
// it); call Close when done.
func Start() *Server {
	s := &Server{done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.counted(s.faulty(EndpointChat, s.chat)))
	mux.HandleFunc("POST /v1/embeddings", s.counted(s.faulty(EndpointEmbeddings, s.embeddings)))
	mux.HandleFunc("POST /v1/audio/transcriptions", s.counted(s.faulty(EndpointTranscriptions, s.transcribe)))
	mux.HandleFunc("POST /v1/audio/speech", s.counted(s.faulty(EndpointSpeech, s.speak)))
	mux.HandleFunc("GET /v1/realtime", s.realtime)
	mux.HandleFunc("GET /v1/listen", s.deepgram)
	mux.HandleFunc("GET /v2/listen", s.flux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(r, nil)
		writeError(w, http.StatusNotFound, "providertest: no handler for "+r.Method+" "+r.URL.Path)
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// counted keeps Pending's count of h's requests.
func (s *Server) counted(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.pending.Add(1)
		defer s.pending.Add(-1)
		h(w, r)
	}
}

// Pending is how many HTTP requests (chat, embeddings, transcriptions,
// speech; not live streams) the server is answering now: a test that
// steps a call's mock clock waits for them, so the provider's time on
// the machine's clock is not counted as the call's.
func (s *Server) Pending() int64 { return s.pending.Load() }

// Close stops the server and ends its live connections.
func (s *Server) Close() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.srv.Close()
}

// URL is the base URL to configure as the provider's baseURL (ends in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Script queues replies, answered in order, one per chat request.
func (s *Server) Script(replies ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, replies...)
	s.mu.Unlock()
}

// Respond sets the answer for chat requests that find the script empty. Without
// it such requests get a 500 saying the script ran out.
func (s *Server) Respond(fn func(*openai.ChatCompletionRequest) Reply) {
	s.mu.Lock()
	s.fallback = fn
	s.mu.Unlock()
}

// RespondByModel sets the answer for chat requests that find the script
// empty by the model asked alone (instead of Respond's), for load runs:
// while requests are discarded, the rest of a request (the conversation,
// which grows every turn) is not decoded, so the stand-in's own cost per
// request stays flat.
func (s *Server) RespondByModel(fn func(model string) Reply) {
	s.mu.Lock()
	s.byModel = fn
	s.mu.Unlock()
}

// DiscardRequests stops recording (the requests, the audio uploaded for
// transcription and the texts asked to be spoken), for long load runs,
// whose recordings would grow by gigabytes.
func (s *Server) DiscardRequests() {
	s.mu.Lock()
	s.discard, s.requests = true, nil
	s.mu.Unlock()
	s.audio.mu.Lock()
	s.audio.uploads, s.audio.speech = nil, nil
	s.audio.mu.Unlock()
}

// discarding says DiscardRequests was called.
func (s *Server) discarding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.discard
}

// Requests returns a copy of everything received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ChatRequests returns the decoded chat completion requests received so far.
func (s *Server) ChatRequests() []*openai.ChatCompletionRequest {
	var out []*openai.ChatCompletionRequest
	for _, r := range s.Requests() {
		if r.Chat != nil {
			out = append(out, r.Chat)
		}
	}
	return out
}

func (s *Server) record(r *http.Request, body []byte) {
	if s.discarding() {
		return
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
}

// streamOptions is a streamed request's stream_options.
type streamOptions struct {
	IncludeUsage    bool `json:"include_usage"`
	ContinuousUsage bool `json:"continuous_usage_stats"`
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req openai.ChatCompletionRequest
	s.mu.Lock()
	slim := s.discard && s.byModel != nil && len(s.script) == 0
	s.mu.Unlock()
	var err error
	// What a stream's usage chunks follow (go-openai's request has no
	// continuous_usage_stats); read with the head when the request is not
	// kept, so a long request is parsed once.
	var opts struct {
		StreamOptions streamOptions `json:"stream_options"`
	}
	if slim {
		var head struct {
			Model         string        `json:"model"`
			Stream        bool          `json:"stream"`
			StreamOptions streamOptions `json:"stream_options"`
		}
		err = json.Unmarshal(body, &head)
		req.Model, req.Stream, opts.StreamOptions = head.Model, head.Stream, head.StreamOptions
	} else {
		err = json.Unmarshal(body, &req)
		if err == nil && req.Stream {
			_ = json.Unmarshal(body, &opts)
		}
	}
	if err != nil {
		s.record(r, body)
		writeError(w, http.StatusBadRequest, "providertest: bad JSON: "+err.Error())
		return
	}
	s.mu.Lock()
	if !s.discard {
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Chat: &req})
	}
	var reply Reply
	var ok bool
	if len(s.script) > 0 {
		reply, s.script, ok = s.script[0], s.script[1:], true
	} else if byModel := s.byModel; byModel != nil {
		s.mu.Unlock()
		reply, ok = byModel(req.Model), true
		s.mu.Lock()
	} else if s.fallback != nil {
		fn := s.fallback
		s.mu.Unlock()
		reply, ok = fn(&req), true
		s.mu.Lock()
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusInternalServerError, "providertest: the script has no reply left")
		return
	}
	if reply.Gate != nil {
		select {
		case <-reply.Gate:
		case <-r.Context().Done():
			return
		}
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.Message)
		return
	}
	if reply.Raw != "" {
		_, _ = io.WriteString(w, reply.Raw)
		return
	}
	pt, ct := reply.PromptTokens, reply.CompletionTokens
	if pt == 0 && ct == 0 {
		pt, ct = 10, 5
	}
	if req.Stream {
		usage := usageAtEnd
		switch {
		case opts.StreamOptions.IncludeUsage && opts.StreamOptions.ContinuousUsage:
			usage = usageEveryChunk
		case !opts.StreamOptions.IncludeUsage:
			usage = usageNone
		}
		streamChat(r.Context(), w, req.Model, reply, pt, ct, usage)
		return
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply.Content}
	finish := openai.FinishReasonStop
	for _, c := range reply.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		finish = openai.FinishReasonToolCalls
	}
	if reply.Finish != "" {
		finish = openai.FinishReason(reply.Finish)
	}
	resp := openai.ChatCompletionResponse{
		ID:      "chatcmpl-test",
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   openai.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct},
	}
	w.Header().Set("Content-Type", "application/json")
	body, _ = json.Marshal(resp)
	if reply.Cut || reply.Stall > 0 {
		// The plain answer's misbehaviours: its body cut in the middle, or
		// held there.
		half := len(body) / 2
		_, _ = w.Write(body[:half])
		if reply.Cut {
			return
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		select {
		case <-time.After(reply.Stall):
		case <-r.Context().Done():
			return
		}
		body = body[half:]
	}
	_, _ = w.Write(body)
}

// When a stream reports usage.
type usageMode int

const (
	usageNone       usageMode = iota // not asked for
	usageAtEnd                       // include_usage: one chunk after the finish, as OpenAI does
	usageEveryChunk                  // and continuous_usage_stats: every chunk, as vLLM does
)

// streamChat answers server-sent events the way OpenAI streams: a role chunk,
// content chunks of a few words, a finish chunk, usage when asked, [DONE].
// With usage on every chunk, each carries the prompt tokens and the
// completion tokens so far (all of them from the finish chunk on).
func streamChat(ctx context.Context, w http.ResponseWriter, model string, reply Reply, pt, ct int, usage usageMode) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	sent := 0 // completion tokens reported so far
	chunk := func(delta openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) openai.ChatCompletionStreamResponse {
		c := openai.ChatCompletionStreamResponse{
			ID: "chatcmpl-test", Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: model,
			Choices: []openai.ChatCompletionStreamChoice{{Index: 0, Delta: delta, FinishReason: finish}},
		}
		if usage == usageEveryChunk {
			if delta.Content != "" || len(delta.ToolCalls) > 0 {
				sent = min(sent+1, ct)
			}
			if finish != "" {
				sent = ct
			}
			c.Usage = &openai.Usage{PromptTokens: pt, CompletionTokens: sent, TotalTokens: pt + sent}
		}
		return c
	}
	send(chunk(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}, ""))
	for i, piece := range splitKeep(reply.Content, 3) {
		if i > 0 && reply.ChunkDelay > 0 {
			// A client that went away ends the stream, as a provider would.
			select {
			case <-ctx.Done():
				return
			case <-time.After(reply.ChunkDelay):
			}
		}
		send(chunk(openai.ChatCompletionStreamChoiceDelta{Content: piece}, ""))
		if i == 0 && reply.Stall > 0 {
			select {
			case <-time.After(reply.Stall):
			case <-ctx.Done():
				return
			}
		}
	}
	if reply.Cut {
		return
	}
	finish := openai.FinishReasonStop
	for i, c := range reply.ToolCalls {
		i := i
		half := len(c.Arguments) / 2
		send(chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &i, ID: c.ID, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments[:half]}}}}, ""))
		send(chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{Index: &i,
			Function: openai.FunctionCall{Arguments: c.Arguments[half:]}}}}, ""))
		finish = openai.FinishReasonToolCalls
	}
	if reply.Finish != "" {
		finish = openai.FinishReason(reply.Finish)
	}
	send(chunk(openai.ChatCompletionStreamChoiceDelta{}, finish))
	if usage != usageNone {
		send(openai.ChatCompletionStreamResponse{
			ID: "chatcmpl-test", Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: model,
			Choices: []openai.ChatCompletionStreamChoice{},
			Usage:   &openai.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct},
		})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// splitKeep cuts s into pieces of about n words, keeping every byte, so the
// concatenation of the pieces is s.
func splitKeep(s string, n int) []string {
	var out []string
	var b strings.Builder
	words := 0
	for _, r := range s {
		b.WriteRune(r)
		if r == ' ' {
			words++
			if words == n {
				out = append(out, b.String())
				b.Reset()
				words = 0
			}
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

func writeError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "providertest_error", "code": nil}})
	_, _ = w.Write(buf.Bytes())
}
