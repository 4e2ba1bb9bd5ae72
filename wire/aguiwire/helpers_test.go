package aguiwire_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/sirupsen/logrus"
)

// quietLogrus keeps the AG-UI SDK's own logging out of test output.
func quietLogrus() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// aguiEvent is one event of a stream, decoded twice: as a plain JSON object
// (to check its exact members) and by the AG-UI Go SDK.
type aguiEvent struct {
	Type   string
	Data   []byte
	Fields map[string]json.RawMessage
	SDK    events.Event
}

func (e aguiEvent) str(key string) string {
	var s string
	_ = json.Unmarshal(e.Fields[key], &s)
	return s
}

// aguiRun is a stream checked against the protocol's sequence rules, with
// what it carried gathered up.
type aguiRun struct {
	Events    []aguiEvent
	Texts     map[string]string // messageId -> the deltas, concatenated
	TextOrder []string
	Calls     map[string]*aguiCall
	CallOrder []string
	Results   map[string]aguiEvent // toolCallId -> TOOL_CALL_RESULT
	End       aguiEvent            // RUN_FINISHED or RUN_ERROR
}

type aguiCall struct{ Name, Parent, Args string }

func (r *aguiRun) types() []string {
	var out []string
	for _, e := range r.Events {
		out = append(out, e.Type)
	}
	return out
}

// text is all assistant text of the run, message after message.
func (r *aguiRun) text() string {
	var b strings.Builder
	for _, id := range r.TextOrder {
		b.WriteString(r.Texts[id])
	}
	return b.String()
}

// finished decodes RUN_FINISHED's members (nil when the run failed).
func (r *aguiRun) finished(t *testing.T) *finishedEvent {
	t.Helper()
	if r.End.Type != "RUN_FINISHED" {
		return nil
	}
	var f finishedEvent
	if err := json.Unmarshal(r.End.Data, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

type finishedEvent struct {
	ThreadID string `json:"threadId"`
	RunID    string `json:"runId"`
	Result   *struct {
		Held struct {
			ToolCallID string `json:"toolCallId"`
			Name       string `json:"name"`
		} `json:"held"`
	} `json:"result"`
	Outcome *struct {
		Type               string   `json:"type"`
		PendingToolCallIDs []string `json:"pendingToolCallIds"`
		Interrupts         []struct {
			ID         string `json:"id"`
			Reason     string `json:"reason"`
			Message    string `json:"message"`
			ToolCallID string `json:"toolCallId"`
		} `json:"interrupts"`
	} `json:"outcome"`
	Usage []struct {
		Provider     string `json:"provider"`
		Model        string `json:"model"`
		InputTokens  int    `json:"inputTokens"`
		OutputTokens int    `json:"outputTokens"`
		TotalTokens  int    `json:"totalTokens"`
	} `json:"usage"`
}

// members lists, per event type, the members the AG-UI schema allows (its
// objects are closed) and, first, how many of them are required.
var members = map[string]struct {
	required int
	names    []string
}{
	"RUN_STARTED":          {2, []string{"threadId", "runId", "protocolVersion"}},
	"RUN_FINISHED":         {2, []string{"threadId", "runId", "result", "outcome", "usage"}},
	"RUN_ERROR":            {1, []string{"message", "code"}},
	"TEXT_MESSAGE_START":   {1, []string{"messageId", "role"}},
	"TEXT_MESSAGE_CONTENT": {2, []string{"messageId", "delta"}},
	"TEXT_MESSAGE_END":     {1, []string{"messageId"}},
	"TOOL_CALL_START":      {2, []string{"toolCallId", "toolCallName", "parentMessageId"}},
	"TOOL_CALL_ARGS":       {2, []string{"toolCallId", "delta"}},
	"TOOL_CALL_END":        {1, []string{"toolCallId"}},
	"TOOL_CALL_RESULT":     {3, []string{"messageId", "toolCallId", "content", "role"}},
}

// parseSSE splits a text/event-stream body into its events' data.
func parseSSE(t *testing.T, body io.Reader) [][]byte {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out [][]byte
	var cur []byte
	have := false
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if have {
				out = append(out, cur)
			}
			cur, have = nil, false
		case bytes.HasPrefix(line, []byte(":")):
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if have {
				cur = append(cur, '\n')
			}
			cur, have = append(cur, d...), true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the event stream: %v", err)
	}
	if have {
		t.Fatalf("the stream ended inside an event: %s", cur)
	}
	return out
}

// checkRun decodes every event and checks the stream event by event: one
// run bracketed by RUN_STARTED and RUN_FINISHED or RUN_ERROR, ids that
// match across start, content and end, nothing left open, only the members
// the schema allows, and each event accepted by the AG-UI Go SDK's decoder
// and validation. runID "" accepts any non-empty run id.
func checkRun(t *testing.T, payloads [][]byte, threadID, runID string) *aguiRun {
	t.Helper()
	dec := events.NewEventDecoder(quietLogrus())
	r := &aguiRun{Texts: map[string]string{}, Calls: map[string]*aguiCall{}, Results: map[string]aguiEvent{}}
	openText := map[string]bool{}
	openCall := map[string]bool{}
	if len(payloads) == 0 {
		t.Fatal("the stream carried no event")
	}
	for i, p := range payloads {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(p, &fields); err != nil {
			t.Fatalf("event %d is not a JSON object: %s", i, p)
		}
		var typ string
		if err := json.Unmarshal(fields["type"], &typ); err != nil || typ == "" {
			t.Fatalf("event %d has no type: %s", i, p)
		}
		m, ok := members[typ]
		if !ok {
			t.Fatalf("event %d: unexpected type %s", i, typ)
		}
		for k := range fields {
			if k != "type" && !slices.Contains(m.names, k) {
				t.Errorf("event %d (%s) has a member the schema does not allow: %s", i, typ, k)
			}
		}
		for _, k := range m.names[:m.required] {
			if _, ok := fields[k]; !ok {
				t.Errorf("event %d (%s) lacks the required %s: %s", i, typ, k, p)
			}
		}
		for k, v := range fields {
			if bytes.Equal(v, []byte("null")) {
				t.Errorf("event %d (%s): %s is null; absent means absent", i, typ, k)
			}
		}
		sdk, err := dec.DecodeEvent(typ, p)
		if err != nil {
			t.Fatalf("event %d: the AG-UI SDK cannot decode it: %v: %s", i, err, p)
		}
		ev := aguiEvent{Type: typ, Data: p, Fields: fields, SDK: sdk}
		// The SDK insists on a thread id, which a stateless run has not.
		if !((typ == "RUN_STARTED" || typ == "RUN_FINISHED") && ev.str("threadId") == "") {
			if err := sdk.Validate(); err != nil {
				t.Errorf("event %d: the AG-UI SDK rejects it: %v: %s", i, err, p)
			}
		}
		r.Events = append(r.Events, ev)

		if i == 0 {
			if typ != "RUN_STARTED" {
				t.Fatalf("the stream opens with %s, not RUN_STARTED", typ)
			}
			if ev.str("threadId") != threadID || (runID != "" && ev.str("runId") != runID) || ev.str("runId") == "" {
				t.Errorf("RUN_STARTED ids: %s (want thread %q run %q)", p, threadID, runID)
			}
			if ev.str("protocolVersion") != "1.0" {
				t.Errorf("RUN_STARTED protocolVersion: %s", p)
			}
			continue
		}
		if r.End.Type != "" {
			t.Fatalf("event %d (%s) after the run closed with %s", i, typ, r.End.Type)
		}
		switch typ {
		case "RUN_STARTED":
			t.Fatalf("event %d: a second RUN_STARTED", i)
		case "TEXT_MESSAGE_START":
			id := ev.str("messageId")
			if openText[id] {
				t.Fatalf("event %d: text message %s started twice", i, id)
			}
			if ev.str("role") != "assistant" {
				t.Errorf("event %d: role %q", i, ev.str("role"))
			}
			openText[id] = true
			if _, seen := r.Texts[id]; !seen {
				r.TextOrder = append(r.TextOrder, id)
				r.Texts[id] = ""
			}
		case "TEXT_MESSAGE_CONTENT":
			id := ev.str("messageId")
			if !openText[id] {
				t.Fatalf("event %d: content for text message %s, which is not open", i, id)
			}
			r.Texts[id] += ev.str("delta")
		case "TEXT_MESSAGE_END":
			id := ev.str("messageId")
			if !openText[id] {
				t.Fatalf("event %d: end of text message %s, which is not open", i, id)
			}
			delete(openText, id)
		case "TOOL_CALL_START":
			id := ev.str("toolCallId")
			if openCall[id] || r.Calls[id] != nil {
				t.Fatalf("event %d: tool call %s started twice", i, id)
			}
			openCall[id] = true
			r.Calls[id] = &aguiCall{Name: ev.str("toolCallName"), Parent: ev.str("parentMessageId")}
			r.CallOrder = append(r.CallOrder, id)
		case "TOOL_CALL_ARGS":
			id := ev.str("toolCallId")
			if !openCall[id] {
				t.Fatalf("event %d: arguments for tool call %s, which is not open", i, id)
			}
			r.Calls[id].Args += ev.str("delta")
		case "TOOL_CALL_END":
			id := ev.str("toolCallId")
			if !openCall[id] {
				t.Fatalf("event %d: end of tool call %s, which is not open", i, id)
			}
			delete(openCall, id)
		case "TOOL_CALL_RESULT":
			id := ev.str("toolCallId")
			if r.Calls[id] == nil || openCall[id] {
				t.Fatalf("event %d: result for tool call %s, which is not a closed call", i, id)
			}
			if mid := ev.str("messageId"); mid == "" || r.Texts[mid] != "" || mid == r.Calls[id].Parent {
				t.Errorf("event %d: the result's message id %q is not a message of its own", i, mid)
			}
			if _, dup := r.Results[id]; dup {
				t.Errorf("event %d: tool call %s answered twice", i, id)
			}
			r.Results[id] = ev
		case "RUN_FINISHED":
			if len(openText) > 0 || len(openCall) > 0 {
				t.Errorf("RUN_FINISHED with messages %v and tool calls %v still open", openText, openCall)
			}
			if ev.str("threadId") != threadID || ev.str("runId") != r.Events[0].str("runId") {
				t.Errorf("RUN_FINISHED ids differ from RUN_STARTED: %s", p)
			}
			r.End = ev
		case "RUN_ERROR":
			if ev.str("message") == "" {
				t.Errorf("RUN_ERROR without a message: %s", p)
			}
			r.End = ev
		}
	}
	if r.End.Type == "" {
		t.Fatalf("the stream ended without RUN_FINISHED or RUN_ERROR: %v", r.types())
	}
	return r
}
