package aguiwire_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
	aguiwire "github.com/stackbone/box/wire/aguiwire"
)

// These tests check the mapping from the runtime's turns to AG-UI events,
// and the refusals, event by event against a real box (newBox): the only
// stand-in is the scripted model, so every sequence here is one the runtime
// really emits.

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

// stream posts body as is and checks the event stream it answers.
func stream(t *testing.T, url, body, threadID, runID string) *aguiRun {
	t.Helper()
	resp, raw := post(t, url, boxKey, body)
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

// turnRuns is the run history of the agent's turns, newest first.
func (b *box) turnRuns(t *testing.T, agentName string) []runs.Run {
	t.Helper()
	list, err := runs.NewStore(b.pool).List(t.Context(), runs.Filter{Kind: agent.KindAgentTurn, AgentID: agentName})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// exec runs SQL on the box's own test database.
func (b *box) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := b.pool.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
}

// gate holds a scripted reply until release, which the test's cleanup also
// calls so a failed test never leaves the model server waiting.
func gate(t *testing.T) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	release := sync.OnceFunc(func() { close(ch) })
	t.Cleanup(release)
	return ch, release
}

func memoryRead(id string) []providertest.Call {
	return []providertest.Call{providertest.ToolCall(id, agent.ToolMemoryRead, map[string]any{})}
}

const (
	userHello       = `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Hello"}]}`
	customerHello   = `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Hello"}],"forwardedProps":{"customerId":"crm/person_42"}}`
	statelessHello  = `{"threadId":"","runId":"r1","messages":[{"id":"u1","role":"user","content":"Hello"}],"forwardedProps":{"customerId":"crm/person_42"}}`
	supportSystem   = "system: You are the support agent."
	emptyMemoryRead = `{"facts":[],"recentCalls":[]}`
)

func TestTextMessageEventByEvent(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Hello, how can I help?", PromptTokens: 12, CompletionTokens: 7})
	r := stream(t, b.url+"/agui/support", userHello, "t1", "r1")
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// Each delta is the piece the model streamed.
	if d1, d2 := r.Events[2].str("delta"), r.Events[3].str("delta"); d1 != "Hello, how can " || d2 != "I help?" {
		t.Fatalf("deltas %q %q", d1, d2)
	}
	if len(r.TextOrder) != 1 || r.TextOrder[0] == "" || r.text() != "Hello, how can I help?" {
		t.Fatalf("text %q in %v", r.text(), r.TextOrder)
	}
	f := r.finished(t)
	if f.Outcome == nil || f.Outcome.Type != "success" || len(f.Outcome.PendingToolCallIDs) != 0 || f.Result != nil {
		t.Fatalf("RUN_FINISHED: %s", r.End.Data)
	}
	if len(f.Usage) != 1 || f.Usage[0].Provider != "openai" || f.Usage[0].Model != "chat" ||
		f.Usage[0].InputTokens != 12 || f.Usage[0].OutputTokens != 7 || f.Usage[0].TotalTokens != 19 {
		t.Fatalf("usage: %s", r.End.Data)
	}
	if got := sent(b.chat(t, 0)); !reflect.DeepEqual(got, []string{supportSystem, "user: Hello"}) {
		t.Fatalf("the model received %q", got)
	}
}

func TestRunIDIsGeneratedWhenMissing(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "Hi"} })
	in := `{"threadId":"","messages":[{"id":"u1","role":"user","content":"Hi"}]}`
	var ids []string
	for range 2 {
		r := stream(t, b.url+"/agui/support", in, "", "")
		if got := r.types(); !reflect.DeepEqual(got, []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}) {
			t.Fatalf("events %v", got)
		}
		id := r.Events[0].str("runId")
		if _, err := uuid.Parse(id); err != nil {
			t.Fatalf("generated runId %q: %v", id, err)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two runs got the same runId %s", ids[0])
	}
	// An empty threadId is stateless: the turns ran, in no session.
	var sessions int
	if err := b.pool.QueryRow(t.Context(), `SELECT count(*) FROM stackbone_platform.sessions`).Scan(&sessions); err != nil {
		t.Fatal(err)
	}
	list := b.turnRuns(t, "support")
	if sessions != 0 || len(list) != 2 {
		t.Fatalf("%d sessions, %d runs", sessions, len(list))
	}
	for _, run := range list {
		if _, ok := run.Metadata["session"]; ok || run.Status != runs.StatusSucceeded || run.Metadata["wire"] != "agui" {
			t.Fatalf("run %+v", run)
		}
	}
}

func TestClientToolCallEndsTheRun(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Let me check.",
		ToolCalls: []providertest.Call{providertest.ToolCall("call_1", "get_weather", map[string]string{"city": "Madrid"})}})
	in := `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"Weather?"}],
		"tools":[{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	r := stream(t, b.url+"/agui/support", in, "t1", "r1")
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	c := r.Calls["call_1"]
	if c == nil || c.Name != "get_weather" || c.Parent != r.TextOrder[0] || c.Args != `{"city":"Madrid"}` || r.text() != "Let me check." {
		t.Fatalf("tool call %+v, text %q in %v", c, r.text(), r.TextOrder)
	}
	if len(r.Results) != 0 {
		t.Fatal("the box answered a client tool")
	}
	if fin := r.finished(t); fin.Outcome == nil || fin.Outcome.Type != "success" || !reflect.DeepEqual(fin.Outcome.PendingToolCallIDs, []string{"call_1"}) {
		t.Fatalf("RUN_FINISHED: %s", r.End.Data)
	}
	// The tool reached the model as the client declared it.
	req := b.chat(t, 0)
	if got := offered(req); !reflect.DeepEqual(got, []string{"get_weather"}) {
		t.Fatalf("tools offered %v", got)
	}
	if fn := req.Tools[0].Function; fn.Description != "Weather of a city" || !strings.Contains(string(mustJSON(t, fn.Parameters)), `"city"`) {
		t.Fatalf("tool %+v", fn)
	}
}

func TestServerToolCallCarriesItsResult(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{ToolCalls: memoryRead("call_m")}, providertest.Reply{Content: "Nothing saved yet."})
	r := stream(t, b.url+"/agui/support", customerHello, "t1", "r1")
	want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	res, c := r.Results["call_m"], r.Calls["call_m"]
	if res.str("content") != emptyMemoryRead || res.str("role") != "tool" || c.Name != agent.ToolMemoryRead || c.Args != "{}" ||
		c.Parent == "" || c.Parent == r.TextOrder[0] || r.text() != "Nothing saved yet." {
		t.Fatalf("result %s, call %+v, text %q in %v", res.Data, c, r.text(), r.TextOrder)
	}
	if fin := r.finished(t); fin.Outcome == nil || fin.Outcome.Type != "success" || len(fin.Outcome.PendingToolCallIDs) != 0 {
		t.Fatalf("a server tool is not pending: %s", r.End.Data)
	}
	// The client saw the answer the model got.
	second := b.chat(t, 1).Messages
	if last := second[len(second)-1]; last.ToolCallID != "call_m" || last.Content != res.str("content") {
		t.Fatalf("the model got %+v", last)
	}
}

func TestHeldToolIsAnInterrupt(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "I will ask a colleague.",
		ToolCalls: []providertest.Call{providertest.ToolCall("call_r", agent.ToolMemorySave, map[string]string{"content": "Prefers email."})}})
	r := stream(t, b.url+"/agui/guarded", customerHello, "t1", "r1")
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if c := r.Calls["call_r"]; c.Name != agent.ToolMemorySave || c.Args != `{"content":"Prefers email."}` || c.Parent != r.TextOrder[0] {
		t.Fatalf("held call %+v", c)
	}
	f := r.finished(t)
	if f.Result == nil || f.Result.Held.ToolCallID != "call_r" || f.Result.Held.Name != agent.ToolMemorySave {
		t.Fatalf("result: %s", r.End.Data)
	}
	if f.Outcome == nil || f.Outcome.Type != "interrupt" || len(f.Outcome.Interrupts) != 1 ||
		f.Outcome.Interrupts[0].ToolCallID != "call_r" || f.Outcome.Interrupts[0].ID == "" ||
		f.Outcome.Interrupts[0].Reason != aguiwire.InterruptReason || len(f.Outcome.PendingToolCallIDs) != 0 {
		t.Fatalf("outcome: %s", r.End.Data)
	}
	// The held tool did not run: no result, and no memory extraction.
	if len(r.Results) != 0 || len(b.model.ChatRequests()) != 1 {
		t.Fatalf("the held tool ran: %d results, %d model requests", len(r.Results), len(b.model.ChatRequests()))
	}
}

func TestRefusalsComeBeforeTheStream(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	url := b.url + "/agui/support"

	// A turn in flight makes its thread busy.
	held, release := gate(t)
	b.model.Script(providertest.Reply{Content: "Slow answer.", Gate: held})
	busy := `{"threadId":"busy","runId":"r1","messages":[{"id":"u1","role":"user","content":"Hi"}]}`
	type answer struct {
		raw []byte
		err error
	}
	done := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(busy))
		req.Header.Set("Authorization", "Bearer "+boxKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		done <- answer{raw, err}
	}()
	waitFor(t, func() bool { return len(b.model.ChatRequests()) == 1 })
	if msg := expectError(t, url, boxKey, busy, 409, "session_busy"); msg != "agent: session busy: another turn on this session is still running" {
		t.Fatalf("message %q", msg)
	}
	release()
	first := <-done
	if first.err != nil {
		t.Fatal(first.err)
	}
	textRun(t, checkRun(t, parseSSE(t, strings.NewReader(string(first.raw))), "busy", "r1"), "Slow answer.")

	// Resending only what the session holds leaves nothing to answer.
	if msg := expectError(t, url, boxKey, busy, 400, "invalid_request"); msg != "agent: invalid request: there is no new message to answer" {
		t.Fatalf("message %q", msg)
	}

	// A held tool blocks its thread until a person decides.
	b.model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_s", agent.ToolMemorySave, map[string]string{"content": "x"})}})
	stream(t, b.url+"/agui/guarded", customerHello, "t1", "r1")
	again := strings.Replace(customerHello, `"content":"Hello"}`, `"content":"Hello"},{"id":"u2","role":"user","content":"Hello?"}`, 1)
	if msg := expectError(t, b.url+"/agui/guarded", boxKey, again, 409, "decision_pending"); msg != "agent: a decision is pending: a held tool call waits for a person's decision on this session" {
		t.Fatalf("message %q", msg)
	}

	// The runtime's own rules: a client tool may not take a memory tool's
	// name while memory is on.
	reserved := `{"threadId":"t2","messages":[{"id":"u1","role":"user","content":"hi"}],"tools":[{"name":"memory_read"}],"forwardedProps":{"customerId":"crm/person_42"}}`
	if msg := expectError(t, url, boxKey, reserved, 400, "invalid_request"); msg != `agent: invalid request: the tool name "memory_read" is reserved while the agent's memory is on` {
		t.Fatalf("message %q", msg)
	}

	if msg := expectError(t, b.url+"/agui/nobody", boxKey, userHello, 404, "agent_not_found"); msg != `no agent named "nobody"` {
		t.Fatalf("message %q", msg)
	}
	if n := len(b.model.ChatRequests()); n != 2 {
		t.Fatalf("the model received %d requests, want the 2 of the runs that streamed", n)
	}
}

func TestFailuresAfterTheStartAreRunErrors(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	providerFailed := providertest.Reply{Status: 500, Message: "upstream exploded"}
	cases := []struct {
		name    string
		agent   string
		body    string
		setup   func(t *testing.T)
		code    string
		message string // the RUN_ERROR message starts with it
		want    []string
	}{
		{"provider before any text", "support", userHello,
			func(*testing.T) { b.model.Script(providerFailed) },
			"provider_failed", "agent: model provider failed: provider answered 500 (provider error)",
			[]string{"RUN_STARTED", "RUN_ERROR"}},
		{"provider after text and a server tool", "support", strings.Replace(customerHello, `"t1"`, `"t2"`, 1),
			func(*testing.T) {
				b.model.Script(providertest.Reply{Content: "Let me look.", ToolCalls: memoryRead("call_m")}, providerFailed)
			},
			"provider_failed", "agent: model provider failed: provider answered 500 (provider error)",
			[]string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
				"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_ERROR"}},
		// A refusal the runtime can only make once the model has spoken: a
		// held tool on a stateless run.
		{"refusal after the start", "guarded", statelessHello,
			func(*testing.T) {
				b.model.Script(providertest.Reply{Content: "Saving once approved.",
					ToolCalls: []providertest.Call{providertest.ToolCall("call_s", agent.ToolMemorySave, map[string]string{"content": "x"})}})
			},
			"invalid_request", "agent: invalid request: tool memory_save needs a person's decision",
			[]string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
				"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_ERROR"}},
		// PostgreSQL refuses to save the turn once its text was streamed.
		{"storage", "support", strings.Replace(userHello, `"t1"`, `"t4"`, 1),
			func(t *testing.T) {
				b.model.Script(providertest.Reply{Content: "Half a sentence"})
				b.exec(t, `CREATE FUNCTION refuse_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk full'; END $$;
					CREATE TRIGGER refuse BEFORE INSERT ON stackbone_checkpoints.checkpoints FOR EACH ROW EXECUTE FUNCTION refuse_checkpoint()`)
				t.Cleanup(func() {
					_, err := b.pool.Exec(context.Background(), `DROP TRIGGER refuse ON stackbone_checkpoints.checkpoints; DROP FUNCTION refuse_checkpoint()`)
					if err != nil {
						t.Error(err)
					}
				})
			},
			"storage_unavailable", "agent: storage unavailable: save turn",
			[]string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"}},
		// Person memory is gone when the model reads it.
		{"memory", "support", strings.Replace(customerHello, `"t1"`, `"t5"`, 1),
			func(t *testing.T) {
				b.model.Script(providertest.Reply{ToolCalls: memoryRead("call_m")})
				b.exec(t, `ALTER TABLE stackbone_platform.memory_facts RENAME TO memory_facts_gone`)
			},
			"memory_unavailable", "agent: memory unavailable:",
			[]string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_ERROR"}},
	}
	// One after the other: they share the box's scripted model, and the
	// last breaks memory for good.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			var in struct{ ThreadID string }
			if err := json.Unmarshal([]byte(c.body), &in); err != nil {
				t.Fatal(err)
			}
			r := stream(t, b.url+"/agui/"+c.agent, c.body, in.ThreadID, "r1")
			if got := r.types(); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("events %v, want %v", got, c.want)
			}
			if r.End.str("code") != c.code || !strings.HasPrefix(r.End.str("message"), c.message) {
				t.Fatalf("RUN_ERROR %s", r.End.Data)
			}
		})
	}
}

func TestInputReachesTheRuntime(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	messages := `
			{"id": "s1", "role": "system", "content": "Be brief."},
			{"id": "d1", "role": "developer", "content": "Answer in English."},
			{"id": "u1", "role": "user", "content": [{"type": "text", "text": "What is "}, {"type": "image", "source": {"type": "url", "value": "https://example.com/a.png"}}, {"type": "text", "text": "this?"}]},
			{"id": "a1", "role": "assistant", "content": "Checking.", "toolCalls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"a\"}"}}]},
			{"id": "tm1", "role": "tool", "toolCallId": "call_1", "content": "partial", "error": "timed out"},
			{"id": "act1", "role": "activity", "activityType": "progress", "content": {"pct": 50}},
			{"id": "rs1", "role": "reasoning", "content": "thinking"},
			{"id": "a2", "role": "assistant"},
			{"id": "u2", "role": "user", "content": "  Thanks\u00e9  "}`
	input := func(runID, more string) string {
		return `{
		"threadId": "thread-42", "runId": "` + runID + `", "parentRunId": "run-1", "protocolVersion": "1.1",
		"state": {"step": 3}, "futureMember": {"x": 1},
		"messages": [` + messages + more + `],
		"tools": [{"name": "lookup", "description": "Look up", "parameters": {"type": "object"}}, {"name": "bare"}],
		"context": [{"description": "page", "value": "/pricing"}, {"description": "plan", "value": "pro"}],
		"forwardedProps": {"identities": {"contact.email": " Ana@Example.com ", "phoneNumber": "+34600000000"}, "customerId": "crm/person_42", "theme": "dark"}
	}`
	}
	const appContext = "system: Context from the application:\n- page: /pricing\n- plan: pro"
	conversation := []string{
		"system: Be brief.",
		"system: Answer in English.",
		"user: What is this?",
		`assistant: Checking. [call call_1 lookup {"q":"a"}]`,
		"tool: partial\nError: timed out [answers call_1]",
		"assistant: ",
		"user:   Thanksé  ",
	}
	stream(t, b.url+"/agui/support", input("run-2", ""), "thread-42", "run-2")
	first := b.chat(t, 0)
	want := append([]string{supportSystem, appContext}, conversation...)
	if got := sent(first); !reflect.DeepEqual(got, want) {
		t.Fatalf("the model received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// customerId selected the person, so memory_read joins the client's tools.
	if got := offered(first); !reflect.DeepEqual(got, []string{agent.ToolMemoryRead, "lookup", "bare"}) {
		t.Fatalf("tools offered %v", got)
	}
	lookup, bare := first.Tools[1].Function, first.Tools[2].Function
	if lookup.Description != "Look up" || string(mustJSON(t, lookup.Parameters)) != `{"type":"object"}` ||
		bare.Description != "" || !strings.Contains(string(mustJSON(t, bare.Parameters)), `"properties":{}`) {
		t.Fatalf("tools %+v %+v", lookup, bare)
	}
	// threadId is a session key, the session of the customer the identities
	// name; the turn is recorded as this wire's.
	list := b.turnRuns(t, "support")
	if len(list) != 1 || list[0].Metadata["session"] != agent.SessionID("session", "support", "customerId=crm/person_42", "thread-42") ||
		list[0].Metadata["wire"] != "agui" {
		t.Fatalf("runs %+v", list)
	}

	// The same context on the next run is the same message: the session
	// holds it once.
	stream(t, b.url+"/agui/support", input("run-3", `, {"id": "u3", "role": "user", "content": "And the price?"}`), "thread-42", "run-3")
	want = append(want, "assistant: ok", "user: And the price?")
	if got := sent(b.chat(t, 1)); !reflect.DeepEqual(got, want) {
		t.Fatalf("the model received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The identities object reaches the runtime as sent: an agent keyed on
	// contact.email is scoped to the untrimmed address.
	stream(t, b.url+"/agui/mailer", input("run-2", ""), "thread-42", "run-2")
	if got := offered(b.chat(t, 2)); !reflect.DeepEqual(got, []string{agent.ToolMemoryRead, "lookup", "bare"}) {
		t.Fatalf("tools offered %v", got)
	}
	if list := b.turnRuns(t, "mailer"); len(list) != 1 || list[0].Metadata["session"] != agent.SessionID("session", "mailer", "contact.email= Ana@Example.com ", "thread-42") {
		t.Fatalf("runs %+v", list)
	}
}

func TestInvalidInputIsA400(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
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
			expectError(t, b.url+"/agui/support", boxKey, body, 400, "invalid_request")
		})
	}
	if n := len(b.model.ChatRequests()); n != 0 {
		t.Fatalf("invalid input reached the model %d times", n)
	}

	t.Run("same customerId twice is fine", func(t *testing.T) {
		stream(t, b.url+"/agui/support", msg(`,"forwardedProps":{"customerId":"a","identities":{"customerId":"a"}}`), "t", "r")
		if got := offered(b.chat(t, 0)); !reflect.DeepEqual(got, []string{agent.ToolMemoryRead}) {
			t.Fatalf("tools offered %v", got)
		}
	})
	t.Run("a non-object forwardedProps carries no identity", func(t *testing.T) {
		in := strings.Replace(msg(`,"forwardedProps":"anything"`), `"t"`, `"t2"`, 1)
		stream(t, b.url+"/agui/support", in, "t2", "r")
		if got := offered(b.chat(t, 1)); len(got) != 0 {
			t.Fatalf("tools offered %v", got)
		}
	})
}

func TestAuthAndUnknownAgent(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	for _, key := range []string{"", "wrong"} {
		expectError(t, b.url+"/agui/support", key, userHello, 401, "unauthorized")
		if resp, _ := post(t, b.url+"/agui/support", key, userHello); resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("401 without WWW-Authenticate (key %q)", key)
		}
	}
	expectError(t, b.url+"/agui/nobody", boxKey, userHello, 404, "agent_not_found")
	if n := len(b.model.ChatRequests()); n != 0 {
		t.Fatalf("a refused request reached the model %d times", n)
	}
}

// A client that goes away mid-stream cancels the turn: the model call in
// flight ends with it, the run is recorded, and the thread takes the next
// run.
func TestClientGoingAwayCancelsTheTurn(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	// The second step's answer is never released: only the end of the
	// turn's context can end that model call.
	never, _ := gate(t)
	b.model.Script(providertest.Reply{ToolCalls: memoryRead("call_m")}, providertest.Reply{Content: "Too late.", Gate: never})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url+"/agui/support", strings.NewReader(customerHello))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+boxKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"RUN_STARTED"`) {
		t.Fatalf("first line %q: %v", line, err)
	}
	waitFor(t, func() bool { return len(b.model.ChatRequests()) == 2 })
	cancel()
	resp.Body.Close()

	// The run is recorded as ended while the model's answer is still held
	// back. (The runtime records a model call cut short by the client as
	// failed, provider_failed; a cancellation it notices itself, as
	// cancelled.)
	var list []runs.Run
	waitFor(t, func() bool { list = b.turnRuns(t, "support"); return len(list) > 0 })
	if run := list[0]; len(list) != 1 || (run.Status != runs.StatusCancelled && run.Status != runs.StatusFailed) {
		t.Fatalf("run %+v", run)
	}

	// The session is free again and kept the question, the finished step
	// and the cut answer, so the next turn reads naturally.
	b.model.Script(providertest.Reply{Content: "Hello again."})
	next := `{"threadId":"t1","runId":"r2","messages":[{"id":"u1","role":"user","content":"Hello"},{"id":"u2","role":"user","content":"Are you there?"}],"forwardedProps":{"customerId":"crm/person_42"}}`
	textRun(t, stream(t, b.url+"/agui/support", next, "t1", "r2"), "Hello again.")
	want := []string{supportSystem, "user: Hello", `assistant:  [call call_m memory_read {}]`, "tool: " + emptyMemoryRead + " [answers call_m]",
		"assistant: " + agent.CutMarker, "user: Are you there?"}
	if got := sent(b.chat(t, 2)); !reflect.DeepEqual(got, want) {
		t.Fatalf("the model received %q, want %q", got, want)
	}
}
