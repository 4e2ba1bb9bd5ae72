package openaiwire

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/wire"
)

// responsesStream turns a turn's events into the Responses API's semantic
// events: each model step's text is a message item, each client tool call
// a function_call item, in the order the model produced them.
type responsesStream struct {
	w   http.ResponseWriter
	sse *wire.SSE
	x   *responsesExchange
	seq int
	err error

	output   []outputItem
	items    map[string]int // item id → index in output
	text     strings.Builder
	msgID    string // the item id of the last text
	textOpen bool
	args     map[string]*strings.Builder
}

func (s *responsesStream) Started() bool       { return s.sse != nil }
func (s *responsesStream) Broken() error       { return s.err }
func (s *responsesStream) index(id string) int { return s.items[id] }

func (s *responsesStream) event(v map[string]any) {
	if s.err != nil {
		return
	}
	v["sequence_number"] = s.seq
	s.seq++
	b, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.err = s.sse.Event(v["type"].(string), b)
}

func (s *responsesStream) start() error {
	if s.sse != nil {
		return s.err
	}
	s.sse = wire.NewSSE(s.w)
	o := s.x.object("in_progress")
	s.event(map[string]any{"type": "response.created", "response": o})
	s.event(map[string]any{"type": "response.in_progress", "response": o})
	return s.err
}

// KeepAlive writes an SSE comment after response.created and
// response.in_progress; it takes no sequence number, since it is no event.
func (s *responsesStream) KeepAlive() error {
	if err := s.start(); err != nil {
		return err
	}
	s.err = s.sse.Comment("keep-alive")
	return s.err
}

func (s *responsesStream) add(item outputItem) int {
	s.items[item.ID] = len(s.output)
	s.output = append(s.output, item)
	s.event(map[string]any{"type": "response.output_item.added", "output_index": len(s.output) - 1, "item": item})
	return len(s.output) - 1
}

func (s *responsesStream) done(i int, item outputItem) {
	s.output[i] = item
	s.event(map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
}

func (s *responsesStream) Emit(ev agent.Event) error {
	if ev.Server || ev.Kind == agent.EventUsage {
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	switch ev.Kind {
	case agent.EventTextStart:
		s.text.Reset()
		s.textOpen = true
		s.msgID = s.x.itemID("msg", strings.TrimPrefix(ev.MessageID, "msg_"))
		i := s.add(messageItem(s.msgID, "", "in_progress"))
		s.event(map[string]any{"type": "response.content_part.added", "item_id": s.msgID, "output_index": i, "content_index": 0, "part": textPart("")})
	case agent.EventTextDelta:
		if ev.Text == "" {
			return s.err
		}
		s.text.WriteString(ev.Text)
		s.event(map[string]any{"type": "response.output_text.delta", "item_id": s.msgID, "output_index": s.index(s.msgID),
			"content_index": 0, "delta": ev.Text, "logprobs": []any{}})
	case agent.EventTextEnd:
		s.closeText()
	case agent.EventToolCallStart:
		s.closeText()
		s.startCall(ev.ToolCall)
	case agent.EventToolCallArgs:
		if b := s.args[ev.ToolCall.ID]; b != nil && ev.Text != "" {
			b.WriteString(ev.Text)
			id := s.x.itemID("fc", ev.ToolCall.ID)
			s.event(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": s.index(id), "delta": ev.Text})
		}
	case agent.EventToolCallEnd:
		s.endCall(ev.ToolCall)
	}
	return s.err
}

// closeText completes the open message item: a model step's text ends
// before its tool calls begin, as the provider's items are ordered.
func (s *responsesStream) closeText() {
	if !s.textOpen {
		return
	}
	s.textOpen = false
	i, text := s.index(s.msgID), s.text.String()
	s.event(map[string]any{"type": "response.output_text.done", "item_id": s.msgID, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
	s.event(map[string]any{"type": "response.content_part.done", "item_id": s.msgID, "output_index": i, "content_index": 0, "part": textPart(text)})
	s.done(i, messageItem(s.msgID, text, "completed"))
}

func (s *responsesStream) startCall(tc agent.ToolCall) {
	if s.args == nil {
		s.args = map[string]*strings.Builder{}
	}
	s.args[tc.ID] = &strings.Builder{}
	s.add(s.x.functionItem(tc, "in_progress"))
}

// endCall sends whatever of the arguments the pieces did not carry and
// completes the item.
func (s *responsesStream) endCall(tc agent.ToolCall) {
	b := s.args[tc.ID]
	if b == nil {
		s.startCall(tc)
		b = s.args[tc.ID]
	}
	id := s.x.itemID("fc", tc.ID)
	i := s.index(id)
	if rest, ok := strings.CutPrefix(tc.Arguments, b.String()); ok && rest != "" {
		b.WriteString(rest)
		s.event(map[string]any{"type": "response.function_call_arguments.delta", "item_id": id, "output_index": i, "delta": rest})
	}
	s.event(map[string]any{"type": "response.function_call_arguments.done", "item_id": id, "output_index": i, "name": tc.Name, "arguments": tc.Arguments})
	s.done(i, s.x.functionItem(tc, "completed"))
}

// Finish writes response.completed (or response.incomplete) with the whole
// response.
func (s *responsesStream) Finish(res agent.Result) {
	if s.start() != nil {
		return
	}
	if res.Finish == agent.FinishToolCalls {
		for _, tc := range res.ToolCalls {
			if _, ok := s.items[s.x.itemID("fc", tc.ID)]; !ok {
				s.endCall(tc)
			}
		}
	}
	o := s.x.object("completed")
	o.Output = append(o.Output, s.output...)
	s.x.finish(&o, res)
	typ := "response.completed"
	if o.Status == "incomplete" {
		typ = "response.incomplete"
	}
	s.event(map[string]any{"type": typ, "response": o})
}

// Fail ends a stream that began with an error event and response.failed.
func (s *responsesStream) Fail(e wire.Error) {
	ae := e.(*apiError)
	code := ae.Type
	if ae.Code != nil {
		code = *ae.Code
	}
	s.event(map[string]any{"type": "error", "code": code, "message": ae.Message, "param": ae.Param})
	o := s.x.object("failed")
	o.Output = append(o.Output, s.output...)
	o.Error = &responseError{Code: code, Message: ae.Message}
	s.event(map[string]any{"type": "response.failed", "response": o})
}
