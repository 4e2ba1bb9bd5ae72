package anthropicwire

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/wire"
)

// callState is a client tool call's content block.
type callState struct {
	index  int
	sent   strings.Builder // the input JSON streamed so far
	closed bool
}

// streamer turns a turn's events into Anthropic's event stream. The stream
// (and its 200) starts with the first event, so an error before any output
// is still answered with its own status. One content block is open at a
// time: a text block, or a client tool call's tool_use block.
type streamer struct {
	w     http.ResponseWriter
	sse   *wire.SSE
	id    string
	model string

	next     int // index of the next content block
	open     int // index of the open block, -1 when none
	openCall string
	calls    map[string]*callState
	err      error // the first write error; the client went away

	first *agent.Usage // the first model step's usage, once the provider reported it
}

// Started reports whether the stream began.
func (s *streamer) Started() bool { return s.sse != nil }

// Broken is the first write error.
func (s *streamer) Broken() error { return s.err }

// Emit writes a turn's event. Each model step's text is its own text
// block, as the provider sent it.
func (s *streamer) Emit(ev agent.Event) error {
	if ev.Server {
		return nil
	}
	if ev.Kind == agent.EventUsage {
		// message_start reports the first step's input tokens when they are
		// known before the stream begins (see the package doc).
		if s.first == nil {
			u := ev.Usage
			s.first = &u
		}
		return nil
	}
	if err := s.start(); err != nil {
		return err
	}
	switch ev.Kind {
	case agent.EventTextDelta:
		if ev.Text == "" {
			return nil
		}
		if s.open < 0 || s.openCall != "" {
			s.closeOpen()
			empty := ""
			s.openBlock("", contentBlock{Type: "text", Text: &empty})
		}
		s.event("content_block_delta", blockDelta{Type: "content_block_delta", Index: s.open,
			Delta: deltaValue{Type: "text_delta", Text: &ev.Text}})
	case agent.EventTextEnd:
		if s.open >= 0 && s.openCall == "" {
			s.closeOpen()
		}
	case agent.EventToolCallStart:
		s.startCall(ev.ToolCall)
	case agent.EventToolCallArgs:
		c := s.calls[ev.ToolCall.ID]
		if c == nil || c.closed || ev.Text == "" {
			return s.err
		}
		c.sent.WriteString(ev.Text)
		s.inputDelta(c.index, ev.Text)
	case agent.EventToolCallEnd:
		s.endCall(ev.ToolCall)
	}
	return s.err
}

func (s *streamer) startCall(tc agent.ToolCall) *callState {
	s.closeOpen()
	c := &callState{index: s.next}
	s.calls[tc.ID] = c
	s.openBlock(tc.ID, contentBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: json.RawMessage("{}")})
	return c
}

// endCall sends whatever of the call's input the pieces did not carry and
// closes its block.
func (s *streamer) endCall(tc agent.ToolCall) {
	c := s.calls[tc.ID]
	if c == nil {
		c = s.startCall(tc)
	}
	if c.closed {
		return
	}
	if rest, ok := strings.CutPrefix(tc.Arguments, c.sent.String()); ok && rest != "" {
		c.sent.WriteString(rest)
		s.inputDelta(c.index, rest)
	}
	if s.open == c.index {
		s.closeOpen()
	}
	c.closed = true
}

func (s *streamer) inputDelta(index int, partial string) {
	s.event("content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
		Delta: deltaValue{Type: "input_json_delta", PartialJSON: &partial}})
}

func (s *streamer) openBlock(callID string, block contentBlock) {
	s.open, s.openCall = s.next, callID
	s.next++
	s.event("content_block_start", blockStart{Type: "content_block_start", Index: s.open, ContentBlock: block})
}

func (s *streamer) closeOpen() {
	if s.open < 0 {
		return
	}
	s.event("content_block_stop", blockStop{Type: "content_block_stop", Index: s.open})
	if c := s.calls[s.openCall]; c != nil {
		c.closed = true
	}
	s.open, s.openCall = -1, ""
}

// start writes the headers and message_start.
func (s *streamer) start() error {
	if s.sse != nil {
		return s.err
	}
	s.sse = wire.NewSSE(s.w)
	m := messageObject{ID: s.id, Type: "message", Role: "assistant", Model: s.model, Content: []contentBlock{}}
	if s.first != nil {
		m.Usage = usageOf(*s.first)
	}
	s.event("message_start", messageStart{Type: "message_start", Message: m})
	return s.err
}

func (s *streamer) event(name string, v any) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	s.err = s.sse.Event(name, b)
}

// Event shapes, "type" first as Anthropic sends them.

type messageStart struct {
	Type    string        `json:"type"`
	Message messageObject `json:"message"`
}

type blockStart struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	ContentBlock contentBlock `json:"content_block"`
}

type blockDelta struct {
	Type  string     `json:"type"`
	Index int        `json:"index"`
	Delta deltaValue `json:"delta"`
}

type deltaValue struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageStop struct {
	Type string `json:"type"`
}

type messageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage     usage      `json:"usage"`
	Stackbone *extension `json:"stackbone,omitempty"`
}

// Finish closes the open block and writes message_delta and message_stop.
func (s *streamer) Finish(res agent.Result) {
	if s.start() != nil {
		return
	}
	// Client tool calls the events did not announce still reach the client.
	if res.Finish == agent.FinishToolCalls {
		for _, tc := range res.ToolCalls {
			if _, ok := s.calls[tc.ID]; !ok {
				s.endCall(tc)
			}
		}
	}
	s.closeOpen()
	d := messageDelta{Type: "message_delta", Usage: usageOf(res.Usage), Stackbone: heldExtension(res)}
	d.Delta.StopReason = stopReason(res.Finish)
	s.event("message_delta", d)
	s.event("message_stop", messageStop{Type: "message_stop"})
}

// KeepAlive writes a ping event, as Anthropic's API does while a message
// is slow; its SDKs read and skip it.
func (s *streamer) KeepAlive() error {
	if err := s.start(); err != nil {
		return err
	}
	s.event("ping", ping{Type: "ping"})
	return s.err
}

type ping struct {
	Type string `json:"type"`
}

// Fail ends a stream that began with one error event.
func (s *streamer) Fail(e wire.Error) {
	s.event("error", errorBody{Type: "error", Error: e.(*apiError)})
}
