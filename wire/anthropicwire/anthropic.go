package anthropicwire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/wire"
)

// Config wires the wire (see wire.Config).
type Config = wire.Config

// Register mounts the wire's route on mux (an *api.Server or an
// *http.ServeMux).
func Register(mux wire.Mux, cfg Config) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := protocol{log: cfg.Logger.With("component", "wire.anthropic")}
	mux.PersonHandle("POST /anthropic/v1/messages", wire.Handler(cfg, "anthropic", p, true))
	mux.Handle("/anthropic/v1/", http.HandlerFunc(unknownRoute))
}

// unknownRoute answers a route the wire does not serve in Anthropic's
// shape, naming the one it serves.
func unknownRoute(w http.ResponseWriter, r *http.Request) {
	path, _ := json.Marshal(r.URL.Path)
	newError(fault.NotFound, "the box does not serve "+r.Method+" "+string(path)+"; its Anthropic route is POST /anthropic/v1/messages").Write(w)
}

// protocol is the Messages protocol on the shared turn handler.
type protocol struct{ log *slog.Logger }

func unknownModel(name string) *apiError {
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100]) + "…"
	}
	b, _ := json.Marshal(name)
	return newError(fault.NotFound, "model: "+string(b)+" is not an agent of this box; the model is the name of an agent")
}

// exchange is one request and the answer's id.
type exchange struct {
	req *messagesRequest
	id  string
}

func (protocol) Decode(w http.ResponseWriter, r *http.Request) (wire.Call, error) {
	var req messagesRequest
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
		Agent: req.Model, Messages: msgs, Tools: tools, Options: req.options(), Wire: "anthropic",
	}, req.userID())
	if err != nil {
		return wire.Call{}, err
	}
	return wire.Call{Turn: turn, Stream: req.Stream != nil && *req.Stream, Request: &exchange{req: &req, id: "msg_" + randomID()}}, nil
}

func (protocol) Classify(err error) (wire.Error, bool) { return classify(err) }
func (protocol) Refusal(rf *api.Refusal) wire.Error    { return refusal(rf) }
func (protocol) UnknownModel(name string) wire.Error   { return unknownModel(name) }

func (p protocol) Reply(w http.ResponseWriter, c wire.Call, res agent.Result) {
	x := c.Request.(*exchange)
	writeJSON(w, p.message(x.id, x.req.Model, res))
}

func (protocol) NewStream(w http.ResponseWriter, c wire.Call) wire.Stream {
	x := c.Request.(*exchange)
	return &streamer{w: w, id: x.id, model: x.req.Model, open: -1, calls: map[string]*callState{}}
}

// Message shapes.

type messageObject struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []contentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        usage          `json:"usage"`
	Stackbone    *extension     `json:"stackbone,omitempty"`
}

type contentBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// extension is the box's extension field, "stackbone".
type extension struct {
	Held *heldCall `json:"held,omitempty"`
}

type heldCall struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
}

// message is a plain answer: one text block per model step that wrote
// text, as the provider sent them (and as the stream sends them), then the
// client tool calls.
func (p protocol) message(id, model string, res agent.Result) messageObject {
	content := []contentBlock{}
	for i := range res.Texts {
		content = append(content, contentBlock{Type: "text", Text: &res.Texts[i]})
	}
	if res.Finish == agent.FinishToolCalls {
		for _, tc := range res.ToolCalls {
			content = append(content, contentBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: p.input(tc)})
		}
	}
	reason := stopReason(res.Finish)
	return messageObject{
		ID: id, Type: "message", Role: "assistant", Model: model, Content: content,
		StopReason: &reason, Usage: usageOf(res.Usage), Stackbone: heldExtension(res),
	}
}

// input is a tool call's arguments as the tool_use input object. Arguments
// that are not a JSON object (a model's mistake) become {}, logged by call
// id.
func (p protocol) input(tc agent.ToolCall) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace([]byte(tc.Arguments))) == 0 {
		return json.RawMessage("{}")
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &obj); err != nil || obj == nil {
		p.log.Warn("tool call arguments are not a JSON object; sent as {}", "toolCall", tc.ID, "bytes", len(tc.Arguments))
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, []byte(tc.Arguments))
	return buf.Bytes()
}

func stopReason(f agent.Finish) string {
	switch f {
	case agent.FinishLength:
		return "max_tokens"
	case agent.FinishToolCalls:
		return "tool_use"
	}
	// FinishHeld has no Messages equivalent: the extension says it.
	return "end_turn"
}

func heldExtension(res agent.Result) *extension {
	if res.Finish != agent.FinishHeld || res.Held == nil {
		return nil
	}
	return &extension{Held: &heldCall{ToolCallID: res.Held.ID, Name: res.Held.Name}}
}

func usageOf(u agent.Usage) usage {
	return usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
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
