package aguiwire_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/store/storetest"
	aguiwire "github.com/stackbone/box/wire/agui"
)

// These tests drive the wire with a stand-in for Turn, so every sequence
// the runtime may emit, and every way it may fail, is mapped and checked
// event by event. The tests in box_test.go run the real runtime.

type fakeTurn struct {
	mu   sync.Mutex
	reqs []agent.TurnRequest
	fn   func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error)
}

func (f *fakeTurn) turn(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.fn(ctx, req, emit)
}

func (f *fakeTurn) last(t *testing.T) agent.TurnRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("the turn was not called")
	}
	return f.reqs[len(f.reqs)-1]
}

func (f *fakeTurn) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func serveFake(t *testing.T, fn func(context.Context, agent.TurnRequest, agent.Emit) (agent.Result, error)) (*httptest.Server, *fakeTurn) {
	t.Helper()
	f := &fakeTurn{fn: fn}
	srv := httptest.NewServer(aguiwire.NewTestHandler(storetest.Logger(t), f.turn, "support"))
	t.Cleanup(srv.Close)
	return srv, f
}

// post sends body and returns the response, its body read.
func post(t *testing.T, url, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// stream posts body and checks the event stream it answers.
func stream(t *testing.T, url, body, threadID, runID string) *aguiRun {
	t.Helper()
	resp, raw := post(t, url, aguiwire.TestKey, body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	return checkRun(t, parseSSE(t, strings.NewReader(string(raw))), threadID, runID)
}

// expectError posts body and checks the HTTP error and its JSON body.
func expectError(t *testing.T, url, key, body string, status int, code string) string {
	t.Helper()
	resp, raw := post(t, url, key, body)
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error == nil {
		t.Fatalf("%s: status %d, body is not a JSON error: %s", body, resp.StatusCode, raw)
	}
	if resp.StatusCode != status || e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("%s: got %d %q %q, want %d %q", body, resp.StatusCode, e.Error.Code, e.Error.Message, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	return e.Error.Message
}

func text(id, s string) agent.Event {
	return agent.Event{Kind: agent.EventTextDelta, MessageID: id, Text: s}
}

func emitAll(emit agent.Emit, evs ...agent.Event) error {
	for _, ev := range evs {
		if err := emit(ev); err != nil {
			return err
		}
	}
	return nil
}

const userHello = `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Hello"}]}`

func TestTextMessageEventByEvent(t *testing.T) {
	t.Parallel()
	srv, _ := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		err := emitAll(emit,
			agent.Event{Kind: agent.EventTextStart, MessageID: "m1"},
			text("m1", "Hello, "), text("m1", ""), text("m1", "how can I help?"),
			agent.Event{Kind: agent.EventTextEnd, MessageID: "m1"})
		return agent.Result{MessageID: "m1", Text: "Hello, how can I help?", Finish: agent.FinishStop,
			Usage: agent.Usage{InputTokens: 12, OutputTokens: 7}, Model: "openai/gpt-4o-mini"}, err
	})
	r := stream(t, srv.URL+"/agui/support", userHello, "t1", "r1")
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v (the empty delta is not sent)", got, want)
	}
	if r.TextOrder[0] != "m1" || r.text() != "Hello, how can I help?" {
		t.Fatalf("text %q in %v", r.text(), r.TextOrder)
	}
	f := r.finished(t)
	if f.Outcome == nil || f.Outcome.Type != "success" || len(f.Outcome.PendingToolCallIDs) != 0 || f.Result != nil {
		t.Fatalf("RUN_FINISHED: %s", r.End.Data)
	}
	if len(f.Usage) != 1 || f.Usage[0].Provider != "openai" || f.Usage[0].Model != "gpt-4o-mini" ||
		f.Usage[0].InputTokens != 12 || f.Usage[0].OutputTokens != 7 || f.Usage[0].TotalTokens != 19 {
		t.Fatalf("usage: %s", r.End.Data)
	}
}

func TestRunIDIsGeneratedWhenMissing(t *testing.T) {
	t.Parallel()
	srv, f := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		return agent.Result{Finish: agent.FinishStop}, emitAll(emit, text("m1", "Hi"))
	})
	r := stream(t, srv.URL+"/agui/support", `{"threadId":"","messages":[{"id":"u1","role":"user","content":"Hi"}]}`, "", "")
	if got := r.types(); !reflect.DeepEqual(got, []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}) {
		t.Fatalf("events %v", got)
	}
	if req := f.last(t); req.SessionKey != "" {
		t.Fatalf("an empty threadId must be stateless, got session %q", req.SessionKey)
	}
}

func TestClientToolCallEndsTheRun(t *testing.T) {
	t.Parallel()
	srv, f := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		call := agent.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Madrid"}`}
		err := emitAll(emit,
			text("m1", "Let me check."),
			agent.Event{Kind: agent.EventTextEnd, MessageID: "m1"},
			agent.Event{Kind: agent.EventToolCallStart, MessageID: "m1", ToolCall: agent.ToolCall{ID: "call_1", Name: "get_weather"}},
			agent.Event{Kind: agent.EventToolCallArgs, MessageID: "m1", ToolCall: agent.ToolCall{ID: "call_1"}, Text: `{"city":`},
			agent.Event{Kind: agent.EventToolCallArgs, MessageID: "m1", ToolCall: agent.ToolCall{ID: "call_1"}, Text: `"Madrid"}`},
			agent.Event{Kind: agent.EventToolCallEnd, MessageID: "m1", ToolCall: call})
		return agent.Result{MessageID: "m1", Finish: agent.FinishToolCalls, ToolCalls: []agent.ToolCall{call}}, err
	})
	body := `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Weather?"}],
		"tools":[{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	r := stream(t, srv.URL+"/agui/support", body, "t1", "r1")
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	c := r.Calls["call_1"]
	if c == nil || c.Name != "get_weather" || c.Parent != "m1" || c.Args != `{"city":"Madrid"}` {
		t.Fatalf("tool call %+v", c)
	}
	if fin := r.finished(t); fin.Outcome == nil || fin.Outcome.Type != "success" || !reflect.DeepEqual(fin.Outcome.PendingToolCallIDs, []string{"call_1"}) {
		t.Fatalf("RUN_FINISHED: %s", r.End.Data)
	}
	tools := f.last(t).Tools
	if len(tools) != 1 || tools[0].Name != "get_weather" || tools[0].Description != "Weather of a city" ||
		!strings.Contains(string(tools[0].Parameters), `"city"`) {
		t.Fatalf("tools reached the runtime as %+v", tools)
	}
}

func TestServerToolCallCarriesItsResult(t *testing.T) {
	t.Parallel()
	srv, _ := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		read := agent.ToolCall{ID: "call_m", Name: "memory_read", Arguments: "{}"}
		err := emitAll(emit,
			// The runtime gives only the whole call at its end: the wire
			// still sends start, the arguments and end.
			agent.Event{Kind: agent.EventToolCallEnd, MessageID: "m1", ToolCall: read, Server: true},
			agent.Event{Kind: agent.EventToolResult, MessageID: "m1", ToolCall: read, Text: `{"facts":[]}`, Server: true},
			text("m2", "Nothing saved yet."),
			agent.Event{Kind: agent.EventTextEnd, MessageID: "m2"})
		return agent.Result{MessageID: "m2", Finish: agent.FinishStop}, err
	})
	r := stream(t, srv.URL+"/agui/support", userHello, "t1", "r1")
	want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	res := r.Results["call_m"]
	if res.str("content") != `{"facts":[]}` || res.str("role") != "tool" || r.Calls["call_m"].Args != "{}" || r.Calls["call_m"].Parent != "m1" {
		t.Fatalf("result %s, call %+v", res.Data, r.Calls["call_m"])
	}
	if fin := r.finished(t); fin.Outcome == nil || fin.Outcome.Type != "success" || len(fin.Outcome.PendingToolCallIDs) != 0 {
		t.Fatalf("a server tool is not pending: %s", r.End.Data)
	}
}

func TestHeldToolIsAnInterrupt(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{true, false} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			t.Parallel()
			srv, _ := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
				held := agent.ToolCall{ID: "call_r", Name: "refund", Arguments: `{"amount":40}`}
				err := emitAll(emit, text("m1", "I will ask a colleague."), agent.Event{Kind: agent.EventTextEnd, MessageID: "m1"})
				if streamed && err == nil {
					err = emitAll(emit,
						agent.Event{Kind: agent.EventToolCallStart, MessageID: "m1", ToolCall: agent.ToolCall{ID: "call_r", Name: "refund"}, Server: true},
						agent.Event{Kind: agent.EventToolCallArgs, MessageID: "m1", ToolCall: agent.ToolCall{ID: "call_r"}, Text: `{"amount":40}`, Server: true},
						agent.Event{Kind: agent.EventToolCallEnd, MessageID: "m1", ToolCall: held, Server: true})
				}
				return agent.Result{MessageID: "m1", Finish: agent.FinishHeld, Held: &held}, err
			})
			r := stream(t, srv.URL+"/agui/support", userHello, "t1", "r1")
			want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
				"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
			if got := r.types(); !reflect.DeepEqual(got, want) {
				t.Fatalf("events %v, want %v", got, want)
			}
			if c := r.Calls["call_r"]; c.Name != "refund" || c.Args != `{"amount":40}` || c.Parent != "m1" {
				t.Fatalf("held call %+v", c)
			}
			f := r.finished(t)
			if f.Result == nil || f.Result.Held.ToolCallID != "call_r" || f.Result.Held.Name != "refund" {
				t.Fatalf("result: %s", r.End.Data)
			}
			if f.Outcome == nil || f.Outcome.Type != "interrupt" || len(f.Outcome.Interrupts) != 1 ||
				f.Outcome.Interrupts[0].ToolCallID != "call_r" || f.Outcome.Interrupts[0].ID == "" ||
				f.Outcome.Interrupts[0].Reason != aguiwire.InterruptReason || len(f.Outcome.PendingToolCallIDs) != 0 {
				t.Fatalf("outcome: %s", r.End.Data)
			}
		})
	}
}

func TestRefusalsComeBeforeTheStream(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: one at a time", agent.ErrSessionBusy), 409, "session_busy"},
		{fmt.Errorf("%w: refund waits", agent.ErrDecisionPending), 409, "decision_pending"},
		{fmt.Errorf("%w: memory_read is reserved", agent.ErrInvalidRequest), 400, "invalid_request"},
		{agent.ErrUnknownAgent, 404, "agent_not_found"},
	}
	for _, c := range cases {
		t.Run(c.code, func(t *testing.T) {
			t.Parallel()
			srv, _ := serveFake(t, func(context.Context, agent.TurnRequest, agent.Emit) (agent.Result, error) {
				return agent.Result{}, c.err
			})
			if msg := expectError(t, srv.URL+"/agui/support", aguiwire.TestKey, userHello, c.status, c.code); msg != c.err.Error() {
				t.Fatalf("message %q", msg)
			}
		})
	}
}

func TestFailuresAfterTheStartAreRunErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		partial  bool
		err      error
		code     string
		message  string
		sequence []string
	}{
		{"provider mid-message", true, fmt.Errorf("%w: 500 from upstream", agent.ErrProvider), "provider_failed", "agent: model provider failed: 500 from upstream",
			[]string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "RUN_ERROR"}},
		{"provider before any text", false, fmt.Errorf("%w: 500 from upstream", agent.ErrProvider), "provider_failed", "agent: model provider failed: 500 from upstream",
			[]string{"RUN_STARTED", "RUN_ERROR"}},
		{"memory", false, fmt.Errorf("%w: recall failed", agent.ErrMemory), "memory_unavailable", "agent: memory unavailable: recall failed",
			[]string{"RUN_STARTED", "RUN_ERROR"}},
		{"storage", true, agent.ErrStorage, "storage_unavailable", "agent: storage unavailable",
			[]string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "RUN_ERROR"}},
		{"unexpected", false, errors.New("pgx: secret detail"), "internal", "internal error",
			[]string{"RUN_STARTED", "RUN_ERROR"}},
		{"refusal after the start", true, agent.ErrSessionBusy, "session_busy", "agent: session busy",
			[]string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "RUN_ERROR"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
				if c.partial {
					if err := emit(text("m1", "Half a sen")); err != nil {
						return agent.Result{}, err
					}
				}
				return agent.Result{}, c.err
			})
			r := stream(t, srv.URL+"/agui/support", userHello, "t1", "r1")
			if got := r.types(); !reflect.DeepEqual(got, c.sequence) {
				t.Fatalf("events %v, want %v", got, c.sequence)
			}
			if r.End.str("code") != c.code || r.End.str("message") != c.message {
				t.Fatalf("RUN_ERROR %s", r.End.Data)
			}
		})
	}
}

func TestInputReachesTheRuntime(t *testing.T) {
	t.Parallel()
	srv, f := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		return agent.Result{Finish: agent.FinishStop}, emit(text("m9", "ok"))
	})
	body := `{
		"threadId": "thread-42", "runId": "run-2", "parentRunId": "run-1", "protocolVersion": "1.1",
		"state": {"step": 3}, "futureMember": {"x": 1},
		"messages": [
			{"id": "s1", "role": "system", "content": "Be brief."},
			{"id": "d1", "role": "developer", "content": "Answer in English."},
			{"id": "u1", "role": "user", "content": [{"type": "text", "text": "What is "}, {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png"}}, {"type": "text", "text": "this?"}]},
			{"id": "a1", "role": "assistant", "content": "Checking.", "toolCalls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"a\"}"}}]},
			{"id": "tm1", "role": "tool", "toolCallId": "call_1", "content": "partial", "error": "timed out"},
			{"id": "act1", "role": "activity", "activityType": "progress", "content": {"pct": 50}},
			{"id": "rs1", "role": "reasoning", "content": "thinking"},
			{"id": "a2", "role": "assistant"},
			{"id": "u2", "role": "user", "content": "  Thanks\u00e9  "}
		],
		"tools": [{"name": "lookup", "description": "Look up", "parameters": {"type": "object"}}, {"name": "bare"}],
		"context": [{"description": "page", "value": "/pricing"}, {"description": "plan", "value": "pro"}],
		"forwardedProps": {"identities": {"contact.email": " Ana@Example.com ", "phoneNumber": "+34600000000"}, "customerId": "crm/person_42", "theme": "dark"}
	}`
	stream(t, srv.URL+"/agui/support", body, "thread-42", "run-2")
	req := f.last(t)
	if req.Agent != "support" || req.SessionKey != "thread-42" || req.ConversationKey != "" || req.Wire != "agui" {
		t.Fatalf("request %+v", req)
	}
	wantIDs := identity.Set{"contact.email": " Ana@Example.com ", "phoneNumber": "+34600000000", "customerId": "crm/person_42"}
	if !reflect.DeepEqual(req.Identities, wantIDs) {
		t.Fatalf("identities %v", req.Identities)
	}
	ctx := req.Messages[0]
	if ctx.Role != agent.RoleSystem || !strings.HasPrefix(ctx.ID, "agui-context-") ||
		!strings.Contains(ctx.Content, "page: /pricing") || !strings.Contains(ctx.Content, "plan: pro") {
		t.Fatalf("context message %+v", ctx)
	}
	want := []agent.Message{
		{ID: "s1", Role: agent.RoleSystem, Content: "Be brief."},
		{ID: "d1", Role: agent.RoleSystem, Content: "Answer in English."},
		{ID: "u1", Role: agent.RoleUser, Content: "What is this?"},
		{ID: "a1", Role: agent.RoleAssistant, Content: "Checking.", ToolCalls: []agent.ToolCall{{ID: "call_1", Name: "lookup", Arguments: `{"q":"a"}`}}},
		{ID: "tm1", Role: agent.RoleTool, ToolCallID: "call_1", Content: "partial\nError: timed out"},
		{ID: "a2", Role: agent.RoleAssistant},
		{ID: "u2", Role: agent.RoleUser, Content: "  Thanksé  "},
	}
	if got := req.Messages[1:]; !reflect.DeepEqual(got, want) {
		t.Fatalf("messages\n got %+v\nwant %+v", got, want)
	}
	if len(req.Tools) != 2 || req.Tools[1].Name != "bare" || req.Tools[1].Parameters != nil {
		t.Fatalf("tools %+v", req.Tools)
	}

	// The same context on the next run is the same message: a session stores
	// it once.
	stream(t, srv.URL+"/agui/support", body, "thread-42", "run-2")
	if again := f.last(t).Messages[0]; again.ID != ctx.ID {
		t.Fatalf("context id changed: %s then %s", ctx.ID, again.ID)
	}
}

func TestInvalidInputIsA400(t *testing.T) {
	t.Parallel()
	srv, f := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		return agent.Result{Finish: agent.FinishStop}, nil
	})
	msg := func(extra string) string {
		return `{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"hi"}]` + extra + `}`
	}
	long := strings.Repeat("x", 501)
	cases := map[string]string{
		"not JSON":                 `{"threadId":`,
		"two objects":              msg("") + `{}`,
		"empty":                    ``,
		"array":                    `[]`,
		"threadId not a string":    `{"threadId":5,"messages":[]}`,
		"threadId too long":        `{"threadId":"` + long + `","messages":[]}`,
		"message without id":       `{"threadId":"t","messages":[{"role":"user","content":"hi"}]}`,
		"duplicate message id":     `{"threadId":"t","messages":[{"id":"u","role":"user","content":"a"},{"id":"u","role":"user","content":"b"}]}`,
		"message without role":     `{"threadId":"t","messages":[{"id":"u","content":"hi"}]}`,
		"content a number":         `{"threadId":"t","messages":[{"id":"u","role":"user","content":5}]}`,
		"tool without toolCallId":  `{"threadId":"t","messages":[{"id":"x","role":"tool","content":"r"}]}`,
		"tool call without name":   `{"threadId":"t","messages":[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"arguments":"{}"}}]}]}`,
		"tool without name":        msg(`,"tools":[{"description":"x"}]`),
		"duplicate tool":           msg(`,"tools":[{"name":"a"},{"name":"a"}]`),
		"tools not a list":         msg(`,"tools":{"name":"a"}`),
		"customerId not a string":  msg(`,"forwardedProps":{"customerId":42}`),
		"customerId empty":         msg(`,"forwardedProps":{"customerId":""}`),
		"customerId too long":      msg(`,"forwardedProps":{"customerId":"` + long + `"}`),
		"identities not an object": msg(`,"forwardedProps":{"identities":["a"]}`),
		"identity value empty":     msg(`,"forwardedProps":{"identities":{"email":""}}`),
		"identity value number":    msg(`,"forwardedProps":{"identities":{"email":1}}`),
		"identity name too long":   msg(`,"forwardedProps":{"identities":{"` + strings.Repeat("n", 101) + `":"v"}}`),
		"customerId conflict":      msg(`,"forwardedProps":{"customerId":"a","identities":{"customerId":"b"}}`),
	}
	var many strings.Builder
	for i := range 33 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"f%d":"v"`, i)
	}
	cases["33 identity fields"] = msg(`,"forwardedProps":{"identities":{` + many.String() + `}}`)
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expectError(t, srv.URL+"/agui/support", aguiwire.TestKey, body, 400, "invalid_request")
		})
	}
	t.Run("same customerId twice is fine", func(t *testing.T) {
		stream(t, srv.URL+"/agui/support", msg(`,"forwardedProps":{"customerId":"a","identities":{"customerId":"a"}}`), "t", "r")
	})
	t.Run("a non-object forwardedProps carries no identity", func(t *testing.T) {
		stream(t, srv.URL+"/agui/support", msg(`,"forwardedProps":"anything"`), "t", "r")
		if ids := f.last(t).Identities; len(ids) != 0 {
			t.Fatalf("identities %v", ids)
		}
	})
}

func TestAuthAndUnknownAgent(t *testing.T) {
	t.Parallel()
	srv, f := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		return agent.Result{Finish: agent.FinishStop}, nil
	})
	expectError(t, srv.URL+"/agui/support", "", userHello, 401, "unauthorized")
	expectError(t, srv.URL+"/agui/support", "wrong", userHello, 401, "unauthorized")
	expectError(t, srv.URL+"/agui/nobody", aguiwire.TestKey, userHello, 404, "agent_not_found")
	if f.calls() != 0 {
		t.Fatal("a refused request reached the runtime")
	}
	resp, _ := post(t, srv.URL+"/agui/support", "", userHello)
	if resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
}

// A client that goes away cancels the turn: the next emit fails and the
// turn's context ends.
func TestClientGoingAwayCancelsTheTurn(t *testing.T) {
	t.Parallel()
	emitFailed := make(chan error, 1)
	srv, _ := serveFake(t, func(ctx context.Context, req agent.TurnRequest, emit agent.Emit) (agent.Result, error) {
		for {
			if err := emit(text("m1", "tick ")); err != nil {
				emitFailed <- err
				return agent.Result{}, err
			}
			if ctx.Err() != nil {
				emitFailed <- ctx.Err()
				return agent.Result{}, ctx.Err()
			}
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/agui/support", strings.NewReader(userHello))
	req.Header.Set("Authorization", "Bearer "+aguiwire.TestKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-emitFailed:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn went on after the client left")
	}
}
