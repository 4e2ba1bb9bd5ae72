package openaiwire_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
)

// checkText and readMemory are a turn whose model writes, calls a tool the
// box runs itself, and writes again.
var (
	checkText  = "Let me check your saved details."
	answerText = "I have nothing saved about you yet."
	checkStep  = providertest.Reply{Content: checkText, ToolCalls: []providertest.Call{providertest.ToolCall("call_m1", "memory_read", map[string]any{})}}
	answerStep = providertest.Reply{Content: answerText}
)

// The texts of two model steps around a box-run tool stay apart: one
// content with the steps separated by a blank line, plain and streamed
// alike, and the session keeps each step as the model produced it. Every
// answer names its run.
func TestStepsAroundABoxToolStayApart(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(checkStep, answerStep, checkStep, answerStep)
	c := b.client(option.WithHeader("x-stackbone-session", "steps-1"))
	want := checkText + "\n\n" + answerText

	var resp *http.Response
	got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "support", User: openai.String("crm/1"), Messages: user("What do you know about me?")},
		option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if text := got.Choices[0].Message.Content; text != want {
		t.Fatalf("plain text %q, want %q", text, want)
	}
	b.checkRun(resp, "succeeded")

	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "support", User: openai.String("crm/1"), Messages: user("And now?")},
		option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if text := acc.Choices[0].Message.Content; text != want {
		t.Fatalf("streamed text %q, want %q", text, want)
	}
	b.checkRun(resp, "succeeded")

	// The second turn's model saw the first turn's steps apart.
	var assistants []string
	for _, m := range b.model.ChatRequests()[2].Messages {
		if m.Role == "assistant" {
			assistants = append(assistants, m.Content)
		}
	}
	if !slices.Equal(assistants, []string{checkText, answerText}) {
		t.Fatalf("the session's assistant messages %q", assistants)
	}
}

// checkRun asserts that an answer names its run and the run has status.
func (b *box) checkRun(resp *http.Response, status string) {
	b.t.Helper()
	id := resp.Header.Get("x-stackbone-run-id")
	if _, err := uuid.Parse(id); err != nil {
		b.t.Fatalf("x-stackbone-run-id %q: %v", id, err)
	}
	poll.Until(b.t, "the run to be recorded", 30*time.Second, func() bool { return b.box.RunStatus(b.t, id) != "" })
	if got := b.box.RunStatus(b.t, id); got != status {
		b.t.Fatalf("run %s is %s, want %s", id, got, status)
	}
}

// A client's own tool loop on a session resends the whole conversation:
// the box appends only what is new, so the model sees each message once,
// and a resent history that contradicts the session is a 400.
func TestSessionRecognisesAResentConversation(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(checkStep, answerStep,
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_w1", "get_weather", map[string]string{"city": "Oslo"})}},
		providertest.Reply{Content: "Rain in Oslo."})
	c := b.client(option.WithHeader("x-stackbone-session", "loop-1"))
	tools := []openai.ChatCompletionToolUnionParam{weather}
	msgs := user("What do you know about me?")
	got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "support", User: openai.String("crm/1"), Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, got.Choices[0].Message.ToParam(), openai.UserMessage("Weather in Oslo?"))
	got, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "support", User: openai.String("crm/1"), Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("answer %s", got.RawJSON())
	}
	msgs = append(msgs, got.Choices[0].Message.ToParam(), openai.ToolMessage("rain, 8C", "call_w1"))
	got, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "support", User: openai.String("crm/1"), Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "Rain in Oslo." {
		t.Fatalf("answer %s", got.RawJSON())
	}
	want := []string{"system: You help customers.", "user: What do you know about me?", "assistant: " + checkText, "tool: {\"facts\":[],\"recentCalls\":[]}",
		"assistant: " + answerText, "user: Weather in Oslo?", "assistant: ", "tool: rain, 8C"}
	if got := b.sent(-1); !slices.Equal(got, want) {
		t.Fatalf("the model received\n%q\nwant\n%q", got, want)
	}

	// A history that departs from the session's is refused, and nothing
	// reaches the model.
	n := len(b.model.ChatRequests())
	bad := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What do you know about me?"), openai.AssistantMessage("Something else."), openai.UserMessage("Hm?"),
		openai.AssistantMessage("x"), openai.UserMessage("y"), openai.AssistantMessage("z"), openai.UserMessage("w")}
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "support", User: openai.String("crm/1"), Messages: bad, Tools: tools})
	expectError(t, err, 400, "invalid_request_error", "invalid_request", "differs from the session's history")
	if len(b.model.ChatRequests()) != n {
		t.Fatal("a contradicting history reached the model")
	}
}

// A client that stops a streamed turn leaves the question in the session,
// with what was streamed of the answer marked cut; the next turn needs only
// the new message.
func TestStoppedTurnIsKeptCut(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Order A-1001 left the warehouse this morning and ships by courier.", ChunkDelay: 200e6},
		providertest.Reply{Content: "Yes, I am here."})
	c := b.client(option.WithHeader("x-stackbone-session", "stop-1"))
	sctx, cancel := context.WithCancel(ctx)
	var resp *http.Response
	s := c.Chat.Completions.NewStreaming(sctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("Where is order A-1001?")}, option.WithResponseInto(&resp))
	var streamed strings.Builder
	for s.Next() {
		if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			streamed.WriteString(ch.Choices[0].Delta.Content)
			break
		}
	}
	cancel()
	s.Close()
	if streamed.Len() == 0 {
		t.Fatalf("no text before the stop: %v", s.Err())
	}
	b.checkRun(resp, "cancelled")
	poll.Until(t, "the session to be idle", 30*time.Second, func() bool { return b.box.SessionIdle(t) })

	got, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("Are you there?")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "Yes, I am here." {
		t.Fatalf("answer %s", got.RawJSON())
	}
	sent := b.sent(-1)
	if len(sent) != 4 || sent[1] != "user: Where is order A-1001?" || sent[3] != "user: Are you there?" ||
		!strings.HasPrefix(sent[2], "assistant: "+streamed.String()) || !strings.HasSuffix(sent[2], agent.CutMarker) ||
		strings.Contains(sent[2], "courier") {
		t.Fatalf("the model received %q", sent)
	}
}
