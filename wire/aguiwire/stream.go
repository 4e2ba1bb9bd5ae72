package aguiwire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/wire"
)

// AG-UI event types this wire sends.
const (
	evRunStarted         = "RUN_STARTED"
	evRunFinished        = "RUN_FINISHED"
	evRunError           = "RUN_ERROR"
	evTextMessageStart   = "TEXT_MESSAGE_START"
	evTextMessageContent = "TEXT_MESSAGE_CONTENT"
	evTextMessageEnd     = "TEXT_MESSAGE_END"
	evToolCallStart      = "TOOL_CALL_START"
	evToolCallArgs       = "TOOL_CALL_ARGS"
	evToolCallEnd        = "TOOL_CALL_END"
	evToolCallResult     = "TOOL_CALL_RESULT"
)

// The events, with the protocol's camelCase fields. Optional fields are
// omitted rather than sent as null.
type (
	runStarted struct {
		Type            string `json:"type"`
		ThreadID        string `json:"threadId"`
		RunID           string `json:"runId"`
		ProtocolVersion string `json:"protocolVersion"`
	}
	runFinished struct {
		Type     string       `json:"type"`
		ThreadID string       `json:"threadId"`
		RunID    string       `json:"runId"`
		Result   any          `json:"result,omitempty"`
		Outcome  *outcome     `json:"outcome,omitempty"`
		Usage    []tokenUsage `json:"usage,omitempty"`
	}
	runError struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code,omitempty"`
	}
	textStart struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Role      string `json:"role"`
	}
	textContent struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
		Delta     string `json:"delta"`
	}
	textEnd struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId"`
	}
	toolStart struct {
		Type            string `json:"type"`
		ToolCallID      string `json:"toolCallId"`
		ToolCallName    string `json:"toolCallName"`
		ParentMessageID string `json:"parentMessageId,omitempty"`
	}
	toolArgs struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		Delta      string `json:"delta"`
	}
	toolEnd struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
	}
	toolResult struct {
		Type       string `json:"type"`
		MessageID  string `json:"messageId"`
		ToolCallID string `json:"toolCallId"`
		Content    string `json:"content"`
		Role       string `json:"role"`
	}
	outcome struct {
		Type               string      `json:"type"`
		PendingToolCallIDs []string    `json:"pendingToolCallIds,omitempty"`
		Interrupts         []interrupt `json:"interrupts,omitempty"`
	}
	interrupt struct {
		ID         string `json:"id"`
		Reason     string `json:"reason"`
		Message    string `json:"message,omitempty"`
		ToolCallID string `json:"toolCallId,omitempty"`
	}
	tokenUsage struct {
		Provider     string `json:"provider,omitempty"`
		Model        string `json:"model,omitempty"`
		InputTokens  int    `json:"inputTokens"`
		OutputTokens int    `json:"outputTokens"`
		TotalTokens  int    `json:"totalTokens"`
	}
	// heldResult is RUN_FINISHED.result of a turn held for a decision.
	heldResult struct {
		Held heldCall `json:"held"`
	}
	heldCall struct {
		ToolCallID string `json:"toolCallId"`
		Name       string `json:"name"`
	}
)

// InterruptReason is the reason of the interrupt a held tool raises.
const InterruptReason = "tool_approval"

// stream turns one turn's events into AG-UI events. It starts the SSE
// response lazily, on the first event, so a turn the runtime refuses before
// emitting anything (session busy, decision pending) can still be an HTTP
// error. It keeps the stream well formed whatever the runtime sends: text
// deltas without a start open the message, tool calls are closed before
// their result and everything open is closed before RUN_FINISHED.
type stream struct {
	w        http.ResponseWriter
	sse      *wire.SSE
	threadID string
	runID    string

	started bool
	events  int
	// lastMessageID is the assistant message events without an id belong to.
	lastMessageID string
	openText      map[string]bool
	textOrder     []string
	calls         map[string]*call
	callOrder     []string
}

type call struct {
	name, parent string
	args         strings.Builder
	open         bool
	answered     bool
}

func newStream(w http.ResponseWriter, threadID, runID string) *stream {
	return &stream{w: w, threadID: threadID, runID: runID, openText: map[string]bool{}, calls: map[string]*call{}}
}

func (s *stream) send(v any) error {
	if err := s.begin(); err != nil {
		return err
	}
	return s.write(v)
}

// begin starts the response with RUN_STARTED, once.
func (s *stream) begin() error {
	if s.started {
		return nil
	}
	s.started = true
	s.sse = wire.NewSSE(s.w)
	return s.write(runStarted{Type: evRunStarted, ThreadID: s.threadID, RunID: s.runID, ProtocolVersion: ProtocolVersion})
}

// keepAlive writes an SSE comment (after RUN_STARTED), which AG-UI's
// clients skip as every event-stream reader does.
func (s *stream) keepAlive() error {
	if err := s.begin(); err != nil {
		return err
	}
	return s.sse.Comment("keep-alive")
}

func (s *stream) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("agui: encode event: %w", err)
	}
	s.events++
	return s.sse.Event("", b)
}

// emit is the runtime's agent.Emit. An error (the client went away) cancels
// the turn.
func (s *stream) emit(ev agent.Event) error {
	switch ev.Kind {
	case agent.EventTextStart:
		return s.startText(s.messageID(ev.MessageID))
	case agent.EventTextDelta:
		id := s.messageID(ev.MessageID)
		if err := s.startText(id); err != nil {
			return err
		}
		if ev.Text == "" {
			// Empty deltas carry nothing; several clients reject them.
			return nil
		}
		return s.send(textContent{Type: evTextMessageContent, MessageID: id, Delta: ev.Text})
	case agent.EventTextEnd:
		return s.endText(s.messageID(ev.MessageID))
	case agent.EventToolCallStart:
		return s.startCall(ev.ToolCall.ID, ev.ToolCall.Name, s.messageID(ev.MessageID))
	case agent.EventToolCallArgs:
		c, err := s.openCall(ev.ToolCall.ID, ev.ToolCall.Name, ev.MessageID)
		if err != nil || ev.Text == "" {
			return err
		}
		c.args.WriteString(ev.Text)
		return s.send(toolArgs{Type: evToolCallArgs, ToolCallID: ev.ToolCall.ID, Delta: ev.Text})
	case agent.EventToolCallEnd:
		return s.endCall(ev.ToolCall, ev.MessageID)
	case agent.EventToolResult:
		return s.result(ev)
	}
	return nil
}

// messageID is the event's message id, else the turn's current one, else a
// new one.
func (s *stream) messageID(id string) string {
	if id == "" {
		id = s.lastMessageID
	}
	if id == "" {
		id = uuid.NewString()
	}
	s.lastMessageID = id
	return id
}

func (s *stream) startText(id string) error {
	if s.openText[id] {
		return nil
	}
	s.openText[id] = true
	s.textOrder = append(s.textOrder, id)
	return s.send(textStart{Type: evTextMessageStart, MessageID: id, Role: "assistant"})
}

func (s *stream) endText(id string) error {
	if !s.openText[id] {
		return nil
	}
	delete(s.openText, id)
	return s.send(textEnd{Type: evTextMessageEnd, MessageID: id})
}

func (s *stream) startCall(id, name, parent string) error {
	if c, ok := s.calls[id]; ok && c.open {
		return nil
	}
	// The protocol lets a tool call open while text streams, but clients
	// of its 0.x line reject that; models send their text before their
	// calls, so closing the text first costs nothing.
	for _, t := range s.textOrder {
		if err := s.endText(t); err != nil {
			return err
		}
	}
	c, ok := s.calls[id]
	if !ok {
		c = &call{name: name, parent: parent}
		s.calls[id] = c
		s.callOrder = append(s.callOrder, id)
	}
	c.open = true
	return s.send(toolStart{Type: evToolCallStart, ToolCallID: id, ToolCallName: c.name, ParentMessageID: c.parent})
}

// openCall returns the call, opening it first when the runtime skipped its
// start.
func (s *stream) openCall(id, name, messageID string) (*call, error) {
	if c, ok := s.calls[id]; ok && c.open {
		return c, nil
	}
	if err := s.startCall(id, name, s.messageID(messageID)); err != nil {
		return nil, err
	}
	return s.calls[id], nil
}

// endCall closes a call, first sending whatever part of the whole
// arguments the deltas did not carry.
func (s *stream) endCall(tc agent.ToolCall, messageID string) error {
	c, ok := s.calls[tc.ID]
	if ok && !c.open {
		return nil
	}
	c, err := s.openCall(tc.ID, tc.Name, messageID)
	if err != nil {
		return err
	}
	if sent := c.args.String(); tc.Arguments != "" && len(tc.Arguments) > len(sent) && strings.HasPrefix(tc.Arguments, sent) {
		rest := tc.Arguments[len(sent):]
		c.args.WriteString(rest)
		if err := s.send(toolArgs{Type: evToolCallArgs, ToolCallID: tc.ID, Delta: rest}); err != nil {
			return err
		}
	}
	c.open = false
	return s.send(toolEnd{Type: evToolCallEnd, ToolCallID: tc.ID})
}

// result sends a server tool's result as the tool message it becomes. Its
// id is the runtime's id for that message when it gives one distinct from
// the assistant message's.
func (s *stream) result(ev agent.Event) error {
	if c, ok := s.calls[ev.ToolCall.ID]; !ok || c.open {
		if err := s.endCall(ev.ToolCall, ev.MessageID); err != nil {
			return err
		}
	}
	c := s.calls[ev.ToolCall.ID]
	c.answered = true
	id := ev.MessageID
	if id == "" || id == c.parent || s.isAssistantMessage(id) {
		id = uuid.NewString()
	}
	return s.send(toolResult{Type: evToolCallResult, MessageID: id, ToolCallID: ev.ToolCall.ID, Content: ev.Text, Role: "tool"})
}

func (s *stream) isAssistantMessage(id string) bool {
	for _, t := range s.textOrder {
		if t == id {
			return true
		}
	}
	return false
}

// closeAll closes open text messages and tool calls, in the order they
// were opened.
func (s *stream) closeAll() error {
	for _, id := range s.textOrder {
		if err := s.endText(id); err != nil {
			return err
		}
	}
	for _, id := range s.callOrder {
		c := s.calls[id]
		if c.open {
			if err := s.endCall(agent.ToolCall{ID: id, Name: c.name}, c.parent); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureCall streams a call the result names that the events did not.
func (s *stream) ensureCall(tc agent.ToolCall, parent string) error {
	if _, ok := s.calls[tc.ID]; ok {
		return nil
	}
	if parent == "" {
		parent = s.lastMessageID
	}
	if err := s.startCall(tc.ID, tc.Name, parent); err != nil {
		return err
	}
	return s.endCall(tc, parent)
}

// finish ends a turn that returned: RUN_FINISHED with its outcome.
func (s *stream) finish(res agent.Result) error {
	if err := s.closeAll(); err != nil {
		return err
	}
	ev := runFinished{Type: evRunFinished, ThreadID: s.threadID, RunID: s.runID, Outcome: &outcome{Type: "success"}}
	switch {
	case res.Finish == agent.FinishHeld && res.Held != nil:
		held := *res.Held
		if err := s.ensureCall(held, res.MessageID); err != nil {
			return err
		}
		name := held.Name
		if name == "" {
			name = s.calls[held.ID].name
		}
		ev.Result = heldResult{Held: heldCall{ToolCallID: held.ID, Name: name}}
		ev.Outcome = &outcome{Type: "interrupt", Interrupts: []interrupt{{
			ID: held.ID, Reason: InterruptReason, ToolCallID: held.ID,
			Message: "The tool " + name + " waits for a person's decision (approve or reject).",
		}}}
	case res.Finish == agent.FinishToolCalls:
		for _, tc := range res.ToolCalls {
			if err := s.ensureCall(tc, res.MessageID); err != nil {
				return err
			}
		}
		for _, id := range s.callOrder {
			if !s.calls[id].answered {
				ev.Outcome.PendingToolCallIDs = append(ev.Outcome.PendingToolCallIDs, id)
			}
		}
	}
	if u := res.Usage; u.InputTokens > 0 || u.OutputTokens > 0 {
		provider, model, ok := strings.Cut(res.Model, "/")
		if !ok {
			provider, model = "", res.Model
		}
		ev.Usage = []tokenUsage{{Provider: provider, Model: model, InputTokens: u.InputTokens,
			OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}}
	}
	return s.send(ev)
}

// fail ends a started run (or starts one to end it) with RUN_ERROR.
func (s *stream) fail(code, msg string) error {
	return s.send(runError{Type: evRunError, Message: msg, Code: code})
}
