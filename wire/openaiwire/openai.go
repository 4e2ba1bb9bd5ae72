package openaiwire

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/wire"
)

// Config wires the wire (see wire.Config).
type Config = wire.Config

// Register mounts the wire's routes on mux (an *api.Server or an
// *http.ServeMux).
func Register(mux wire.Mux, cfg Config) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &handler{cfg: cfg, log: cfg.Logger.With("component", "wire.openai")}
	mux.PersonHandle("POST /openai/v1/chat/completions", wire.Handler(cfg, "openai", chat{}, false))
	mux.PersonHandle("GET /openai/v1/models", http.HandlerFunc(h.models))
	mux.PersonHandle("GET /openai/v1/models/{model}", http.HandlerFunc(h.model))
	mux.PersonHandle("POST /openai/v1/responses", wire.Handler(cfg, "openai", responses{}, false))
	mux.Handle("/openai/v1/", http.HandlerFunc(unknownRoute))
}

// routes are the wire's routes, named by an answer to any other.
const routes = "POST /openai/v1/chat/completions, POST /openai/v1/responses, GET /openai/v1/models and GET /openai/v1/models/{model}"

// unknownRoute answers a route the wire does not serve in OpenAI's shape.
func unknownRoute(w http.ResponseWriter, r *http.Request) {
	writeError(w, newError(fault.NotFound, "invalid_request_error", "unknown_url", "",
		"the box does not serve "+r.Method+" "+quote(r.URL.Path)+"; its OpenAI routes are "+routes))
}

type handler struct {
	cfg Config
	log *slog.Logger
}

// OwnedBy is the owned_by of every model the box lists.
const OwnedBy = "stackbone"

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (h *handler) models(w http.ResponseWriter, r *http.Request) {
	if _, rf := h.cfg.Guard(r, auth.ScopeAgentsRun, false); rf != nil {
		writeError(w, refusal(rf))
		return
	}
	data := []modelObject{}
	for _, a := range h.cfg.Runtime.Agents() {
		data = append(data, modelObject{ID: a.Name, Object: "model", OwnedBy: OwnedBy})
	}
	writeJSON(w, map[string]any{"object": "list", "data": data})
}

func (h *handler) model(w http.ResponseWriter, r *http.Request) {
	if _, rf := h.cfg.Guard(r, auth.ScopeAgentsRun, false); rf != nil {
		writeError(w, refusal(rf))
		return
	}
	name := r.PathValue("model")
	if !h.known(name) {
		writeError(w, unknownModel(name))
		return
	}
	writeJSON(w, modelObject{ID: name, Object: "model", OwnedBy: OwnedBy})
}

func (h *handler) known(name string) bool { return wire.Known(h.cfg.Runtime, name) }

func unknownModel(name string) *apiError {
	return newError(fault.NotFound, "invalid_request_error", "model_not_found", "model",
		"the model "+quote(name)+" does not exist: the model is the name of an agent (GET /openai/v1/models lists them)")
}

// quote is a client-sent name as JSON, clipped to 100 characters.
func quote(s string) string {
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "…"
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// chat is the Chat Completions protocol on the shared turn handler.
type chat struct{}

// exchange is one request and the answer's id and creation time.
type exchange struct {
	req     *chatRequest
	id      string
	created int64
}

func (chat) Decode(w http.ResponseWriter, r *http.Request) (wire.Call, error) {
	var req chatRequest
	if err := wire.DecodeJSON(w, r, maxBody, &req); err != nil {
		return wire.Call{}, err
	}
	if err := req.check(); err != nil {
		return wire.Call{}, err
	}
	msgs, err := req.messages()
	if err != nil {
		return wire.Call{}, err
	}
	tools, err := req.tools()
	if err != nil {
		return wire.Call{}, err
	}
	turn, err := wire.WithHeaders(r, agent.TurnRequest{
		Agent: req.Model, Messages: msgs, Tools: tools, Options: req.options(), Wire: "openai",
	}, req.User)
	if err != nil {
		return wire.Call{}, err
	}
	x := &exchange{req: &req, id: "chatcmpl-" + randomID(), created: time.Now().Unix()}
	return wire.Call{Turn: turn, Stream: req.Stream != nil && *req.Stream, Request: x}, nil
}

func (chat) Classify(err error) (wire.Error, bool) { return classify(err) }
func (chat) Refusal(rf *api.Refusal) wire.Error    { return refusal(rf) }
func (chat) UnknownModel(name string) wire.Error   { return unknownModel(name) }

func (chat) Reply(w http.ResponseWriter, c wire.Call, res agent.Result) {
	x := c.Request.(*exchange)
	writeJSON(w, completion(x.id, x.created, x.req.Model, res))
}

func (chat) NewStream(w http.ResponseWriter, c wire.Call) wire.Stream {
	x := c.Request.(*exchange)
	includeUsage := x.req.StreamOptions != nil && x.req.StreamOptions.IncludeUsage
	return &streamer{w: w, id: x.id, created: x.created, model: x.req.Model, includeUsage: includeUsage, calls: map[string]*callState{}}
}

// Completion shapes.

type completionMessage struct {
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	Refusal   *string         `json:"refusal"`
	ToolCalls []toolCallValue `json:"tool_calls,omitempty"`
}

type toolCallValue struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Function functionValue `json:"function"`
}

type functionValue struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// extension is the box's top-level extension field, "stackbone".
type extension struct {
	Held *heldCall `json:"held,omitempty"`
}

type heldCall struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
}

type completionChoice struct {
	Index        int               `json:"index"`
	Message      completionMessage `json:"message"`
	Logprobs     *struct{}         `json:"logprobs"`
	FinishReason string            `json:"finish_reason"`
}

type completionObject struct {
	ID        string             `json:"id"`
	Object    string             `json:"object"`
	Created   int64              `json:"created"`
	Model     string             `json:"model"`
	Choices   []completionChoice `json:"choices"`
	Usage     usage              `json:"usage"`
	Stackbone *extension         `json:"stackbone,omitempty"`
}

func completion(id string, created int64, model string, res agent.Result) completionObject {
	msg := completionMessage{Role: "assistant", Content: &res.Text}
	if res.Finish == agent.FinishToolCalls {
		for _, tc := range res.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, toolCallValue{ID: tc.ID, Type: "function",
				Function: functionValue{Name: tc.Name, Arguments: tc.Arguments}})
		}
		if res.Text == "" {
			msg.Content = nil
		}
	}
	return completionObject{
		ID: id, Object: "chat.completion", Created: created, Model: model,
		Choices:   []completionChoice{{Index: 0, Message: msg, FinishReason: finishReason(res.Finish)}},
		Usage:     usageOf(res.Usage),
		Stackbone: heldExtension(res),
	}
}

func finishReason(f agent.Finish) string {
	switch f {
	case agent.FinishLength:
		return "length"
	case agent.FinishToolCalls:
		return "tool_calls"
	}
	// FinishHeld has no Chat Completions equivalent: the extension says it.
	return "stop"
}

func heldExtension(res agent.Result) *extension {
	if res.Finish != agent.FinishHeld || res.Held == nil {
		return nil
	}
	return &extension{Held: &heldCall{ToolCallID: res.Held.ID, Name: res.Held.Name}}
}

func usageOf(u agent.Usage) usage {
	return usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}

func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
