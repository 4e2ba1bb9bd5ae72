package openaiwire

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/wire"
)

// responsesRequest is a Responses API request (POST /v1/responses). Every
// documented field is listed, so an unknown one is a 400 and a documented
// one is used, ignored because it changes nothing, or refused unless at its
// default.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Tools              []responsesTool `json:"tools"`
	Stream             *bool           `json:"stream"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Store              *bool           `json:"store"`
	User               *string         `json:"user"`
	Temperature        *float32        `json:"temperature"`
	TopP               *float32        `json:"top_p"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`

	// Ignored: they change nothing the box does.
	Metadata             map[string]string `json:"metadata"`
	ParallelToolCalls    *bool             `json:"parallel_tool_calls"`
	SafetyIdentifier     *string           `json:"safety_identifier"`
	PromptCacheKey       *string           `json:"prompt_cache_key"`
	PromptCacheRetention *string           `json:"prompt_cache_retention"`
	ServiceTier          *string           `json:"service_tier"`
	Truncation           *string           `json:"truncation"`
	StreamOptions        json.RawMessage   `json:"stream_options"`
	Include              []string          `json:"include"`

	// onSession: the request's headers name a session.
	onSession bool

	// Refused unless at their default.
	ToolChoice   json.RawMessage `json:"tool_choice"`
	Text         json.RawMessage `json:"text"`
	Reasoning    json.RawMessage `json:"reasoning"`
	Background   *bool           `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	TopLogprobs  *int            `json:"top_logprobs"`
	MaxToolCalls *int            `json:"max_tool_calls"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	// Accepted and ignored.
	DeferLoading *bool `json:"defer_loading,omitempty"`
}

// inputItem is any input item; which fields count depends on Type and Role.
type inputItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Status    string          `json:"status"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	// Accepted and ignored.
	Phase json.RawMessage `json:"phase"`
}

// A response id names its conversation: "resp_" + the conversation's key
// (32 hex digits, the box's session key) + the run's id (32 hex digits).
// previous_response_id continues the conversation the id names. Output
// item ids name it too ("msg_" or "fc_", the key, "_", the message or call
// id), so an item_reference continues it as well.
var (
	responseIDRe = regexp.MustCompile(`^resp_([0-9a-f]{32})([0-9a-f]{32})$`)
	itemIDRe     = regexp.MustCompile(`^(?:msg|fc)_([0-9a-f]{32})_`)
)

func newResponseID(conversation string, run uuid.UUID) string {
	return "resp_" + conversation + hex.EncodeToString(run[:])
}

// responses is the Responses protocol on the shared turn handler.
type responses struct{}

// responsesExchange is one Responses request and its answer's identity.
type responsesExchange struct {
	req     *responsesRequest
	id      string
	key     string // the conversation's key; "" when not stored
	created int64
}

// itemID is an output item's id: prefix "msg" or "fc", and the message or
// call id, with the conversation's key when it is stored.
func (x *responsesExchange) itemID(prefix, id string) string {
	if x.key == "" {
		return prefix + "_" + id
	}
	return prefix + "_" + x.key + "_" + id
}

func (responses) Decode(w http.ResponseWriter, r *http.Request) (wire.Call, error) {
	var req responsesRequest
	if err := wire.DecodeJSON(w, r, maxBody, &req); err != nil {
		return wire.Call{}, err
	}
	if err := req.check(); err != nil {
		return wire.Call{}, err
	}
	req.onSession = r.Header.Get(wire.HeaderSession) != ""
	msgs, refKey, err := req.messages()
	if err != nil {
		return wire.Call{}, err
	}
	if req.onSession {
		refKey = ""
	}
	tools, err := req.tools()
	if err != nil {
		return wire.Call{}, err
	}
	turn := agent.TurnRequest{Agent: req.Model, Messages: msgs, Tools: tools, Wire: "openai", RunID: uuid.New(),
		Options: agent.Options{Temperature: req.Temperature, TopP: req.TopP, MaxTokens: req.MaxOutputTokens}}
	if req.Instructions != nil {
		turn.System = *req.Instructions
	}
	turn, err = wire.WithHeaders(r, turn, req.User)
	if err != nil {
		return wire.Call{}, err
	}
	x := &responsesExchange{req: &req, created: time.Now().Unix()}
	stored := req.Store == nil || *req.Store
	key := refKey
	if req.PreviousResponseID != nil {
		m := responseIDRe.FindStringSubmatch(*req.PreviousResponseID)
		if m == nil || !stored || (refKey != "" && m[1] != refKey) {
			return wire.Call{}, previousNotFound(*req.PreviousResponseID)
		}
		key = m[1]
		run, _ := hex.DecodeString(m[2])
		turn.AfterRun = uuid.UUID(run)
	}
	switch {
	case key != "" && (turn.SessionKey != "" || turn.ConversationKey != ""):
		return wire.Call{}, badField("previous_response_id", "continue with previous_response_id (or item references) or the %s/%s header, not both", wire.HeaderSession, wire.HeaderConversation)
	case key != "":
		turn.SessionKey, turn.SessionMustExist = "responses/"+key, true
		x.key, x.id = key, newResponseID(key, turn.RunID)
	case stored && turn.SessionKey == "" && turn.ConversationKey == "":
		key := strings.ReplaceAll(uuid.NewString(), "-", "")
		turn.SessionKey = "responses/" + key
		x.key, x.id = key, newResponseID(key, turn.RunID)
	default:
		// Not resumable: the id names no conversation of the box.
		x.id = "resp_" + randomID()
	}
	return wire.Call{Turn: turn, Stream: req.Stream != nil && *req.Stream, Request: x}, nil
}

// notFoundError marks a previous_response_id the box cannot continue.
type notFoundError struct{ id string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("previous response with id %s not found", quote(e.id))
}

func previousNotFound(id string) error { return &notFoundError{id: id} }

func (responses) Classify(err error) (wire.Error, bool) {
	var nf *notFoundError
	if errors.As(err, &nf) {
		return newError(fault.Invalid, "invalid_request_error", "previous_response_not_found", "previous_response_id", nf.Error()), true
	}
	if errors.Is(err, agent.ErrSessionNotFound) {
		return newError(fault.Invalid, "invalid_request_error", "previous_response_not_found", "previous_response_id",
			"previous response not found: it names no stored conversation of this agent and person"), true
	}
	return classify(err)
}

func (responses) Refusal(rf *api.Refusal) wire.Error  { return refusal(rf) }
func (responses) UnknownModel(name string) wire.Error { return unknownModel(name) }

func (responses) Reply(w http.ResponseWriter, c wire.Call, res agent.Result) {
	x := c.Request.(*responsesExchange)
	obj := x.object("completed")
	for _, text := range res.Texts {
		obj.Output = append(obj.Output, messageItem(x.itemID("msg", randomID()), text, "completed"))
	}
	if res.Finish == agent.FinishToolCalls {
		for _, tc := range res.ToolCalls {
			obj.Output = append(obj.Output, x.functionItem(tc, "completed"))
		}
	}
	x.finish(&obj, res)
	writeJSON(w, obj)
}

func (responses) NewStream(w http.ResponseWriter, c wire.Call) wire.Stream {
	return &responsesStream{w: w, x: c.Request.(*responsesExchange), items: map[string]int{}}
}

// check refuses what the box cannot honour.
func (req *responsesRequest) check() error {
	if req.Model == "" {
		return badField("model", "model is required: the name of an agent (GET /openai/v1/models lists them)")
	}
	if !present(req.Input) {
		return badField("input", "input is required: a string or a list of input items")
	}
	if present(req.ToolChoice) {
		var s string
		if json.Unmarshal(req.ToolChoice, &s) != nil || s != "auto" {
			return badField("tool_choice", `tool_choice must be "auto": the agent decides which tools to call`)
		}
	}
	if present(req.Text) {
		var t struct {
			Format *struct {
				Type string `json:"type"`
			} `json:"format"`
			Verbosity *string `json:"verbosity"`
		}
		if json.Unmarshal(req.Text, &t) != nil || (t.Format != nil && t.Format.Type != "text") || (t.Verbosity != nil && *t.Verbosity != "medium") {
			return badField("text", `text must be {"format": {"type": "text"}}: structured output and verbosity are not supported`)
		}
	}
	if req.Background != nil && *req.Background {
		return badField("background", "background responses are not supported")
	}
	if req.TopLogprobs != nil && *req.TopLogprobs != 0 {
		return badField("top_logprobs", "top_logprobs is not supported")
	}
	if req.MaxToolCalls != nil {
		return badField("max_tool_calls", "max_tool_calls is not supported: the agent's configuration bounds its steps")
	}
	for name, raw := range map[string]json.RawMessage{"reasoning": req.Reasoning, "conversation": req.Conversation, "prompt": req.Prompt} {
		if present(raw) {
			if name == "conversation" {
				return badField(name, "conversation is not supported: continue with previous_response_id (or the %s header)", wire.HeaderSession)
			}
			return badField(name, "%s is not supported: the agent's configuration chooses its model, instructions and settings", name)
		}
	}
	if p := req.MaxOutputTokens; p != nil && *p < 1 {
		return badField("max_output_tokens", "max_output_tokens must be at least 1")
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return badField("temperature", "temperature must be between 0 and 2")
	}
	if t := req.TopP; t != nil && (*t < 0 || *t > 1) {
		return badField("top_p", "top_p must be between 0 and 1")
	}
	return nil
}

// messages turns the input into the runtime's messages: a string is one
// user message; message items keep their role (developer is system);
// function_call items join the assistant message before them (as one
// assistant turn's calls), function_call_output items are tool results.
//
// item_reference items name output items of a stored conversation (the
// AI SDK sends them for earlier answers): everything up to the last one is
// what that conversation already holds, so only the items after it are
// new, and key is the conversation's key ("session" when the request's
// headers name the session instead).
func (req *responsesRequest) messages() (msgs []agent.Message, key string, err error) {
	var s string
	if err := json.Unmarshal(req.Input, &s); err == nil {
		return []agent.Message{{Role: agent.RoleUser, Content: s}}, "", nil
	}
	var items []inputItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return nil, "", badField("input", "input must be a string or a list of input items")
	}
	if len(items) == 0 {
		return nil, "", badField("input", "input must hold at least one item")
	}
	last := -1
	for i, it := range items {
		if it.Type == "item_reference" {
			last = i
		}
	}
	if last >= 0 {
		key = "session" // held by the session the headers name
		if !req.onSession {
			key = ""
			for i, it := range items[:last+1] {
				if it.Type != "item_reference" {
					continue
				}
				m := itemIDRe.FindStringSubmatch(it.ID)
				if m == nil || (key != "" && m[1] != key) {
					return nil, "", badField(fmt.Sprintf("input[%d].id", i), "item %s is not an output item of a stored conversation of the box", quote(it.ID))
				}
				key = m[1]
			}
		}
	}
	msgs, err = itemMessages(items[last+1:], last+1)
	return msgs, key, err
}

// itemMessages turns input items (the first at index first) into messages.
func itemMessages(items []inputItem, first int) ([]agent.Message, error) {
	var out []agent.Message
	// open is the assistant message function calls join, while no other
	// item came after it.
	open := -1
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", first+i)
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			text, err := itemText(it.Content, param+".content")
			if err != nil {
				return nil, err
			}
			msg := agent.Message{Content: text}
			switch it.Role {
			case "user":
				msg.Role = agent.RoleUser
			case "system", "developer":
				msg.Role = agent.RoleSystem
			case "assistant":
				msg.Role = agent.RoleAssistant
			default:
				return nil, badField(param+".role", "role %q is not supported (user, system, developer, assistant)", it.Role)
			}
			out = append(out, msg)
			open = -1
			if msg.Role == agent.RoleAssistant {
				open = len(out) - 1
			}
		case "function_call":
			if it.CallID == "" || it.Name == "" {
				return nil, badField(param, "a function_call item needs call_id and name")
			}
			call := agent.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if open < 0 {
				out = append(out, agent.Message{Role: agent.RoleAssistant})
				open = len(out) - 1
			}
			out[open].ToolCalls = append(out[open].ToolCalls, call)
		case "function_call_output":
			if it.CallID == "" {
				return nil, badField(param+".call_id", "a function_call_output item needs call_id")
			}
			text, err := itemText(it.Output, param+".output")
			if err != nil {
				return nil, err
			}
			out = append(out, agent.Message{Role: agent.RoleTool, ToolCallID: it.CallID, Content: text})
			open = -1
		default:
			return nil, badField(param+".type", "input items of type %q are not supported (message, function_call, function_call_output)", typ)
		}
	}
	return out, nil
}

// itemText reads a message's content or a call's output: a string, or a
// list of input_text and output_text parts, joined with newlines.
func itemText(raw json.RawMessage, param string) (string, error) {
	return textParts(raw, param, "input_text", "output_text")
}

// tools turns the request's function tools into client tools.
func (req *responsesRequest) tools() ([]agent.Tool, error) {
	out := make([]agent.Tool, 0, len(req.Tools))
	seen := map[string]bool{}
	for i, t := range req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return nil, badField(param+".type", "only tools of type function are supported (got %q)", t.Type)
		}
		tool, err := functionTool(param, t.Name, t.Description, t.Parameters, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	return out, nil
}

// Response shapes.

type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Model              string            `json:"model"`
	Output             []outputItem      `json:"output"`
	Usage              *responsesUsage   `json:"usage"`
	Error              *responseError    `json:"error"`
	IncompleteDetails  *incomplete       `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              bool              `json:"store"`
	Temperature        *float32          `json:"temperature"`
	TopP               *float32          `json:"top_p"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []responsesTool   `json:"tools"`
	Text               responseText      `json:"text"`
	Truncation         string            `json:"truncation"`
	Metadata           map[string]string `json:"metadata"`
	Stackbone          *extension        `json:"stackbone,omitempty"`
}

type responseText struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type responsesUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// outputItem is a message or a function_call item.
type outputItem struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	Status    string        `json:"status"`
	Role      string        `json:"role,omitempty"`
	Content   *[]outputText `json:"content,omitempty"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments *string       `json:"arguments,omitempty"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

func textPart(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

func messageItem(id, text, status string) outputItem {
	content := []outputText{}
	if status == "completed" {
		content = append(content, textPart(text))
	}
	return outputItem{ID: id, Type: "message", Status: status, Role: "assistant", Content: &content}
}

func (x *responsesExchange) functionItem(tc agent.ToolCall, status string) outputItem {
	args := tc.Arguments
	if status != "completed" {
		args = ""
	}
	return outputItem{ID: x.itemID("fc", tc.ID), Type: "function_call", Status: status, CallID: tc.ID, Name: tc.Name, Arguments: &args}
}

// object is the response as it stands, without output.
func (x *responsesExchange) object(status string) responseObject {
	r := x.req
	o := responseObject{ID: x.id, Object: "response", CreatedAt: x.created, Status: status, Model: r.Model, Output: []outputItem{},
		Instructions: r.Instructions, PreviousResponseID: r.PreviousResponseID, Store: r.Store == nil || *r.Store,
		Temperature: r.Temperature, TopP: r.TopP, MaxOutputTokens: r.MaxOutputTokens, ParallelToolCalls: true,
		ToolChoice: "auto", Tools: r.Tools, Truncation: "disabled", Metadata: r.Metadata}
	if o.Tools == nil {
		o.Tools = []responsesTool{}
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	o.Text.Format.Type = "text"
	return o
}

// finish completes a response from the turn's result.
func (x *responsesExchange) finish(o *responseObject, res agent.Result) {
	o.Status = "completed"
	if res.Finish == agent.FinishLength {
		o.Status, o.IncompleteDetails = "incomplete", &incomplete{Reason: "max_output_tokens"}
	}
	u := responsesUsage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens, TotalTokens: res.Usage.InputTokens + res.Usage.OutputTokens}
	o.Usage = &u
	o.Stackbone = heldExtension(res)
}
