package openaiwire_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/stackbone/box/provider/providertest"
)

var ctx = context.Background()

func user(text string) []openai.ChatCompletionMessageParamUnion {
	return []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}
}

// stream runs a streamed completion and returns the accumulated completion
// and the chunks as received.
func stream(t *testing.T, c *openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) (openai.ChatCompletionAccumulator, []openai.ChatCompletionChunk) {
	t.Helper()
	s := c.Chat.Completions.NewStreaming(ctx, p, opts...)
	var acc openai.ChatCompletionAccumulator
	var chunks []openai.ChatCompletionChunk
	for s.Next() {
		ch := s.Current()
		chunks = append(chunks, ch)
		if !acc.AddChunk(ch) {
			t.Fatalf("the accumulator refused chunk %d: %s", len(chunks), ch.RawJSON())
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return acc, chunks
}

func TestModelsListTheAgents(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	c := b.client()
	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		if m.Object != "model" || m.OwnedBy != "stackbone" {
			t.Fatalf("model %+v", m)
		}
		ids = append(ids, m.ID)
	}
	if want := []string{"guarded", "phone", "plain", "support"}; !slices.Equal(ids, want) {
		t.Fatalf("models %q, want %q", ids, want)
	}
	m, err := c.Models.Get(ctx, "plain")
	if err != nil || m.ID != "plain" {
		t.Fatalf("get: %+v %v", m, err)
	}
	_, err = c.Models.Get(ctx, "nobody")
	expectError(t, err, 404, "invalid_request_error", "model_not_found", "nobody")
}

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

	got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("Where is order A-1001?")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || got.Model != "plain" || len(got.Choices) != 1 {
		t.Fatalf("completion %s", got.RawJSON())
	}
	ch := got.Choices[0]
	if ch.Message.Content != "Order A-1001 ships tomorrow." || ch.FinishReason != "stop" || ch.Message.Role != "assistant" || len(ch.Message.ToolCalls) != 0 {
		t.Fatalf("choice %s", ch.RawJSON())
	}
	if got.Usage.PromptTokens != 12 || got.Usage.CompletionTokens != 7 || got.Usage.TotalTokens != 19 {
		t.Fatalf("usage %s", got.Usage.RawJSON())
	}
	if _, ok := got.JSON.ExtraFields["stackbone"]; ok {
		t.Fatalf("extension on a plain answer: %s", got.RawJSON())
	}

	acc, chunks := stream(t, c, openai.ChatCompletionNewParams{
		Model: "plain", Messages: user("Can I still return it?"),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	if text := acc.Choices[0].Message.Content; text != "Yes, you can return it within 30 days." {
		t.Fatalf("streamed text %q", text)
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Usage.PromptTokens != 30 || acc.Usage.CompletionTokens != 9 || acc.Usage.TotalTokens != 39 {
		t.Fatalf("streamed finish %q usage %+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	if len(chunks) < 3 || chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Fatalf("first chunk %s", chunks[0].RawJSON())
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage.TotalTokens != 39 {
		t.Fatalf("usage chunk %s", last.RawJSON())
	}
	for _, ch := range chunks {
		if ch.Object != "chat.completion.chunk" || ch.ID != chunks[0].ID || ch.Model != "plain" {
			t.Fatalf("chunk %s", ch.RawJSON())
		}
	}

	// The box asks the model the way the client asked the box.
	if reqs := b.model.ChatRequests(); len(reqs) != 2 || reqs[0].Stream || !reqs[1].Stream {
		t.Fatalf("upstream requests streamed: %v, want plain then streamed", []bool{reqs[0].Stream, reqs[len(reqs)-1].Stream})
	}
	want := []string{"system: You are plain.", "user: Where is order A-1001?", "assistant: Order A-1001 ships tomorrow.", "user: Can I still return it?"}
	if got := b.sent(1); !slices.Equal(got, want) {
		t.Fatalf("the model received %q, want %q", got, want)
	}
}

// Without a session the client sends the whole conversation, system and
// developer messages and text parts included; without include_usage no usage
// chunk comes.
func TestStatelessConversation(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Bonjour."})
	c := b.client()
	acc, chunks := stream(t, c, openai.ChatCompletionNewParams{Model: "plain", Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("Answer in French."),
		openai.DeveloperMessage("Be brief."),
		openai.UserMessage("Hi"),
		openai.AssistantMessage("Hello!"),
		openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Say hello"), openai.TextContentPart("in French.")}),
	}})
	if acc.Choices[0].Message.Content != "Bonjour." {
		t.Fatalf("text %q", acc.Choices[0].Message.Content)
	}
	for _, ch := range chunks {
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens != 0 {
			t.Fatalf("usage without include_usage: %s", ch.RawJSON())
		}
	}
	want := []string{"system: You are plain.", "system: Answer in French.", "system: Be brief.", "user: Hi", "assistant: Hello!", "user: Say hello\nin French."}
	if got := b.sent(0); !slices.Equal(got, want) {
		t.Fatalf("the model received %q, want %q", got, want)
	}
}

var weather = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("The weather in a city"),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []string{"city"},
	},
})

// A client tool round-trips: the model calls it, the client sees the call,
// runs it, sends the result, and the model receives it.
func TestClientToolRoundTrip(t *testing.T) {
	t.Parallel()
	call := providertest.Reply{Content: "Let me check.", ToolCalls: []providertest.Call{
		providertest.ToolCall("call_w1", "get_weather", map[string]string{"city": "Madrid"}),
		providertest.ToolCall("call_w2", "get_weather", map[string]string{"city": "Oslo"}),
	}}
	answer := providertest.Reply{Content: "Sunny in Madrid, rain in Oslo."}

	t.Run("plain, stateless", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		b.model.Script(call, answer)
		c := b.client()
		msgs := user("Weather in Madrid and Oslo?")
		got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: msgs, Tools: []openai.ChatCompletionToolUnionParam{weather}})
		if err != nil {
			t.Fatal(err)
		}
		m := got.Choices[0].Message
		if got.Choices[0].FinishReason != "tool_calls" || m.Content != "Let me check." || len(m.ToolCalls) != 2 {
			t.Fatalf("tool call answer %s", got.RawJSON())
		}
		if tc := m.ToolCalls[0]; tc.ID != "call_w1" || tc.Type != "function" || tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Madrid"}` {
			t.Fatalf("tool call %s", tc.RawJSON())
		}
		if got := b.toolsSent(0); !slices.Equal(got, []string{"get_weather"}) {
			t.Fatalf("tools offered %q", got)
		}
		if p := b.model.ChatRequests()[0].Tools[0].Function; p.Description != "The weather in a city" || !strings.Contains(string(mustJSON(t, p.Parameters)), `"required":["city"]`) {
			t.Fatalf("tool definition sent %+v", p)
		}
		msgs = append(msgs, m.ToParam(), openai.ToolMessage("sunny, 24C", "call_w1"), openai.ToolMessage("rain, 8C", "call_w2"))
		got, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: msgs, Tools: []openai.ChatCompletionToolUnionParam{weather}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Choices[0].Message.Content != "Sunny in Madrid, rain in Oslo." || got.Choices[0].FinishReason != "stop" {
			t.Fatalf("answer %s", got.RawJSON())
		}
		checkToolResultsSent(t, b)
	})

	t.Run("streamed, session", func(t *testing.T) {
		t.Parallel()
		b := newBox(t)
		b.model.Script(call, answer)
		c := b.client(option.WithHeader("x-stackbone-session", "weather-1"))
		acc, chunks := stream(t, c, openai.ChatCompletionNewParams{Model: "plain", Messages: user("Weather in Madrid and Oslo?"), Tools: []openai.ChatCompletionToolUnionParam{weather}})
		m := acc.Choices[0].Message
		if acc.Choices[0].FinishReason != "tool_calls" || m.Content != "Let me check." || len(m.ToolCalls) != 2 {
			t.Fatalf("accumulated %+v", acc.Choices[0])
		}
		for i, want := range []string{`{"city":"Madrid"}`, `{"city":"Oslo"}`} {
			if tc := m.ToolCalls[i]; tc.Function.Arguments != want || tc.Function.Name != "get_weather" || tc.ID != []string{"call_w1", "call_w2"}[i] {
				t.Fatalf("tool call %d: %+v", i, tc)
			}
		}
		var argPieces int
		for _, ch := range chunks {
			for _, ch := range ch.Choices {
				for _, tc := range ch.Delta.ToolCalls {
					if tc.ID == "" && tc.Function.Arguments != "" {
						argPieces++
					}
				}
			}
		}
		if argPieces < 2 {
			t.Fatalf("arguments were not streamed in pieces (%d pieces)", argPieces)
		}
		// With a session only the results go back.
		got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Tools: []openai.ChatCompletionToolUnionParam{weather},
			Messages: []openai.ChatCompletionMessageParamUnion{openai.ToolMessage("sunny, 24C", "call_w1"), openai.ToolMessage("rain, 8C", "call_w2")}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Choices[0].Message.Content != "Sunny in Madrid, rain in Oslo." {
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
	if asst.Role != "assistant" || asst.Content != "Let me check." || len(asst.ToolCalls) != 2 || asst.ToolCalls[1].ID != "call_w2" ||
		asst.ToolCalls[1].Function.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("assistant message sent %+v", asst)
	}
	if r1.Role != "tool" || r1.ToolCallID != "call_w1" || r1.Content != "sunny, 24C" || r2.ToolCallID != "call_w2" || r2.Content != "rain, 8C" {
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

// user is the scalar customer identity and x-stackbone-identities the map:
// both select the person, as the memory tools offered to the model show.
func TestIdentities(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openaiRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	c := b.client()
	ask := func(model string, p openai.ChatCompletionNewParams, opts ...option.RequestOption) []string {
		t.Helper()
		p.Model, p.Messages = model, user("hi")
		if _, err := c.Chat.Completions.New(ctx, p, opts...); err != nil {
			t.Fatal(err)
		}
		return b.toolsSent(-1)
	}
	if got := ask("support", openai.ChatCompletionNewParams{}); len(got) != 0 {
		t.Fatalf("without identity the model was offered %q", got)
	}
	if got := ask("support", openai.ChatCompletionNewParams{User: openai.String("crm/7")}); !slices.Equal(got, []string{"memory_read"}) {
		t.Fatalf("with user the model was offered %q", got)
	}
	if got := ask("phone", openai.ChatCompletionNewParams{}, option.WithHeader("x-stackbone-identities", `{"phoneNumber":"+4915112345678"}`)); !slices.Equal(got, []string{"memory_read"}) {
		t.Fatalf("with the identities header the model was offered %q", got)
	}
	// A phone-shaped user never supplies phoneNumber.
	if got := ask("phone", openai.ChatCompletionNewParams{User: openai.String("+4915112345678")}); len(got) != 0 {
		t.Fatalf("a phone-shaped user supplied phoneNumber: %q", got)
	}

	// Two customers on one session key get two sessions.
	c2 := b.client(option.WithHeader("x-stackbone-session", "shared-key"))
	for _, who := range []string{"crm/1", "crm/2"} {
		if _, err := c2.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "support", User: openai.String(who), Messages: user("I am " + who)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := b.sent(-1), []string{"system: You help customers.", "user: I am crm/2"}; !slices.Equal(got, want) {
		t.Fatalf("the second customer's turn sent %q, want %q", got, want)
	}
}

// A held tool answers the text so far with finish_reason stop and the
// stackbone.held extension; the session then answers 409 until a person
// decides.
func TestHeldToolAndDecisionPending(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	save := providertest.Reply{Content: "Let me note that.", ToolCalls: []providertest.Call{
		providertest.ToolCall("h1", "memory_save", map[string]string{"content": "Allergic to nuts."})}}
	b.model.Script(save, save)
	// Retries on: the 409 tells the client not to retry.
	var attempts int
	c := b.client(option.WithHeader("x-stackbone-session", "s-1"), option.WithMaxRetries(2),
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			attempts++
			return next(r)
		}))
	p := openai.ChatCompletionNewParams{Model: "guarded", User: openai.String("crm/7"), Messages: user("I am allergic to nuts.")}

	got, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].FinishReason != "stop" || got.Choices[0].Message.Content != "Let me note that." || len(got.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("held answer %s", got.RawJSON())
	}
	if ext := got.JSON.ExtraFields["stackbone"].Raw(); ext != `{"held":{"toolCallId":"h1","name":"memory_save"}}` {
		t.Fatalf("extension %q", ext)
	}

	p.Messages = user("hello?")
	attempts = 0
	_, err = c.Chat.Completions.New(ctx, p)
	expectError(t, err, 409, "invalid_request_error", "decision_pending", "decision is pending")
	if attempts != 1 {
		t.Fatalf("the client tried %d times", attempts)
	}

	// Streamed: the extension rides on the finish chunk.
	c2 := b.client(option.WithHeader("x-stackbone-session", "s-2"))
	acc, chunks := stream(t, c2, openai.ChatCompletionNewParams{Model: "guarded", User: openai.String("crm/7"), Messages: user("Note my allergy.")})
	if acc.Choices[0].FinishReason != "stop" || acc.Choices[0].Message.Content != "Let me note that." || len(acc.Choices[0].Message.ToolCalls) != 0 {
		t.Fatalf("streamed held answer %+v", acc.Choices[0])
	}
	var ext string
	for _, ch := range chunks {
		if len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			ext = ch.JSON.ExtraFields["stackbone"].Raw()
		}
	}
	if ext != `{"held":{"toolCallId":"h1","name":"memory_save"}}` {
		t.Fatalf("streamed extension %q", ext)
	}
	s := c2.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "guarded", User: openai.String("crm/7"), Messages: user("hello?")})
	for s.Next() {
		t.Fatalf("a chunk while a decision is pending: %s", s.Current().RawJSON())
	}
	expectError(t, s.Err(), 409, "invalid_request_error", "decision_pending", "decision is pending")
}

// An error after the stream began is one error event that the client
// reports; the text before it arrived.
func TestErrorAfterTheStreamBegan(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	// A held tool without a session cannot pause: the turn fails after its
	// text streamed.
	b.model.Script(providertest.Reply{Content: "Let me note that.", ToolCalls: []providertest.Call{
		providertest.ToolCall("h1", "memory_save", map[string]string{"content": "x"})}})
	s := b.client().Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "guarded", User: openai.String("crm/7"), Messages: user("Note this.")})
	var text string
	for s.Next() {
		for _, ch := range s.Current().Choices {
			text += ch.Delta.Content
			if ch.FinishReason != "" {
				t.Fatalf("finish chunk on a failed turn: %s", s.Current().RawJSON())
			}
		}
	}
	var se *ssestream.StreamError
	if !errors.As(s.Err(), &se) {
		t.Fatalf("stream error %v", s.Err())
	}
	var body struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal(se.Event.Data, &body); err != nil || body.Error.Type != "invalid_request_error" || body.Error.Code != "invalid_request" ||
		!strings.Contains(body.Error.Message, "x-stackbone-session") {
		t.Fatalf("error event %s", se.Event.Data)
	}
	if text != "Let me note that." {
		t.Fatalf("text before the error %q", text)
	}
}

// expectError checks an error the SDK parsed into its own type.
func expectError(t *testing.T, err error, status int, typ, code, msgPart string) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want an API error %d, got %v", status, err)
	}
	if apiErr.StatusCode != status || apiErr.Type != typ || apiErr.Code != code || !strings.Contains(apiErr.Message, msgPart) {
		t.Fatalf("got %d type %q code %q message %q; want %d %q %q containing %q", apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message, status, typ, code, msgPart)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Respond(func(*openaiRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	p := openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi")}
	cases := []struct {
		name               string
		client             *openai.Client
		params             openai.ChatCompletionNewParams
		opts               []option.RequestOption
		status             int
		typ, code, message string
	}{
		{"no key", b.client(option.WithHeaderDel("Authorization")), p, nil, 401, "authentication_error", "invalid_api_key", "Bearer"},
		{"wrong key", b.client(option.WithAPIKey("nope")), p, nil, 401, "authentication_error", "invalid_api_key", "invalid"},
		{"no scope", b.client(option.WithAPIKey(readerKey)), p, nil, 403, "permission_error", "insufficient_scope", "agents:run"},
		{"unknown model", b.client(), openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: user("hi")}, nil, 404, "invalid_request_error", "model_not_found", `"gpt-4o"`},
		{"both session headers", b.client(), p, []option.RequestOption{option.WithHeader("x-stackbone-session", "a"), option.WithHeader("x-stackbone-conversation", "b")},
			400, "invalid_request_error", "invalid_headers", "not both"},
		{"bad identities header", b.client(), p, []option.RequestOption{option.WithHeader("x-stackbone-identities", `{"phoneNumber": 4711}`)},
			400, "invalid_request_error", "invalid_identities", "must be a string"},
		{"identities header not JSON", b.client(), p, []option.RequestOption{option.WithHeader("x-stackbone-identities", `phoneNumber=1`)},
			400, "invalid_request_error", "invalid_identities", "JSON object"},
		{"user conflicts with identities", b.client(), openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi"), User: openai.String("a")},
			[]option.RequestOption{option.WithHeader("x-stackbone-identities", `{"customerId":"b"}`)}, 400, "invalid_request_error", "invalid_identities", "differ"},
		{"empty user", b.client(), openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi")}, []option.RequestOption{option.WithJSONSet("user", "")},
			400, "invalid_request_error", "invalid_identities", "must not be empty"},
		{"n above 1", b.client(), openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi"), N: openai.Int(2)}, nil, 400, "invalid_request_error", "", "n must be 1"},
		{"tool_choice required", b.client(), openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi"), Tools: []openai.ChatCompletionToolUnionParam{weather},
			ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}}, nil, 400, "invalid_request_error", "", "tool_choice"},
		{"structured output", b.client(), openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi"),
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}, nil, 400, "invalid_request_error", "", "response_format"},
		{"unknown field", b.client(), p, []option.RequestOption{option.WithJSONSet("temprature", 0.5)}, 400, "invalid_request_error", "", `unknown field "temprature"`},
		{"image part", b.client(), openai.ChatCompletionNewParams{Model: "plain", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(
			[]openai.ChatCompletionContentPartUnionParam{openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/a.png"})})}},
			nil, 400, "invalid_request_error", "", "only text content parts"},
		{"no messages", b.client(), openai.ChatCompletionNewParams{Model: "plain"}, nil, 400, "invalid_request_error", "", "messages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.client.Chat.Completions.New(ctx, tc.params, tc.opts...)
			expectError(t, err, tc.status, tc.typ, tc.code, tc.message)
		})
	}
	// A bad request is refused the same way when streamed.
	s := b.client(option.WithAPIKey("nope")).Chat.Completions.NewStreaming(ctx, p)
	for s.Next() {
	}
	expectError(t, s.Err(), 401, "authentication_error", "invalid_api_key", "invalid")
	// Refused fields never reached the model; harmless ones are accepted.
	if n := len(b.model.ChatRequests()); n != 0 {
		t.Fatalf("refused requests reached the model %d times", n)
	}
	_, err := b.client().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi"), N: openai.Int(1), Seed: openai.Int(7),
		ParallelToolCalls: openai.Bool(false), Metadata: shared.Metadata{"ticket": "T-1"}, Store: openai.Bool(false),
		ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")}, Tools: []openai.ChatCompletionToolUnionParam{weather}})
	if err != nil {
		t.Fatalf("harmless fields: %v", err)
	}
}

// The provider failing is a 502 in OpenAI's shape; the message says what
// failed.
func TestProviderFailure(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Status: 500, Message: "boom"}, providertest.Reply{Status: 500, Message: "boom"})
	_, err := b.client().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi")})
	expectError(t, err, 502, "server_error", "provider_error", "provider")
	s := b.client().Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi")})
	for s.Next() {
	}
	expectError(t, s.Err(), 502, "server_error", "provider_error", "provider")
}

// Raw HTTP: the error body is exactly OpenAI's shape, and 401 says how to
// authenticate.
func TestErrorShape(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	req, _ := http.NewRequest("POST", b.url+"/openai/v1/chat/completions", strings.NewReader(`{"model":"plain","messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]map[string]any
	if err := json.Unmarshal(raw, &body); err != nil || resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	e := body["error"]
	if len(body) != 1 || len(e) != 4 || e["type"] != "invalid_request_error" || e["param"] != "messages" || e["code"] != nil {
		t.Fatalf("error body %s", raw)
	}
	resp, err = http.Get(b.url + "/openai/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("models without a key: %d %v", resp.StatusCode, resp.Header)
	}
}

// Sampling options pass through to the model.
func TestSamplingOptionsReachTheModel(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "ok"})
	_, err := b.client().Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("hi"),
		Temperature: openai.Float(0.25), TopP: openai.Float(0.5), MaxCompletionTokens: openai.Int(64),
		Stop: openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"END"}}})
	if err != nil {
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
