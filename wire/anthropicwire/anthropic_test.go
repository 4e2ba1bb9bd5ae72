package anthropicwire_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/stackbone/box/provider/providertest"
)

var ctx = context.Background()

func user(text string) []anthropic.MessageParam {
	return []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}
}

func params(model string, msgs []anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 1024, Messages: msgs}
}

// stream runs a streamed message and returns the accumulated message and
// the event types as received.
func stream(t *testing.T, c *anthropic.Client, p anthropic.MessageNewParams, opts ...option.RequestOption) (anthropic.Message, []anthropic.MessageStreamEventUnion) {
	t.Helper()
	s := c.Messages.NewStreaming(ctx, p, opts...)
	var msg anthropic.Message
	var events []anthropic.MessageStreamEventUnion
	for s.Next() {
		ev := s.Current()
		events = append(events, ev)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("accumulate %s: %v", ev.RawJSON(), err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return msg, events
}

func types(events []anthropic.MessageStreamEventUnion) []string {
	var out []string
	for _, ev := range events {
		t := ev.Type
		if ev.Type == "content_block_start" {
			t += ":" + ev.ContentBlock.Type
		}
		if ev.Type == "content_block_delta" {
			t += ":" + ev.Delta.Type
		}
		out = append(out, t)
	}
	return out
}

// compact drops repeated neighbours, so a run of deltas reads as one.
func compact(s []string) []string { return slices.Compact(slices.Clone(s)) }

// A session keeps the conversation in the box: the second request carries
// only the new message, plain first and streamed second, and the model
// receives both turns.
func TestSessionPlainThenStreamed(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(
		providertest.Reply{Content: "Order A-1001 ships tomorrow.", PromptTokens: 12, CompletionTokens: 7},
		providertest.Reply{Content: "Yes, you can return it within 30 days.", PromptTokens: 30, CompletionTokens: 9},
	)
	c := b.client(option.WithHeader("x-stackbone-session", "customer-4711"))

	got, err := c.Messages.New(ctx, params("plain", user("Where is order A-1001?")))
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != "message" || got.Role != "assistant" || got.Model != "plain" || !strings.HasPrefix(got.ID, "msg_") || len(got.Content) != 1 {
		t.Fatalf("message %s", got.RawJSON())
	}
	if blk := got.Content[0]; blk.Type != "text" || blk.Text != "Order A-1001 ships tomorrow." {
		t.Fatalf("content %s", blk.RawJSON())
	}
	if got.StopReason != "end_turn" || got.Usage.InputTokens != 12 || got.Usage.OutputTokens != 7 {
		t.Fatalf("stop %q usage %s", got.StopReason, got.Usage.RawJSON())
	}
	if _, ok := got.JSON.ExtraFields["stackbone"]; ok {
		t.Fatalf("extension on a plain answer: %s", got.RawJSON())
	}

	msg, events := stream(t, c, params("plain", user("Can I still return it?")))
	if len(msg.Content) != 1 || msg.Content[0].Text != "Yes, you can return it within 30 days." {
		t.Fatalf("streamed content %+v", msg.Content)
	}
	if msg.StopReason != "end_turn" || msg.Usage.InputTokens != 30 || msg.Usage.OutputTokens != 9 || msg.Model != "plain" {
		t.Fatalf("streamed stop %q usage %+v", msg.StopReason, msg.Usage)
	}
	want := []string{"message_start", "content_block_start:text", "content_block_delta:text_delta", "content_block_stop", "message_delta", "message_stop"}
	if got := compact(types(events)); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}

	sent := []string{"system: You are plain.", "user: Where is order A-1001?", "assistant: Order A-1001 ships tomorrow.", "user: Can I still return it?"}
	if got := b.sent(1); !slices.Equal(got, sent) {
		t.Fatalf("the model received %q, want %q", got, sent)
	}
}

// Without a session the client sends the whole conversation; the system
// prompt follows the agent's instructions; Bearer works as well as
// x-api-key.
func TestStatelessConversation(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Bonjour."})
	c := b.bearerClient(testKey)
	p := params("plain", []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("Hi")),
		anthropic.NewAssistantMessage(anthropic.NewTextBlock("Hello!")),
		anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"), anthropic.NewTextBlock("in French.")),
	})
	p.System = []anthropic.TextBlockParam{{Text: "Answer in French."}, {Text: "Be brief."}}
	got, err := c.Messages.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content[0].Text != "Bonjour." {
		t.Fatalf("content %s", got.RawJSON())
	}
	want := []string{"system: You are plain.", "system: Answer in French.\nBe brief.", "user: Hi", "assistant: Hello!", "user: Say hello\nin French."}
	if got := b.sent(0); !slices.Equal(got, want) {
		t.Fatalf("the model received %q, want %q", got, want)
	}
}

var weather = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"city": map[string]any{"type": "string"}},
		Required:   []string{"city"},
	},
}}

// A client tool round-trips: the model calls it, the client sees tool_use
// blocks with their input, runs them, sends tool_result blocks, and the
// model receives them.
func TestClientToolRoundTrip(t *testing.T) {
	t.Parallel()
	call := providertest.Reply{Content: "Let me check.", ToolCalls: []providertest.Call{
		providertest.ToolCall("toolu_w1", "get_weather", map[string]string{"city": "Madrid"}),
		providertest.ToolCall("toolu_w2", "get_weather", map[string]string{"city": "Oslo"}),
	}}
	answer := providertest.Reply{Content: "Sunny in Madrid, rain in Oslo."}
	results := anthropic.NewUserMessage(
		anthropic.NewToolResultBlock("toolu_w1", "sunny, 24C", false),
		anthropic.NewToolResultBlock("toolu_w2", "no data for Oslo", true),
	)
	checkUses := func(t *testing.T, msg anthropic.Message) {
		t.Helper()
		if msg.StopReason != "tool_use" || len(msg.Content) != 3 || msg.Content[0].Type != "text" || msg.Content[0].Text != "Let me check." {
			t.Fatalf("tool use message %+v", msg.Content)
		}
		for i, city := range []string{"Madrid", "Oslo"} {
			blk := msg.Content[i+1]
			var in map[string]string
			if err := json.Unmarshal(blk.Input, &in); err != nil || blk.Type != "tool_use" || blk.Name != "get_weather" ||
				blk.ID != []string{"toolu_w1", "toolu_w2"}[i] || in["city"] != city {
				t.Fatalf("tool_use %d: %s (%v)", i, blk.RawJSON(), err)
			}
		}
	}

	t.Run("plain, stateless", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		b.model.Script(call, answer)
		c := b.client()
		p := params("plain", user("Weather in Madrid and Oslo?"))
		p.Tools = []anthropic.ToolUnionParam{weather}
		got, err := c.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		checkUses(t, *got)
		tool := b.model.ChatRequests()[0].Tools
		if len(tool) != 1 || tool[0].Function.Name != "get_weather" || tool[0].Function.Description != "The weather in a city" ||
			!strings.Contains(string(mustJSON(t, tool[0].Function.Parameters)), `"required":["city"]`) {
			t.Fatalf("tools offered %+v", tool)
		}
		p.Messages = append(p.Messages, got.ToParam(), results)
		got, err = c.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Content[0].Text != "Sunny in Madrid, rain in Oslo." || got.StopReason != "end_turn" {
			t.Fatalf("answer %s", got.RawJSON())
		}
		checkToolResultsSent(t, b)
	})

	t.Run("streamed, session", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		b.model.Script(call, answer)
		c := b.client(option.WithHeader("x-stackbone-session", "weather-1"))
		p := params("plain", user("Weather in Madrid and Oslo?"))
		p.Tools = []anthropic.ToolUnionParam{weather}
		msg, events := stream(t, c, p)
		checkUses(t, msg)
		want := []string{"message_start", "content_block_start:text", "content_block_delta:text_delta", "content_block_stop",
			"content_block_start:tool_use", "content_block_delta:input_json_delta", "content_block_stop",
			"content_block_start:tool_use", "content_block_delta:input_json_delta", "content_block_stop", "message_delta", "message_stop"}
		if got := compact(types(events)); !slices.Equal(got, want) {
			t.Fatalf("events %q, want %q", got, want)
		}
		if n := strings.Count(strings.Join(types(events), " "), "input_json_delta"); n < 4 {
			t.Fatalf("the input was not streamed in pieces (%d deltas)", n)
		}
		// With a session only the results go back.
		p.Messages = []anthropic.MessageParam{results}
		got, err := c.Messages.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Content[0].Text != "Sunny in Madrid, rain in Oslo." {
			t.Fatalf("answer %s", got.RawJSON())
		}
		checkToolResultsSent(t, b)
	})
}

func checkToolResultsSent(t *testing.T, b *box) {
	t.Helper()
	reqs := b.model.ChatRequests()
	msgs := reqs[len(reqs)-1].Messages
	if len(msgs) != 5 {
		t.Fatalf("the model received %d messages: %q", len(msgs), b.sent(-1))
	}
	asst, r1, r2 := msgs[2], msgs[3], msgs[4]
	if asst.Role != "assistant" || asst.Content != "Let me check." || len(asst.ToolCalls) != 2 || asst.ToolCalls[1].ID != "toolu_w2" ||
		asst.ToolCalls[1].Function.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("assistant message sent %+v", asst)
	}
	if r1.Role != "tool" || r1.ToolCallID != "toolu_w1" || r1.Content != "sunny, 24C" || r2.ToolCallID != "toolu_w2" || r2.Content != "Error: no data for Oslo" {
		t.Fatalf("tool results sent %+v %+v", r1, r2)
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

// metadata.user_id is the scalar customer identity and
// x-stackbone-identities the map: both select the person, as the memory
// tools offered to the model show.
func TestIdentities(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openaiRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	c := b.client()
	ask := func(model string, userID string, opts ...option.RequestOption) []string {
		t.Helper()
		p := params(model, user("hi"))
		if userID != "" {
			p.Metadata = anthropic.MetadataParam{UserID: anthropic.String(userID)}
		}
		if _, err := c.Messages.New(ctx, p, opts...); err != nil {
			t.Fatal(err)
		}
		return b.toolsSent(-1)
	}
	if got := ask("support", ""); len(got) != 0 {
		t.Fatalf("without identity the model was offered %q", got)
	}
	if got := ask("support", "crm/7"); !slices.Equal(got, []string{"memory_read"}) {
		t.Fatalf("with metadata.user_id the model was offered %q", got)
	}
	if got := ask("phone", "", option.WithHeader("x-stackbone-identities", `{"phoneNumber":"+4915112345678"}`)); !slices.Equal(got, []string{"memory_read"}) {
		t.Fatalf("with the identities header the model was offered %q", got)
	}
	if got := ask("phone", "+4915112345678"); len(got) != 0 {
		t.Fatalf("a phone-shaped user_id supplied phoneNumber: %q", got)
	}

	// Two customers on one session key get two sessions.
	for _, who := range []string{"crm/1", "crm/2"} {
		p := params("support", user("I am "+who))
		p.Metadata = anthropic.MetadataParam{UserID: anthropic.String(who)}
		if _, err := c.Messages.New(ctx, p, option.WithHeader("x-stackbone-session", "shared-key")); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := b.sent(-1), []string{"system: You help customers.", "user: I am crm/2"}; !slices.Equal(got, want) {
		t.Fatalf("the second customer's turn sent %q, want %q", got, want)
	}
}

// A held tool answers the text so far with stop_reason end_turn and the
// stackbone.held extension; the session then answers 409 until a person
// decides.
func TestHeldToolAndDecisionPending(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	save := providertest.Reply{Content: "Let me note that.", ToolCalls: []providertest.Call{
		providertest.ToolCall("h1", "memory_save", map[string]string{"content": "Allergic to nuts."})}}
	b.model.Script(save, save)
	heldParams := func(text string) anthropic.MessageNewParams {
		p := params("guarded", user(text))
		p.Metadata = anthropic.MetadataParam{UserID: anthropic.String("crm/7")}
		return p
	}
	// Retries on: the 409 tells the client not to retry.
	var attempts int
	c := b.client(option.WithHeader("x-stackbone-session", "s-1"), option.WithMaxRetries(2),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			attempts++
			return next(r)
		}))

	got, err := c.Messages.New(ctx, heldParams("I am allergic to nuts."))
	if err != nil {
		t.Fatal(err)
	}
	if got.StopReason != "end_turn" || len(got.Content) != 1 || got.Content[0].Text != "Let me note that." {
		t.Fatalf("held answer %s", got.RawJSON())
	}
	if ext := got.JSON.ExtraFields["stackbone"].Raw(); ext != `{"held":{"toolCallId":"h1","name":"memory_save"}}` {
		t.Fatalf("extension %q", ext)
	}

	attempts = 0
	_, err = c.Messages.New(ctx, heldParams("hello?"))
	expectError(t, err, 409, "invalid_request_error", "decision is pending")
	if attempts != 1 {
		t.Fatalf("the client tried %d times", attempts)
	}

	// Streamed: the extension rides on message_delta.
	c2 := b.client(option.WithHeader("x-stackbone-session", "s-2"))
	msg, events := stream(t, c2, heldParams("Note my allergy."))
	if msg.StopReason != "end_turn" || len(msg.Content) != 1 || msg.Content[0].Text != "Let me note that." {
		t.Fatalf("streamed held answer %+v", msg)
	}
	var ext string
	for _, ev := range events {
		if ev.Type == "message_delta" {
			var raw struct{ Stackbone json.RawMessage }
			if err := json.Unmarshal([]byte(ev.RawJSON()), &raw); err != nil {
				t.Fatal(err)
			}
			ext = string(raw.Stackbone)
		}
	}
	if ext != `{"held":{"toolCallId":"h1","name":"memory_save"}}` {
		t.Fatalf("streamed extension %q", ext)
	}
	s := c2.Messages.NewStreaming(ctx, heldParams("hello?"))
	for s.Next() {
		t.Fatalf("an event while a decision is pending: %s", s.Current().RawJSON())
	}
	expectError(t, s.Err(), 409, "invalid_request_error", "decision is pending")
}

// An error after the stream began is one error event that the client
// reports in its own error type; the text before it arrived.
func TestErrorAfterTheStreamBegan(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	// A held tool without a session cannot pause: the turn fails after its
	// text streamed.
	b.model.Script(providertest.Reply{Content: "Let me note that.", ToolCalls: []providertest.Call{
		providertest.ToolCall("h1", "memory_save", map[string]string{"content": "x"})}})
	p := params("guarded", user("Note this."))
	p.Metadata = anthropic.MetadataParam{UserID: anthropic.String("crm/7")}
	s := b.client().Messages.NewStreaming(ctx, p)
	var text string
	for s.Next() {
		ev := s.Current()
		text += ev.Delta.Text
		if ev.Type == "message_delta" || ev.Type == "message_stop" {
			t.Fatalf("%s on a failed turn", ev.Type)
		}
	}
	var apiErr *anthropic.Error
	if !errors.As(s.Err(), &apiErr) || apiErr.Type() != "invalid_request_error" || !strings.Contains(apiErr.Message, "x-stackbone-session") {
		t.Fatalf("stream error %v", s.Err())
	}
	if text != "Let me note that." {
		t.Fatalf("text before the error %q", text)
	}
}

// expectError checks an error the SDK parsed into its own type.
func expectError(t *testing.T, err error, status int, typ, msgPart string) {
	t.Helper()
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want an API error %d, got %v", status, err)
	}
	if apiErr.StatusCode != status || string(apiErr.Type()) != typ || !strings.Contains(apiErr.Message, msgPart) {
		t.Fatalf("got %d type %q message %q; want %d %q containing %q", apiErr.StatusCode, apiErr.Type(), apiErr.Message, status, typ, msgPart)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openaiRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	p := params("plain", user("hi"))
	withUser := params("plain", user("hi"))
	withUser.Metadata = anthropic.MetadataParam{UserID: anthropic.String("a")}
	withThinking := params("plain", user("hi"))
	withThinking.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
	withImage := params("plain", []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="))})
	cases := []struct {
		name     string
		client   *anthropic.Client
		params   anthropic.MessageNewParams
		opts     []option.RequestOption
		status   int
		typ, msg string
	}{
		{"wrong key", b.clientWith(option.WithAPIKey("nope")), p, nil, 401, "authentication_error", "invalid"},
		{"wrong bearer", b.bearerClient("nope"), p, nil, 401, "authentication_error", "invalid"},
		{"no scope", b.clientWith(option.WithAPIKey(readerKey)), p, nil, 403, "permission_error", "agents:run"},
		{"unknown model", b.client(), params("claude-sonnet-4-5", user("hi")), nil, 404, "not_found_error", `"claude-sonnet-4-5"`},
		{"both session headers", b.client(), p, []option.RequestOption{option.WithHeader("x-stackbone-session", "a"), option.WithHeader("x-stackbone-conversation", "b")},
			400, "invalid_request_error", "not both"},
		{"bad identities header", b.client(), p, []option.RequestOption{option.WithHeader("x-stackbone-identities", `{"phoneNumber": 4711}`)},
			400, "invalid_request_error", "must be a string"},
		{"user_id conflicts with identities", b.client(), withUser, []option.RequestOption{option.WithHeader("x-stackbone-identities", `{"customerId":"b"}`)},
			400, "invalid_request_error", "differ"},
		{"max_tokens missing", b.client(), p, []option.RequestOption{option.WithJSONDel("max_tokens")}, 400, "invalid_request_error", "max_tokens: Field required"},
		{"top_k", b.client(), p, []option.RequestOption{option.WithJSONSet("top_k", 5)}, 400, "invalid_request_error", "top_k"},
		{"thinking", b.client(), withThinking, nil, 400, "invalid_request_error", "thinking"},
		{"image block", b.client(), withImage, nil, 400, "invalid_request_error", `"image" blocks are not supported`},
		{"unknown field", b.client(), p, []option.RequestOption{option.WithJSONSet("temprature", 0.5)}, 400, "invalid_request_error", "temprature"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.client.Messages.New(ctx, tc.params, tc.opts...)
			expectError(t, err, tc.status, tc.typ, tc.msg)
		})
	}
	s := b.clientWith(option.WithAPIKey("nope")).Messages.NewStreaming(ctx, p)
	for s.Next() {
	}
	expectError(t, s.Err(), 401, "authentication_error", "invalid")
	if n := len(b.model.ChatRequests()); n != 0 {
		t.Fatalf("refused requests reached the model %d times", n)
	}
	// Harmless fields are accepted.
	ok := params("plain", user("hi"))
	ok.ServiceTier = anthropic.MessageNewParamsServiceTierAuto
	ok.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: anthropic.Bool(true)}}
	ok.Tools = []anthropic.ToolUnionParam{weather}
	ok.StopSequences = []string{"END"}
	// This SDK no longer models temperature; older clients still send it.
	if _, err := b.client().Messages.New(ctx, ok, option.WithJSONSet("temperature", 0.2)); err != nil {
		t.Fatalf("harmless fields: %v", err)
	}
}

// The provider failing is a 502 api_error; the message says what failed.
func TestProviderFailure(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Status: 500, Message: "boom"}, providertest.Reply{Status: 500, Message: "boom"})
	_, err := b.client().Messages.New(ctx, params("plain", user("hi")))
	expectError(t, err, 502, "api_error", "provider")
	s := b.client().Messages.NewStreaming(ctx, params("plain", user("hi")))
	for s.Next() {
	}
	expectError(t, s.Err(), 502, "api_error", "provider")
}

// Raw HTTP: the error body is exactly Anthropic's shape, and a request with
// no key at all is a 401.
func TestErrorShape(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	for _, tc := range []struct {
		key    string
		status int
		typ    string
	}{{"", 401, "authentication_error"}, {testKey, 400, "invalid_request_error"}} {
		req, _ := http.NewRequest("POST", b.url+"/anthropic/v1/messages", strings.NewReader(`{"model":"plain","messages":[{"role":"user","content":"hi"}]}`))
		if tc.key != "" {
			req.Header.Set("x-api-key", tc.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body struct {
			Type  string            `json:"type"`
			Error map[string]string `json:"error"`
		}
		if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != tc.status || body.Type != "error" || body.Error["type"] != tc.typ ||
			body.Error["message"] == "" || len(body.Error) != 2 {
			t.Fatalf("%d %s", resp.StatusCode, raw)
		}
	}
}

// Sampling options pass through to the model.
func TestSamplingOptionsReachTheModel(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "ok"})
	p := params("plain", user("hi"))
	p.MaxTokens, p.StopSequences = 64, []string{"END"}
	// This SDK no longer models temperature and top_p; older clients send them.
	if _, err := b.client().Messages.New(ctx, p, option.WithJSONSet("temperature", 0.25), option.WithJSONSet("top_p", 0.5)); err != nil {
		t.Fatal(err)
	}
	r := b.model.ChatRequests()[0]
	if r.Temperature == 0 && r.TopP == 0 && r.MaxTokens == 0 && r.MaxCompletionTokens == 0 && len(r.Stop) == 0 {
		t.Skip("waiting for the runtime to pass TurnRequest.Options to the model (agent/turn.go callModel sends none of them)")
	}
	if r.Temperature != 0.25 || r.TopP != 0.5 || max(r.MaxTokens, r.MaxCompletionTokens) != 64 || !slices.Equal(r.Stop, []string{"END"}) {
		t.Fatalf("the model received temperature %v top_p %v max_tokens %v/%v stop %q", r.Temperature, r.TopP, r.MaxTokens, r.MaxCompletionTokens, r.Stop)
	}
}
