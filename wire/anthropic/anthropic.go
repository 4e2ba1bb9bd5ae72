package anthropicwire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/auth"
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
	h := &handler{cfg: cfg, log: cfg.Logger.With("component", "wire.anthropic")}
	mux.Handle("POST /anthropic/v1/messages", http.HandlerFunc(h.messages))
}

type handler struct {
	cfg Config
	log *slog.Logger
}

func (h *handler) known(name string) bool {
	for _, a := range h.cfg.Runtime.Agents() {
		if a.Name == name {
			return true
		}
	}
	return false
}

func unknownModel(name string) *apiError {
	if r := []rune(name); len(r) > 100 {
		name = string(r[:100]) + "…"
	}
	b, _ := json.Marshal(name)
	return newError(http.StatusNotFound, "model: "+string(b)+" is not an agent of this box; the model is the name of an agent")
}

// messages runs one turn.
func (h *handler) messages(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	r, rf := h.cfg.Guard(r, auth.ScopeAgentsRun, true)
	if rf != nil {
		writeError(w, refusal(rf))
		return
	}
	turn, req, err := h.turnRequest(w, r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !h.known(req.Model) {
		writeError(w, unknownModel(req.Model))
		return
	}
	id := "msg_" + randomID()
	var res agent.Result
	streamed := req.Stream != nil && *req.Stream
	if streamed {
		s := &streamer{w: w, id: id, model: req.Model, open: -1, calls: map[string]*callState{}}
		res, err = h.cfg.Runtime.Turn(r.Context(), turn, s.emit)
		switch {
		case err != nil && s.sse == nil:
			h.fail(w, r, err)
		case err != nil && s.err != nil:
			// Writing failed: the client went away, and nobody is left to tell.
			h.log.Debug("stream ended by the client", "agent", turn.Agent, "error", s.err)
		case err != nil:
			e, ok := classify(err)
			h.logFailure(r, err, e, ok)
			s.fail(e)
		default:
			s.finish(res)
		}
	} else {
		res, err = h.cfg.Runtime.Turn(r.Context(), turn, func(agent.Event) error { return nil })
		if err != nil {
			h.fail(w, r, err)
		} else {
			writeJSON(w, h.message(id, req.Model, res))
		}
	}
	if err == nil {
		h.log.LogAttrs(r.Context(), slog.LevelDebug, "turn", slog.String("agent", turn.Agent),
			slog.String("run", res.RunID.String()), slog.String("finish", string(res.Finish)), slog.Bool("stream", streamed),
			slog.Int("messages", len(turn.Messages)), slog.Int("inputTokens", res.Usage.InputTokens),
			slog.Int("outputTokens", res.Usage.OutputTokens), slog.Duration("duration", time.Since(start)))
	}
}

// turnRequest reads the body and the box's headers into a turn.
func (h *handler) turnRequest(w http.ResponseWriter, r *http.Request) (agent.TurnRequest, *messagesRequest, error) {
	req, err := decodeRequest(w, r)
	if err != nil {
		return agent.TurnRequest{}, nil, err
	}
	if err := req.check(); err != nil {
		return agent.TurnRequest{}, nil, err
	}
	msgs, err := req.messages()
	if err != nil {
		return agent.TurnRequest{}, nil, err
	}
	tools, err := req.tools()
	if err != nil {
		return agent.TurnRequest{}, nil, err
	}
	turn, err := wire.WithHeaders(r, agent.TurnRequest{
		Agent: req.Model, Messages: msgs, Tools: tools, Options: req.options(), Wire: "anthropic",
	}, req.userID())
	if err != nil {
		return agent.TurnRequest{}, nil, err
	}
	return turn, req, nil
}

// fail answers err before anything was written.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if gone(r, err) {
		return
	}
	e, ok := classify(err)
	h.logFailure(r, err, e, ok)
	writeError(w, e)
}

func (h *handler) logFailure(r *http.Request, err error, e *apiError, ok bool) {
	switch {
	case gone(r, err):
	case !ok:
		h.log.Error("turn failed", "error", err)
	case e.status >= 500:
		h.log.Warn("turn failed", "status", e.status, "type", e.Type)
	}
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

func (h *handler) message(id, model string, res agent.Result) messageObject {
	content := []contentBlock{}
	if res.Text != "" {
		content = append(content, contentBlock{Type: "text", Text: &res.Text})
	}
	if res.Finish == agent.FinishToolCalls {
		for _, tc := range res.ToolCalls {
			content = append(content, contentBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: h.input(tc)})
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
func (h *handler) input(tc agent.ToolCall) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(bytes.TrimSpace([]byte(tc.Arguments))) == 0 {
		return json.RawMessage("{}")
	}
	if err := json.Unmarshal([]byte(tc.Arguments), &obj); err != nil || obj == nil {
		h.log.Warn("tool call arguments are not a JSON object; sent as {}", "toolCall", tc.ID, "bytes", len(tc.Arguments))
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
