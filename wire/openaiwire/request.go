package openaiwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/wire"
)

// maxBody bounds a request body; a long stateless conversation fits.
const maxBody = 16 << 20

// chatRequest is a Chat Completions request. Every documented field is
// listed, so an unknown one is a 400 and a documented one is either used,
// ignored because it changes nothing, or refused unless at its default.
type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	Tools               []chatTool     `json:"tools"`
	User                *string        `json:"user"`
	Stream              *bool          `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options"`
	Temperature         *float32       `json:"temperature"`
	TopP                *float32       `json:"top_p"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	Stop                stopField      `json:"stop"`

	// Ignored: they change nothing the box does.
	N                    *int              `json:"n"`
	Seed                 *int64            `json:"seed"`
	ParallelToolCalls    *bool             `json:"parallel_tool_calls"`
	Metadata             map[string]string `json:"metadata"`
	Store                *bool             `json:"store"`
	ServiceTier          *string           `json:"service_tier"`
	PromptCacheKey       *string           `json:"prompt_cache_key"`
	PromptCacheRetention *string           `json:"prompt_cache_retention"`
	SafetyIdentifier     *string           `json:"safety_identifier"`
	Prediction           json.RawMessage   `json:"prediction"`

	// Refused unless at their default.
	Logprobs         *bool              `json:"logprobs"`
	TopLogprobs      *int               `json:"top_logprobs"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	ToolChoice       json.RawMessage    `json:"tool_choice"`
	ResponseFormat   json.RawMessage    `json:"response_format"`
	Modalities       []string           `json:"modalities"`
	Audio            json.RawMessage    `json:"audio"`
	Functions        json.RawMessage    `json:"functions"`
	FunctionCall     json.RawMessage    `json:"function_call"`
	ReasoningEffort  json.RawMessage    `json:"reasoning_effort"`
	Verbosity        json.RawMessage    `json:"verbosity"`
	WebSearchOptions json.RawMessage    `json:"web_search_options"`
}

type streamOptions struct {
	IncludeUsage       bool  `json:"include_usage"`
	IncludeObfuscation *bool `json:"include_obfuscation"`
}

type chatMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Name         *string         `json:"name"`
	ToolCalls    []chatToolCall  `json:"tool_calls"`
	ToolCallID   string          `json:"tool_call_id"`
	Refusal      *string         `json:"refusal"`
	Audio        json.RawMessage `json:"audio"`
	FunctionCall json.RawMessage `json:"function_call"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	Custom json.RawMessage `json:"custom"`
}

type chatTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
	Custom json.RawMessage `json:"custom"`
}

// stopField is a string or an array of strings.
type stopField []string

func (s *stopField) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*s = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = stopField{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return &fieldError{param: "stop", msg: "stop must be a string or an array of strings"}
	}
	*s = many
	return nil
}

// fieldError is a 400 about one request field.
type fieldError struct {
	param string
	msg   string
}

func (e *fieldError) Error() string { return e.msg }

func badField(param, format string, args ...any) error {
	return &fieldError{param: param, msg: fmt.Sprintf(format, args...)}
}

// toolNameRe is OpenAI's rule for function names.
var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// present reports whether a raw field was sent with a value other than null.
func present(raw json.RawMessage) bool { return wire.Present(raw) }

// check refuses what the box cannot honour.
func (req *chatRequest) check() error {
	if req.Model == "" {
		return badField("model", "model is required: the name of an agent (GET /openai/v1/models lists them)")
	}
	if len(req.Messages) == 0 {
		return badField("messages", "messages must hold at least one message")
	}
	if req.N != nil && *req.N != 1 {
		return badField("n", "n must be 1: the box answers one choice per request")
	}
	if req.Logprobs != nil && *req.Logprobs {
		return badField("logprobs", "logprobs is not supported")
	}
	if req.TopLogprobs != nil && *req.TopLogprobs != 0 {
		return badField("top_logprobs", "top_logprobs is not supported")
	}
	if req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0 {
		return badField("frequency_penalty", "frequency_penalty is not supported")
	}
	if req.PresencePenalty != nil && *req.PresencePenalty != 0 {
		return badField("presence_penalty", "presence_penalty is not supported")
	}
	if len(req.LogitBias) > 0 {
		return badField("logit_bias", "logit_bias is not supported")
	}
	if present(req.ToolChoice) {
		var s string
		if json.Unmarshal(req.ToolChoice, &s) != nil || s != "auto" {
			return badField("tool_choice", `tool_choice must be "auto": the agent decides which tools to call`)
		}
	}
	if present(req.ResponseFormat) {
		var f struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(req.ResponseFormat, &f) != nil || f.Type != "text" {
			return badField("response_format", `response_format must be {"type": "text"}: structured output is not supported`)
		}
	}
	for _, m := range req.Modalities {
		if m != "text" {
			return badField("modalities", `modalities must be ["text"]`)
		}
	}
	for name, raw := range map[string]json.RawMessage{
		"audio": req.Audio, "functions": req.Functions, "function_call": req.FunctionCall,
		"reasoning_effort": req.ReasoningEffort, "verbosity": req.Verbosity, "web_search_options": req.WebSearchOptions,
	} {
		if present(raw) {
			if name == "functions" || name == "function_call" {
				return badField(name, "%s is not supported; use tools", name)
			}
			return badField(name, "%s is not supported: the agent's configuration chooses its model and settings", name)
		}
	}
	if req.MaxTokens != nil && req.MaxCompletionTokens != nil && *req.MaxTokens != *req.MaxCompletionTokens {
		return badField("max_tokens", "send max_completion_tokens or max_tokens, not both")
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if p.v != nil && *p.v < 1 {
			return badField(p.name, "%s must be at least 1", p.name)
		}
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return badField("temperature", "temperature must be between 0 and 2")
	}
	if t := req.TopP; t != nil && (*t < 0 || *t > 1) {
		return badField("top_p", "top_p must be between 0 and 1")
	}
	if len(req.Stop) > 4 {
		return badField("stop", "stop holds at most 4 sequences")
	}
	return nil
}

// messages turns the request's messages into the runtime's shape.
func (req *chatRequest) messages() ([]agent.Message, error) {
	out := make([]agent.Message, 0, len(req.Messages))
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		text, err := contentText(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		if present(m.Audio) {
			return nil, badField(param+".audio", "audio messages are not supported")
		}
		if present(m.FunctionCall) {
			return nil, badField(param+".function_call", "function_call is not supported; use tool_calls")
		}
		msg := agent.Message{Content: text}
		switch m.Role {
		case "system", "developer":
			msg.Role = agent.RoleSystem
		case "user":
			msg.Role = agent.RoleUser
		case "assistant":
			msg.Role = agent.RoleAssistant
			for j, tc := range m.ToolCalls {
				p := fmt.Sprintf("%s.tool_calls[%d]", param, j)
				if (tc.Type != "" && tc.Type != "function") || present(tc.Custom) {
					return nil, badField(p+".type", "only function tool calls are supported")
				}
				if tc.ID == "" || tc.Function.Name == "" {
					return nil, badField(p, "a tool call needs an id and a function name")
				}
				msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		case "tool":
			msg.Role = agent.RoleTool
			if m.ToolCallID == "" {
				return nil, badField(param+".tool_call_id", "a tool message needs tool_call_id")
			}
			msg.ToolCallID = m.ToolCallID
		case "":
			return nil, badField(param+".role", "%s.role is required", param)
		default:
			return nil, badField(param+".role", "role %q is not supported (system, developer, user, assistant, tool)", m.Role)
		}
		if m.Role != "assistant" && len(m.ToolCalls) > 0 {
			return nil, badField(param+".tool_calls", "only assistant messages carry tool_calls")
		}
		if m.Role != "tool" && m.ToolCallID != "" {
			return nil, badField(param+".tool_call_id", "only tool messages carry tool_call_id")
		}
		out = append(out, msg)
	}
	return out, nil
}

// contentText reads a message's content: null, a string, or an array of
// text parts (joined with newlines).
func contentText(raw json.RawMessage, param string) (string, error) {
	return textParts(raw, param, "text")
}

// textParts reads null, a string, or an array of text parts of the given
// types, joined with newlines.
func textParts(raw json.RawMessage, param string, types ...string) (string, error) {
	if !present(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badField(param, "%s must be a string or an array of content parts", param)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		if !slices.Contains(types, p.Type) {
			return "", badField(fmt.Sprintf("%s[%d].type", param, j), "only %s content parts are supported (got %q)", strings.Join(types, " and "), p.Type)
		}
		if p.Text == nil {
			return "", badField(fmt.Sprintf("%s[%d].text", param, j), "a text part needs text")
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// tools turns the request's function tools into client tools.
func (req *chatRequest) tools() ([]agent.Tool, error) {
	out := make([]agent.Tool, 0, len(req.Tools))
	seen := map[string]bool{}
	for i, t := range req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" || t.Function == nil || present(t.Custom) {
			return nil, badField(param+".type", "only tools of type function are supported")
		}
		tool, err := functionTool(param+".function", t.Function.Name, t.Function.Description, t.Function.Parameters, seen)
		if err != nil {
			return nil, err
		}
		out = append(out, tool)
	}
	return out, nil
}

// functionTool checks one function tool (param names its fields) and
// returns it as a client tool; seen holds the names declared before it.
func functionTool(param, name, description string, parameters json.RawMessage, seen map[string]bool) (agent.Tool, error) {
	if !toolNameRe.MatchString(name) {
		return agent.Tool{}, badField(param+".name", "a function name is 1 to 64 letters, digits, _ or -")
	}
	if seen[name] {
		return agent.Tool{}, badField(param+".name", "the tool %q is declared twice", name)
	}
	seen[name] = true
	tool := agent.Tool{Name: name, Description: description}
	if present(parameters) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(parameters, &obj) != nil {
			return agent.Tool{}, badField(param+".parameters", "parameters must be a JSON Schema object")
		}
		tool.Parameters = parameters
	}
	return tool, nil
}

// options are the sampling options passed through.
func (req *chatRequest) options() agent.Options {
	o := agent.Options{Temperature: req.Temperature, TopP: req.TopP, MaxTokens: req.MaxCompletionTokens, Stop: req.Stop}
	if o.MaxTokens == nil {
		o.MaxTokens = req.MaxTokens
	}
	return o
}
