package openaiwire

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/wire"
)

type chunkObject struct {
	ID        string        `json:"id"`
	Object    string        `json:"object"`
	Created   int64         `json:"created"`
	Model     string        `json:"model"`
	Choices   []chunkChoice `json:"choices"`
	Usage     *usage        `json:"usage,omitempty"`
	Stackbone *extension    `json:"stackbone,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// callState is a client tool call being streamed.
type callState struct {
	index int
	sent  strings.Builder // the arguments streamed so far
}

// streamer turns a turn's events into chat.completion.chunk events. The
// stream (and its 200) starts with the first event, so an error before any
// output is still answered with its own status.
type streamer struct {
	w            http.ResponseWriter
	sse          *wire.SSE
	id           string
	created      int64
	model        string
	includeUsage bool
	calls        map[string]*callState
	err          error // the first write error; the client went away

	wroteText bool // a step's text went out
	separate  bool // the next text starts another step: separate it
}

// Started reports whether the stream began.
func (s *streamer) Started() bool { return s.sse != nil }

// Broken is the first write error.
func (s *streamer) Broken() error { return s.err }

// Emit writes a turn's event. The texts of the turn's model steps (around
// a tool the box runs itself) are one content, separated by
// agent.StepSeparator, as in a plain answer.
func (s *streamer) Emit(ev agent.Event) error {
	if ev.Server || ev.Kind == agent.EventUsage {
		return nil
	}
	switch ev.Kind {
	case agent.EventTextStart:
		s.separate = s.wroteText
	case agent.EventTextDelta:
		if ev.Text != "" {
			text := ev.Text
			if s.separate {
				text, s.separate = agent.StepSeparator+text, false
			}
			s.wroteText = true
			return s.send(delta{Content: &text})
		}
	case agent.EventToolCallStart:
		c := &callState{index: len(s.calls)}
		s.calls[ev.ToolCall.ID] = c
		return s.send(delta{ToolCalls: []toolCallDelta{{Index: c.index, ID: ev.ToolCall.ID, Type: "function",
			Function: functionDelta{Name: ev.ToolCall.Name}}}})
	case agent.EventToolCallArgs:
		c := s.calls[ev.ToolCall.ID]
		if c == nil || ev.Text == "" {
			return nil
		}
		c.sent.WriteString(ev.Text)
		return s.send(delta{ToolCalls: []toolCallDelta{{Index: c.index, Function: functionDelta{Arguments: ev.Text}}}})
	case agent.EventToolCallEnd:
		// The whole call is known now: send whatever of its arguments the
		// pieces did not carry.
		c := s.calls[ev.ToolCall.ID]
		if c == nil {
			if err := s.Emit(agent.Event{Kind: agent.EventToolCallStart, ToolCall: ev.ToolCall}); err != nil {
				return err
			}
			c = s.calls[ev.ToolCall.ID]
		}
		rest, ok := strings.CutPrefix(ev.ToolCall.Arguments, c.sent.String())
		if ok && rest != "" {
			c.sent.WriteString(rest)
			return s.send(delta{ToolCalls: []toolCallDelta{{Index: c.index, Function: functionDelta{Arguments: rest}}}})
		}
	}
	return nil
}

// start writes the headers and the role chunk.
func (s *streamer) start() error {
	if s.sse != nil {
		return s.err
	}
	s.sse = wire.NewSSE(s.w)
	empty := ""
	return s.write(chunkObject{Choices: []chunkChoice{{Delta: delta{Role: "assistant", Content: &empty}}}})
}

func (s *streamer) send(d delta) error {
	if err := s.start(); err != nil {
		return err
	}
	return s.write(chunkObject{Choices: []chunkChoice{{Delta: d}}})
}

func (s *streamer) write(c chunkObject) error {
	if s.err != nil {
		return s.err
	}
	c.ID, c.Object, c.Created, c.Model = s.id, "chat.completion.chunk", s.created, s.model
	b, err := json.Marshal(c)
	if err != nil {
		s.err = err
		return err
	}
	s.err = s.sse.Event("", b)
	return s.err
}

// Finish writes the finish chunk, the usage chunk when asked, and [DONE].
func (s *streamer) Finish(res agent.Result) {
	if err := s.start(); err != nil {
		return
	}
	// Client tool calls the events did not announce still reach the client.
	if res.Finish == agent.FinishToolCalls {
		for _, tc := range res.ToolCalls {
			if _, ok := s.calls[tc.ID]; !ok {
				_ = s.Emit(agent.Event{Kind: agent.EventToolCallEnd, ToolCall: tc})
			}
		}
	}
	reason := finishReason(res.Finish)
	_ = s.write(chunkObject{Choices: []chunkChoice{{Delta: delta{}, FinishReason: &reason}}, Stackbone: heldExtension(res)})
	if s.includeUsage {
		u := usageOf(res.Usage)
		_ = s.write(chunkObject{Choices: []chunkChoice{}, Usage: &u})
	}
	if s.err == nil {
		_ = s.sse.Event("", []byte("[DONE]"))
	}
}

// KeepAlive writes an SSE comment after the role chunk: the event-stream
// readers of OpenAI's SDKs skip comment lines.
func (s *streamer) KeepAlive() error {
	if err := s.start(); err != nil {
		return err
	}
	s.err = s.sse.Comment("keep-alive")
	return s.err
}

// Fail ends a stream that began with one error event.
func (s *streamer) Fail(e wire.Error) {
	if s.err != nil {
		return
	}
	b, _ := json.Marshal(errorBody{Error: e.(*apiError)})
	_ = s.sse.Event("", b)
}
