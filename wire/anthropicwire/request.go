package anthropicwire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/wire"
)

// maxBody bounds a request body; a long stateless conversation fits.
const maxBody = 16 << 20

// messagesRequest is a Messages request. Every documented field is listed,
// so an unknown one is a 400 and a documented one is either used, ignored
// because it changes nothing, or refused unless at its default.
type messagesRequest struct {
	Model     string          `json:"model"`
	Messages  []inputMessage  `json:"messages"`
	MaxTokens *int            `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Metadata  *struct {
		UserID *string `json:"user_id"`
	} `json:"metadata"`
	StopSequences []string    `json:"stop_sequences"`
	Stream        *bool       `json:"stream"`
	Temperature   *float32    `json:"temperature"`
	TopP          *float32    `json:"top_p"`
	Tools         []inputTool `json:"tools"`

	// Ignored: they change nothing the box does.
	ServiceTier  *string         `json:"service_tier"`
	InferenceGeo *string         `json:"inference_geo"`
	Speed        *string         `json:"speed"`
	CacheControl json.RawMessage `json:"cache_control"`
	Diagnostics  json.RawMessage `json:"diagnostics"`

	// Refused unless at their default.
	TopK              *int            `json:"top_k"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	Thinking          json.RawMessage `json:"thinking"`
	OutputConfig      json.RawMessage `json:"output_config"`
	Container         json.RawMessage `json:"container"`
	MCPServers        json.RawMessage `json:"mcp_servers"`
	ContextManagement json.RawMessage `json:"context_management"`
}

type inputMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is any content block; which fields count depends on Type.
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   *bool           `json:"is_error"`
}

type inputTool struct {
	Type         *string         `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
	Strict       *bool           `json:"strict"`
	// Fields of Anthropic's client-side tool options, accepted and ignored.
	DeferLoading   *bool           `json:"defer_loading"`
	InputExamples  json.RawMessage `json:"input_examples"`
	AllowedCallers json.RawMessage `json:"allowed_callers"`
	EagerInput     *bool           `json:"eager_input_streaming"`
}

// fieldError is a 400 about the request.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

func bad(format string, args ...any) error { return &fieldError{msg: fmt.Sprintf(format, args...)} }

// toolNameRe is Anthropic's rule for tool names.
var toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// present reports whether a raw field was sent with a value other than null.
func present(raw json.RawMessage) bool { return wire.Present(raw) }

// check refuses what the box cannot honour.
func (req *messagesRequest) check() error {
	if req.Model == "" {
		return bad("model: Field required")
	}
	if req.MaxTokens == nil {
		return bad("max_tokens: Field required")
	}
	if *req.MaxTokens < 1 {
		return bad("max_tokens: must be at least 1")
	}
	if len(req.Messages) == 0 {
		return bad("messages: at least one message is required")
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		return bad("temperature: must be between 0 and 1")
	}
	if t := req.TopP; t != nil && (*t < 0 || *t > 1) {
		return bad("top_p: must be between 0 and 1")
	}
	if req.TopK != nil {
		return bad("top_k: not supported")
	}
	if present(req.ToolChoice) {
		var c struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(req.ToolChoice, &c) != nil || c.Type != "auto" {
			return bad(`tool_choice: only {"type": "auto"} is supported; the agent decides which tools to call`)
		}
	}
	if present(req.Thinking) {
		var c struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(req.Thinking, &c) != nil || c.Type != "disabled" {
			return bad("thinking: not supported; the agent's configuration chooses its model and settings")
		}
	}
	for name, raw := range map[string]json.RawMessage{
		"output_config": req.OutputConfig, "container": req.Container,
		"mcp_servers": req.MCPServers, "context_management": req.ContextManagement,
	} {
		if present(raw) {
			return bad("%s: not supported", name)
		}
	}
	return nil
}

// userID is metadata.user_id, nil when absent.
func (req *messagesRequest) userID() *string {
	if req.Metadata == nil {
		return nil
	}
	return req.Metadata.UserID
}

// messages turns the system prompt and the messages into the runtime's
// shape.
func (req *messagesRequest) messages() ([]agent.Message, error) {
	var out []agent.Message
	if present(req.System) {
		sys, err := textOf(req.System, "system")
		if err != nil {
			return nil, err
		}
		out = append(out, agent.Message{Role: agent.RoleSystem, Content: sys})
	}
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages.%d", i)
		blocks, err := blocksOf(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		switch m.Role {
		case "user":
			msgs, err := userMessages(blocks, param)
			if err != nil {
				return nil, err
			}
			out = append(out, msgs...)
		case "assistant":
			msg, err := assistantMessage(blocks, param)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
		default:
			return nil, bad("%s.role: must be user or assistant", param)
		}
	}
	return out, nil
}

// blocksOf reads content that is a string or an array of blocks; a string
// is one text block.
func blocksOf(raw json.RawMessage, param string) ([]block, error) {
	if !present(raw) {
		return nil, bad("%s: Field required", param)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []block{{Type: "text", Text: &s}}, nil
	}
	var blocks []block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, bad("%s: must be a string or an array of content blocks", param)
	}
	return blocks, nil
}

// textOf reads a string or an array of text blocks, joined with newlines.
func textOf(raw json.RawMessage, param string) (string, error) {
	blocks, err := blocksOf(raw, param)
	if err != nil {
		return "", err
	}
	texts := make([]string, 0, len(blocks))
	for j, b := range blocks {
		if b.Type != "text" {
			return "", bad("%s.%d.type: only text blocks are supported here (got %q)", param, j, b.Type)
		}
		if b.Text == nil {
			return "", bad("%s.%d.text: Field required", param, j)
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// userMessages: each tool_result becomes a tool message (they answer the
// previous assistant message, so they come first), the text one user
// message.
func userMessages(blocks []block, param string) ([]agent.Message, error) {
	var out []agent.Message
	var texts []string
	for j, b := range blocks {
		p := fmt.Sprintf("%s.content.%d", param, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, bad("%s.text: Field required", p)
			}
			texts = append(texts, *b.Text)
		case "tool_result":
			if b.ToolUseID == "" {
				return nil, bad("%s.tool_use_id: Field required", p)
			}
			content := ""
			if present(b.Content) {
				var err error
				if content, err = textOf(b.Content, p+".content"); err != nil {
					return nil, err
				}
			}
			if b.IsError != nil && *b.IsError {
				content = "Error: " + content
			}
			out = append(out, agent.Message{Role: agent.RoleTool, ToolCallID: b.ToolUseID, Content: content})
		default:
			return nil, bad("%s.type: %q blocks are not supported in user messages (text, tool_result)", p, b.Type)
		}
	}
	if len(texts) > 0 {
		out = append(out, agent.Message{Role: agent.RoleUser, Content: strings.Join(texts, "\n")})
	}
	return out, nil
}

// assistantMessage: text blocks are the content, tool_use blocks its tool
// calls with the input as the arguments JSON.
func assistantMessage(blocks []block, param string) (agent.Message, error) {
	msg := agent.Message{Role: agent.RoleAssistant}
	var texts []string
	for j, b := range blocks {
		p := fmt.Sprintf("%s.content.%d", param, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return msg, bad("%s.text: Field required", p)
			}
			texts = append(texts, *b.Text)
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return msg, bad("%s: a tool_use block needs id and name", p)
			}
			args := "{}"
			if present(b.Input) {
				var obj map[string]json.RawMessage
				if json.Unmarshal(b.Input, &obj) != nil {
					return msg, bad("%s.input: must be an object", p)
				}
				var buf bytes.Buffer
				if err := json.Compact(&buf, b.Input); err != nil {
					return msg, bad("%s.input: must be an object", p)
				}
				args = buf.String()
			}
			msg.ToolCalls = append(msg.ToolCalls, agent.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		default:
			return msg, bad("%s.type: %q blocks are not supported in assistant messages (text, tool_use)", p, b.Type)
		}
	}
	msg.Content = strings.Join(texts, "\n")
	return msg, nil
}

// tools turns the request's custom tools into client tools.
func (req *messagesRequest) tools() ([]agent.Tool, error) {
	out := make([]agent.Tool, 0, len(req.Tools))
	seen := map[string]bool{}
	for i, t := range req.Tools {
		p := fmt.Sprintf("tools.%d", i)
		if t.Type != nil && *t.Type != "custom" {
			return nil, bad("%s.type: only custom tools are supported (got %q)", p, *t.Type)
		}
		if !toolNameRe.MatchString(t.Name) {
			return nil, bad("%s.name: 1 to 128 letters, digits, _ or -", p)
		}
		if seen[t.Name] {
			return nil, bad("%s.name: the tool %q is declared twice", p, t.Name)
		}
		seen[t.Name] = true
		var obj map[string]json.RawMessage
		if !present(t.InputSchema) || json.Unmarshal(t.InputSchema, &obj) != nil {
			return nil, bad("%s.input_schema: Field required (a JSON Schema object)", p)
		}
		out = append(out, agent.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return out, nil
}

func (req *messagesRequest) options() agent.Options {
	return agent.Options{Temperature: req.Temperature, TopP: req.TopP, MaxTokens: req.MaxTokens, Stop: req.StopSequences}
}
