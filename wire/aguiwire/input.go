package aguiwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/api"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/wire"
)

// runInput is AG-UI's RunAgentInput. Members the box does not use are
// decoded only as far as their type is checked; unknown members are ignored,
// as the protocol requires of a producer.
type runInput struct {
	ThreadID        string          `json:"threadId"`
	RunID           string          `json:"runId"`
	ParentRunID     string          `json:"parentRunId"`
	ProtocolVersion string          `json:"protocolVersion"`
	State           json.RawMessage `json:"state"`
	Messages        []inMessage     `json:"messages"`
	Tools           []inTool        `json:"tools"`
	Context         []inContext     `json:"context"`
	ForwardedProps  json.RawMessage `json:"forwardedProps"`
	Resume          json.RawMessage `json:"resume"`
}

type inMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []inToolCall    `json:"toolCalls"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
}

type inToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type inTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type inContext struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// inputError is a malformed RunAgentInput (400 invalid_request).
type inputError struct{ msg string }

func (e *inputError) Error() string { return "agui: " + e.msg }

func badInput(format string, args ...any) error {
	return &inputError{fmt.Sprintf(format, args...)}
}

// decodeInput reads one JSON object of at most maxBodyBytes.
func decodeInput(w http.ResponseWriter, r *http.Request) (*runInput, error) {
	raw, err := api.ReadBody(w, r, maxBodyBytes)
	var te *api.TextError
	if errors.As(err, &te) {
		return nil, badInput("%s", te)
	}
	if err != nil {
		return nil, badInput("%s", describeDecode(err))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var in runInput
	if err := dec.Decode(&in); err != nil {
		return nil, badInput("%s", describeDecode(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badInput("the body must be one JSON object (RunAgentInput)")
	}
	return &in, nil
}

func describeDecode(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty; send a RunAgentInput JSON object"
	case errors.As(err, &tooBig):
		return fmt.Sprintf("the body is larger than %d bytes", maxBodyBytes)
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "the body must be a RunAgentInput JSON object"
		}
		return fmt.Sprintf("%s has the wrong JSON type (%s)", typ.Field, typ.Value)
	}
	return "invalid JSON body"
}

// Message roles of AG-UI.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
	roleSystem    = "system"
	roleDeveloper = "developer"
	roleTool      = "tool"
	roleActivity  = "activity"
	roleReasoning = "reasoning"
)

// turnRequest checks the input and builds the runtime's request. Errors are
// *inputError or wrap identity.ErrInvalid / identity.ErrConflict.
func (in *runInput) turnRequest(agentName string, log *slog.Logger) (agent.TurnRequest, error) {
	req := agent.TurnRequest{Agent: agentName, SessionKey: in.ThreadID, Wire: "agui"}
	if k := in.ThreadID; utf8.RuneCountInString(k) > wire.MaxKeyChars || !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
		return req, badInput("threadId must be valid text of at most %d characters", wire.MaxKeyChars)
	}
	set, err := forwardedIdentities(in.ForwardedProps)
	if err != nil {
		return req, err
	}
	req.Identities = set

	if msg, ok := contextMessage(in.Context); ok {
		req.Messages = append(req.Messages, msg)
	}
	seen := make(map[string]bool, len(in.Messages))
	skipped := 0
	for i, m := range in.Messages {
		if m.ID == "" {
			return req, badInput("messages[%d].id is required", i)
		}
		if seen[m.ID] {
			return req, badInput("messages[%d].id %s appears twice", i, quote(m.ID))
		}
		seen[m.ID] = true
		switch m.Role {
		case roleUser, roleSystem, roleDeveloper, roleAssistant, roleTool:
		case roleActivity, roleReasoning:
			// UI material, not conversation: never sent back to the model.
			continue
		case "":
			return req, badInput("messages[%d].role is required", i)
		default:
			log.Warn("agui message with an unknown role skipped", "role", clip(m.Role, 40))
			continue
		}
		text, dropped, err := contentText(m.Content)
		if err != nil {
			return req, badInput("messages[%d].content %s", i, err.Error())
		}
		skipped += dropped
		out := agent.Message{ID: m.ID, Content: text}
		switch m.Role {
		case roleUser:
			out.Role = agent.RoleUser
		case roleSystem, roleDeveloper:
			out.Role = agent.RoleSystem
		case roleAssistant:
			out.Role = agent.RoleAssistant
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Function.Name == "" {
					return req, badInput("messages[%d].toolCalls[%d] needs an id and function.name", i, j)
				}
				if tc.Type != "" && tc.Type != "function" {
					return req, badInput("messages[%d].toolCalls[%d].type must be \"function\"", i, j)
				}
				out.ToolCalls = append(out.ToolCalls, agent.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		case roleTool:
			if m.ToolCallID == "" {
				return req, badInput("messages[%d].toolCallId is required on a tool message", i)
			}
			out.Role = agent.RoleTool
			out.ToolCallID = m.ToolCallID
			if m.Error != "" {
				// A failure is still an answer; the model must see it.
				if out.Content != "" {
					out.Content += "\n"
				}
				out.Content += "Error: " + m.Error
			}
		}
		req.Messages = append(req.Messages, out)
	}
	if skipped > 0 {
		log.Warn("agui content parts the box cannot use were skipped", "parts", skipped)
	}

	names := make(map[string]bool, len(in.Tools))
	for i, t := range in.Tools {
		if t.Name == "" {
			return req, badInput("tools[%d].name is required", i)
		}
		if names[t.Name] {
			return req, badInput("tools[%d].name %s appears twice", i, quote(t.Name))
		}
		names[t.Name] = true
		tool := agent.Tool{Name: t.Name, Description: t.Description}
		if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			tool.Parameters = p
		}
		req.Tools = append(req.Tools, tool)
	}
	return req, nil
}

// contentText reads a message's content: absent, null, a string, or a list
// of content parts whose text parts are concatenated in order; it reports
// how many other parts it skipped.
func contentText(raw json.RawMessage) (string, int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", 0, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", 0, errors.New("is not a valid string")
		}
		return s, 0, nil
	case '[':
		var parts []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", 0, errors.New("must be a string or a list of content parts")
		}
		var b strings.Builder
		dropped := 0
		for _, p := range parts {
			if p.Type == "text" && p.Text != nil {
				b.WriteString(*p.Text)
				continue
			}
			dropped++
		}
		return b.String(), dropped, nil
	}
	return "", 0, errors.New("must be a string or a list of content parts")
}

// contextMessage turns the input's context entries into one system message.
// Its id is derived from the entries, so a session stores an unchanged
// context once, however many runs resend it.
func contextMessage(entries []inContext) (agent.Message, bool) {
	if len(entries) == 0 {
		return agent.Message{}, false
	}
	var b strings.Builder
	b.WriteString("Context from the application:")
	for _, e := range entries {
		b.WriteString("\n- ")
		if e.Description != "" {
			b.WriteString(e.Description)
			b.WriteString(": ")
		}
		b.WriteString(e.Value)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return agent.Message{ID: "agui-context-" + hex.EncodeToString(sum[:12]), Role: agent.RoleSystem, Content: b.String()}, true
}

// forwardedIdentities reads forwardedProps.identities (a JSON object) and
// forwardedProps.customerId (a string). Field names are matched exactly:
// identity names are case sensitive.
func forwardedIdentities(raw json.RawMessage) (identity.Set, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		// Absent, null, or an application payload that is not an object:
		// it cannot carry identities.
		return identity.Parse(nil, nil)
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, badInput("forwardedProps is not a valid JSON object")
	}
	var scalar *string
	if c, ok := props[identity.CustomerID]; ok && !bytes.Equal(bytes.TrimSpace(c), []byte("null")) {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, fmt.Errorf("%w: forwardedProps.customerId must be a string", identity.ErrInvalid)
		}
		scalar = &s
	}
	set, err := identity.ParseJSONValue(props["identities"], scalar)
	if err != nil {
		return nil, fmt.Errorf("forwardedProps: %w", err)
	}
	return set, nil
}
