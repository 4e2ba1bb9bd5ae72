package aguiwire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/client/sse"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
	"github.com/jackc/pgx/v5/pgxpool"
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
)

// These tests run a real box (Postgres, the agent runtime, the API's auth)
// with the scripted model server, and talk to it with the AG-UI Go SDK's
// SSE client; every stream is checked event by event by checkRun.

const boxYAML = `
agents:
  support:
    model: openai/chat
    instructions: You are the support agent.
    memory: {identityKey: customerId, read: true, save: false}
  guarded:
    model: openai/chat
    instructions: You ask before saving.
    memory: {identityKey: customerId, read: false, save: true}
    interruptOn: [memory_save]
  mailer:
    model: openai/chat
    instructions: You know people by their email.
    memory: {identityKey: contact.email, read: true, save: false}
`

const boxKey = boxtest.Key

type box struct {
	url   string
	model *providertest.Server
	keys  *auth.Store
	pool  *pgxpool.Pool
}

func newBox(t *testing.T) *box {
	t.Helper()
	b := boxtest.New(t, boxYAML)
	return &box{url: b.URL, model: b.Model, keys: b.Keys, pool: b.Pool}
}

// run sends in with the AG-UI SDK client and checks the stream it answers.
func (b *box) run(t *testing.T, agentName string, in types.RunAgentInput) *aguiRun {
	t.Helper()
	payloads, err := b.send(t.Context(), agentName, in)
	if err != nil {
		t.Fatalf("AG-UI client: %v", err)
	}
	return checkRun(t, payloads, in.ThreadID, in.RunID)
}

// send sends in with the AG-UI SDK client and returns the events' data.
func (b *box) send(ctx context.Context, agentName string, in types.RunAgentInput) ([][]byte, error) {
	c := sse.NewClient(sse.Config{Endpoint: b.url + "/agui/" + agentName, APIKey: boxKey, Logger: quietLogrus(), ReadTimeout: time.Minute})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	frames, errs, err := c.Stream(sse.StreamOptions{Context: ctx, Payload: in})
	if err != nil {
		return nil, err
	}
	var payloads [][]byte
	for f := range frames {
		payloads = append(payloads, f.Data)
	}
	for err := range errs {
		return nil, err
	}
	return payloads, nil
}

func body(t *testing.T, in types.RunAgentInput) string {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func userMsg(id, text string) types.Message {
	return types.Message{ID: id, Role: types.RoleUser, Content: text}
}

func assistantMsg(id, text string, calls ...types.ToolCall) types.Message {
	return types.Message{ID: id, Role: types.RoleAssistant, Content: text, ToolCalls: calls}
}

// sent lists the model's nth chat request as "role: content" lines, tool
// calls and answers included.
func sent(r *openai.ChatCompletionRequest) []string {
	var out []string
	for _, m := range r.Messages {
		line := m.Role + ": " + m.Content
		for _, c := range m.ToolCalls {
			line += fmt.Sprintf(" [call %s %s %s]", c.ID, c.Function.Name, c.Function.Arguments)
		}
		if m.ToolCallID != "" {
			line += " [answers " + m.ToolCallID + "]"
		}
		out = append(out, line)
	}
	return out
}

func offered(r *openai.ChatCompletionRequest) []string {
	out := []string{}
	for _, tl := range r.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

func (b *box) chat(t *testing.T, n int) *openai.ChatCompletionRequest {
	t.Helper()
	reqs := b.model.ChatRequests()
	if n >= len(reqs) {
		t.Fatalf("the model received %d requests, not %d", len(reqs), n+1)
	}
	return reqs[n]
}

// textRun checks the common shape of a run that answers with text only.
func textRun(t *testing.T, r *aguiRun, want string) string {
	t.Helper()
	seq := r.types()
	if len(seq) < 5 || seq[0] != "RUN_STARTED" || seq[1] != "TEXT_MESSAGE_START" || seq[len(seq)-2] != "TEXT_MESSAGE_END" || seq[len(seq)-1] != "RUN_FINISHED" {
		t.Fatalf("events %v", seq)
	}
	for _, typ := range seq[2 : len(seq)-2] {
		if typ != "TEXT_MESSAGE_CONTENT" {
			t.Fatalf("events %v", seq)
		}
	}
	if len(r.TextOrder) != 1 || r.text() != want {
		t.Fatalf("text %q in messages %v, want %q", r.text(), r.TextOrder, want)
	}
	if f := r.finished(t); f.Outcome == nil || f.Outcome.Type != "success" || len(f.Outcome.PendingToolCallIDs) != 0 {
		t.Fatalf("RUN_FINISHED %s", r.End.Data)
	}
	return r.TextOrder[0]
}

func TestTwoRunThreadSendsEachMessageOnce(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Hi Ana, how can I help you today?"},
		providertest.Reply{Content: "Your order ships on Monday."})

	r1 := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-1", RunID: "run-1",
		Messages: []types.Message{userMsg("u1", "Hello, I am Ana.")}})
	if len(r1.Events) < 5 {
		t.Fatalf("the reply was not streamed in pieces: %v", r1.types())
	}
	a1 := textRun(t, r1, "Hi Ana, how can I help you today?")
	if f := r1.finished(t); len(f.Usage) != 1 || f.Usage[0].Provider != "openai" || f.Usage[0].Model != "chat" ||
		f.Usage[0].InputTokens != 10 || f.Usage[0].OutputTokens != 5 || f.Usage[0].TotalTokens != 15 {
		t.Fatalf("usage %s", r1.End.Data)
	}

	// The client resends the whole history, as AG-UI clients do.
	r2 := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-1", RunID: "run-2", Messages: []types.Message{
		userMsg("u1", "Hello, I am Ana."),
		assistantMsg(a1, "Hi Ana, how can I help you today?"),
		userMsg("u2", "When does my order ship?"),
	}})
	if a2 := textRun(t, r2, "Your order ships on Monday."); a2 == a1 {
		t.Fatal("the second reply reused the first reply's message id")
	}
	want := []string{
		"system: You are the support agent.",
		"user: Hello, I am Ana.",
		"assistant: Hi Ana, how can I help you today?",
		"user: When does my order ship?",
	}
	if got := sent(b.chat(t, 1)); !reflect.DeepEqual(got, want) {
		t.Fatalf("the model received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A third run that sends only the new message continues the same thread.
	b.model.Script(providertest.Reply{Content: "You're welcome."})
	r3 := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-1", RunID: "run-3",
		Messages: []types.Message{userMsg("u3", "Thanks!")}})
	textRun(t, r3, "You're welcome.")
	want = append(want, "assistant: Your order ships on Monday.", "user: Thanks!")
	if got := sent(b.chat(t, 2)); !reflect.DeepEqual(got, want) {
		t.Fatalf("the model received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestStatelessRunsKeepNothing(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	b.run(t, "support", types.RunAgentInput{Messages: []types.Message{
		userMsg("u1", "One."), assistantMsg("a1", "Two."), userMsg("u2", "Three.")}})
	want := []string{"system: You are the support agent.", "user: One.", "assistant: Two.", "user: Three."}
	if got := sent(b.chat(t, 0)); !reflect.DeepEqual(got, want) {
		t.Fatalf("the model received %q", got)
	}
	b.run(t, "support", types.RunAgentInput{Messages: []types.Message{userMsg("u3", "Four.")}})
	want = []string{"system: You are the support agent.", "user: Four."}
	if got := sent(b.chat(t, 1)); !reflect.DeepEqual(got, want) {
		t.Fatalf("an empty threadId kept state: the model received %q", got)
	}
}

func TestClientToolCallAndItsContinuation(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(
		providertest.Reply{Content: "Let me check.", ToolCalls: []providertest.Call{providertest.ToolCall("call_w", "get_weather", map[string]string{"city": "Madrid"})}},
		providertest.Reply{Content: "It is sunny in Madrid."})
	weather := types.Tool{Name: "get_weather", Description: "Current weather of a city",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}
	ask := userMsg("u1", "What is the weather in Madrid?")

	r1 := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-w", RunID: "run-1", Tools: []types.Tool{weather},
		Messages: []types.Message{ask}})
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := r1.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	call := r1.Calls["call_w"]
	if call == nil || call.Name != "get_weather" || call.Args != `{"city":"Madrid"}` || call.Parent != r1.TextOrder[0] {
		t.Fatalf("tool call %+v (text message %v)", call, r1.TextOrder)
	}
	if len(r1.Results) != 0 {
		t.Fatal("the box answered a client tool")
	}
	if f := r1.finished(t); f.Outcome == nil || f.Outcome.Type != "success" || !reflect.DeepEqual(f.Outcome.PendingToolCallIDs, []string{"call_w"}) {
		t.Fatalf("RUN_FINISHED %s", r1.End.Data)
	}
	first := b.chat(t, 0)
	if got := offered(first); !reflect.DeepEqual(got, []string{"get_weather"}) {
		t.Fatalf("tools offered %v", got)
	}
	if !strings.Contains(string(mustJSON(t, first.Tools[0].Function.Parameters)), `"city"`) {
		t.Fatalf("tool parameters %v", first.Tools[0].Function.Parameters)
	}

	// The client ran the tool and continues the thread with its result,
	// resending the history as AG-UI clients do.
	r2 := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-w", RunID: "run-2", Tools: []types.Tool{weather},
		Messages: []types.Message{
			ask,
			assistantMsg(call.Parent, "Let me check.", types.ToolCall{ID: "call_w", Type: "function",
				Function: types.FunctionCall{Name: "get_weather", Arguments: call.Args}}),
			{ID: "tool-1", Role: types.RoleTool, ToolCallID: "call_w", Content: "Sunny, 24 C"},
		}})
	textRun(t, r2, "It is sunny in Madrid.")
	wantSent := []string{
		"system: You are the support agent.",
		"user: What is the weather in Madrid?",
		`assistant: Let me check. [call call_w get_weather {"city":"Madrid"}]`,
		"tool: Sunny, 24 C [answers call_w]",
	}
	if got := sent(b.chat(t, 1)); !reflect.DeepEqual(got, wantSent) {
		t.Fatalf("the model received\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantSent, "\n"))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestForwardedIdentitiesReachMemoryTools(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	hello := []types.Message{userMsg("u1", "Hello")}
	cases := []struct {
		name  string
		props any
		tools []string
	}{
		{"customerId", map[string]any{"customerId": "crm/person_42"}, []string{agent.ToolMemoryRead}},
		{"identities", map[string]any{"identities": map[string]string{"customerId": "crm/person_43", "contact.email": "a@example.com"}}, []string{agent.ToolMemoryRead}},
		{"both, equal", map[string]any{"customerId": "crm/person_44", "identities": map[string]string{"customerId": "crm/person_44"}}, []string{agent.ToolMemoryRead}},
		{"none", nil, []string{}},
		{"another field only", map[string]any{"identities": map[string]string{"phoneNumber": "+34600000000"}}, []string{}},
		{"other props only", map[string]any{"theme": "dark"}, []string{}},
	}
	for i, c := range cases {
		b.run(t, "support", types.RunAgentInput{ThreadID: fmt.Sprintf("thread-%d", i), RunID: "run", Messages: hello, ForwardedProps: c.props})
		if got := offered(b.chat(t, i)); !reflect.DeepEqual(got, c.tools) {
			t.Errorf("%s: tools offered %v, want %v", c.name, got, c.tools)
		}
	}
}

func TestServerToolIsStreamedWithItsResult(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_m", agent.ToolMemoryRead, map[string]any{})}},
		providertest.Reply{Content: "Nothing saved yet."},
		providertest.Reply{Content: "Noted."})
	props := map[string]any{"customerId": "crm/person_42"}
	r1 := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-m", RunID: "run-1", ForwardedProps: props,
		Messages: []types.Message{userMsg("u1", "What do you know about me?")}})
	want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if got := r1.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	res := r1.Results["call_m"]
	if c := r1.Calls["call_m"]; c.Name != agent.ToolMemoryRead || c.Parent == "" || res.str("content") == "" {
		t.Fatalf("call %+v result %s", c, res.Data)
	}
	if f := r1.finished(t); f.Outcome == nil || f.Outcome.Type != "success" || len(f.Outcome.PendingToolCallIDs) != 0 {
		t.Fatalf("RUN_FINISHED %s", r1.End.Data)
	}
	// The model saw the box's answer to its call.
	second := sent(b.chat(t, 1))
	if len(second) != 4 || !strings.Contains(second[2], "[call call_m memory_read") || !strings.HasSuffix(second[3], "[answers call_m]") {
		t.Fatalf("the model received %q", second)
	}

	// The client resends the history the stream gave it, the server tool's
	// call and result included: the model receives each message once.
	c := r1.Calls["call_m"]
	r2 := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-m", RunID: "run-2", ForwardedProps: props, Messages: []types.Message{
		userMsg("u1", "What do you know about me?"),
		assistantMsg(c.Parent, "", types.ToolCall{ID: "call_m", Type: "function", Function: types.FunctionCall{Name: c.Name, Arguments: c.Args}}),
		{ID: res.str("messageId"), Role: types.RoleTool, ToolCallID: "call_m", Content: res.str("content")},
		assistantMsg(r1.TextOrder[0], r1.text()),
		userMsg("u2", "I prefer email."),
	}})
	textRun(t, r2, "Noted.")
	third := sent(b.chat(t, 2))
	wantThird := append(append([]string{}, second...), "assistant: Nothing saved yet.", "user: I prefer email.")
	if !reflect.DeepEqual(third, wantThird) {
		t.Fatalf("the model received\n%s\nwant\n%s", strings.Join(third, "\n"), strings.Join(wantThird, "\n"))
	}
}

func TestHeldToolInterruptsAndBlocksTheThread(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Saving once approved.",
		ToolCalls: []providertest.Call{providertest.ToolCall("call_s", agent.ToolMemorySave, map[string]string{"content": "Prefers email."})}})
	in := types.RunAgentInput{ThreadID: "thread-h", RunID: "run-1", ForwardedProps: map[string]any{"customerId": "crm/person_42"},
		Messages: []types.Message{userMsg("u1", "Remember that I prefer email.")}}
	r := b.run(t, "guarded", in)
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	f := r.finished(t)
	if f.Result == nil || f.Result.Held.ToolCallID != "call_s" || f.Result.Held.Name != agent.ToolMemorySave {
		t.Fatalf("result %s", r.End.Data)
	}
	if f.Outcome == nil || f.Outcome.Type != "interrupt" || len(f.Outcome.Interrupts) != 1 || f.Outcome.Interrupts[0].ToolCallID != "call_s" {
		t.Fatalf("outcome %s", r.End.Data)
	}
	if len(r.Results) != 0 {
		t.Fatal("a held tool ran")
	}
	// While the decision is pending the thread refuses new runs.
	in.RunID = "run-2"
	in.Messages = append(in.Messages, userMsg("u2", "Hello?"))
	expectError(t, b.url+"/agui/guarded", boxKey, body(t, in), 409, "decision_pending")
	if n := len(b.model.ChatRequests()); n != 1 {
		t.Fatalf("the model was called %d times", n)
	}
}

func TestBusyThreadIs409(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	gate := make(chan struct{})
	b.model.Script(providertest.Reply{Content: "Slow answer.", Gate: gate})
	in := types.RunAgentInput{ThreadID: "thread-b", RunID: "run-1", Messages: []types.Message{userMsg("u1", "Hi")}}
	type outcome struct {
		payloads [][]byte
		err      error
	}
	done := make(chan outcome, 1)
	go func() {
		p, err := b.send(t.Context(), "support", in)
		done <- outcome{p, err}
	}()
	waitFor(t, func() bool { return len(b.model.ChatRequests()) == 1 })
	second := in
	second.RunID = "run-2"
	expectError(t, b.url+"/agui/support", boxKey, body(t, second), 409, "session_busy")
	close(gate)
	first := <-done
	if first.err != nil {
		t.Fatal(first.err)
	}
	textRun(t, checkRun(t, first.payloads, "thread-b", "run-1"), "Slow answer.")
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, "the condition", 30*time.Second, cond)
}

func TestProviderFailureIsRunError(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	props := map[string]any{"customerId": "crm/person_42"}
	hello := []types.Message{userMsg("u1", "Hello")}

	// The provider fails on the first call: the run starts and fails.
	b.model.Script(providertest.Reply{Status: 500, Message: "upstream exploded"})
	r := b.run(t, "support", types.RunAgentInput{ThreadID: "thread-e", RunID: "run-1", Messages: hello})
	if got := r.types(); !reflect.DeepEqual(got, []string{"RUN_STARTED", "RUN_ERROR"}) {
		t.Fatalf("events %v", got)
	}
	if r.End.str("code") != "provider_failed" {
		t.Fatalf("RUN_ERROR %s", r.End.Data)
	}

	// The provider fails mid-run, after a server tool step was streamed.
	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_m", agent.ToolMemoryRead, map[string]any{})}},
		providertest.Reply{Status: 500, Message: "upstream exploded"})
	r = b.run(t, "support", types.RunAgentInput{ThreadID: "thread-e", RunID: "run-2", ForwardedProps: props, Messages: hello})
	want := []string{"RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_ERROR"}
	if got := r.types(); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if r.End.str("code") != "provider_failed" || r.End.str("message") == "" {
		t.Fatalf("RUN_ERROR %s", r.End.Data)
	}

	// A failed run keeps nothing: the thread answers the same message again.
	b.model.Script(providertest.Reply{Content: "Hello!"})
	textRun(t, b.run(t, "support", types.RunAgentInput{ThreadID: "thread-e", RunID: "run-3", ForwardedProps: props, Messages: hello}), "Hello!")
	if got := sent(b.chat(t, 3)); !reflect.DeepEqual(got, []string{"system: You are the support agent.", "user: Hello"}) {
		t.Fatalf("the model received %q", got)
	}
}

func TestRefusedRequests(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	hello := body(t, types.RunAgentInput{ThreadID: "t", RunID: "r", Messages: []types.Message{userMsg("u1", "Hello")}})
	expectError(t, b.url+"/agui/support", "", hello, 401, "unauthorized")
	expectError(t, b.url+"/agui/support", "not-a-key", hello, 401, "unauthorized")
	reader, _, err := b.keys.Create(t.Context(), "reader", []string{auth.ScopeMemoryRead})
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, b.url+"/agui/support", reader, hello, 403, "forbidden")
	expectError(t, b.url+"/agui/nobody", boxKey, hello, 404, "agent_not_found")
	expectError(t, b.url+"/agui/support", boxKey, `{"threadId":"t","messages":[{"id":"u1","role":"user","content":"hi"}],
		"forwardedProps":{"customerId":"a","identities":{"customerId":"b"}}}`, 400, "invalid_request")
	expectError(t, b.url+"/agui/support", boxKey, `{"threadId":"t","messages":[{"id":"u1","role":"user","content":"hi"}],
		"forwardedProps":{"identities":{"email":""}}}`, 400, "invalid_request")
	expectError(t, b.url+"/agui/support", boxKey, `{"threadId":"t","messages":[{"id":"u1","role":"user","content":"hi"}],
		"forwardedProps":{"customerId":7}}`, 400, "invalid_request")
	expectError(t, b.url+"/agui/support", boxKey, `{"threadId":"t","messages":"hi"}`, 400, "invalid_request")
	// The runtime's own rules are 400s too: a client tool may not take a
	// memory tool's name while memory is on.
	expectError(t, b.url+"/agui/support", boxKey, `{"threadId":"t","messages":[{"id":"u1","role":"user","content":"hi"}],
		"tools":[{"name":"memory_read"}],"forwardedProps":{"customerId":"crm/person_42"}}`, 400, "invalid_request")
	if n := len(b.model.ChatRequests()); n != 0 {
		t.Fatalf("refused requests reached the model %d times", n)
	}
}
