package anthropicwire_test

import (
	"encoding/json"
	"strings"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
)

// A provider that reports usage on every chunk (continuousUsage) is asked
// for it, and message_start carries the input tokens it reported for the
// turn's first model step; message_delta carries the turn's totals.
func TestMessageStartReportsInputTokens(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, "providers:\n  openai: {continuousUsage: true}\n"+agentsYAML)
	c := (&box{t: t, url: b.URL, model: b.Model, pool: b.Pool}).client()

	b.Model.Script(providertest.Reply{Content: "Order A-1001 ships tomorrow.", PromptTokens: 1234, CompletionTokens: 7})
	msg, events := stream(t, c, params("plain", user("Where is order A-1001?")))
	if len(events) == 0 || events[0].Type != "message_start" {
		t.Fatalf("events %q", types(events))
	}
	if got := events[0].Message.Usage.InputTokens; got != 1234 {
		t.Fatalf("message_start input_tokens %d, want the provider's 1234: %s", got, events[0].RawJSON())
	}
	if msg.Usage.InputTokens != 1234 || msg.Usage.OutputTokens != 7 {
		t.Fatalf("accumulated usage %+v", msg.Usage)
	}
	var sent struct {
		StreamOptions map[string]bool `json:"stream_options"`
	}
	if err := json.Unmarshal(b.Model.Requests()[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	if !sent.StreamOptions["include_usage"] || !sent.StreamOptions["continuous_usage_stats"] {
		t.Fatalf("the provider was asked %v, want usage on every chunk", sent.StreamOptions)
	}

	// Two steps around a box tool: message_start has the first step's input
	// tokens, message_delta the sum of both steps.
	b.Model.Script(
		providertest.Reply{Content: "Let me check.", ToolCalls: []providertest.Call{providertest.ToolCall("call_m1", "memory_read", map[string]any{})},
			PromptTokens: 300, CompletionTokens: 4},
		providertest.Reply{Content: "Nothing saved yet.", PromptTokens: 350, CompletionTokens: 5},
	)
	p := params("support", user("What do you know about me?"))
	p.Metadata.UserID = anthropic.String("crm/2")
	msg, events = stream(t, c, p)
	if got := events[0].Message.Usage.InputTokens; got != 300 {
		t.Fatalf("message_start input_tokens %d, want the first step's 300", got)
	}
	if msg.Usage.InputTokens != 650 || msg.Usage.OutputTokens != 9 {
		t.Fatalf("turn usage %+v, want 650 in and 9 out", msg.Usage)
	}
}

// A provider that reports usage only when a step ends (OpenAI's own API)
// is asked for nothing more; the stream is not held back for it, so
// message_start reports 0 when the first step writes text, and the first
// step's figures when that step only ran a box tool.
func TestMessageStartWithUsageAtTheEnd(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	c := b.client(option.WithHeader("x-stackbone-session", "usage-end"))
	b.model.Script(providertest.Reply{Content: "Hello there.", PromptTokens: 77, CompletionTokens: 3})
	msg, events := stream(t, c, params("plain", user("Hi")))
	if got := events[0].Message.Usage.InputTokens; got != 0 {
		t.Fatalf("message_start input_tokens %d before the provider reported any", got)
	}
	if msg.Usage.InputTokens != 77 {
		t.Fatalf("accumulated usage %+v, want message_delta's 77", msg.Usage)
	}
	if body := string(b.model.Requests()[0].Body); strings.Contains(body, "continuous_usage_stats") {
		t.Fatalf("asked a provider without continuousUsage for usage on every chunk: %s", body)
	}

	b.model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_m2", "memory_read", map[string]any{})}, PromptTokens: 210, CompletionTokens: 2},
		providertest.Reply{Content: "Nothing saved yet.", PromptTokens: 260, CompletionTokens: 5},
	)
	p := params("support", user("What do you know about me?"))
	p.Metadata.UserID = anthropic.String("crm/3")
	msg, events = stream(t, b.client(), p)
	if got := events[0].Message.Usage.InputTokens; got != 210 {
		t.Fatalf("message_start input_tokens %d, want the box-tool step's 210", got)
	}
	if msg.Usage.InputTokens != 470 {
		t.Fatalf("turn usage %+v, want 470 in", msg.Usage)
	}
}
