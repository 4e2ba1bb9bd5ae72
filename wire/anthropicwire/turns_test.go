package anthropicwire_test

import (
	"net/http"
	"slices"
	"testing"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/uuid"

	"github.com/stackbone/box/provider/providertest"
)

// The texts of two model steps around a box-run tool are two text blocks,
// plain and streamed alike, as the provider sent them; a resent
// conversation on a session (Anthropic's documented loop) adds only what is
// new. Every answer names its run.
func TestStepsAroundABoxToolAreTwoBlocks(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	check := providertest.Reply{Content: "Let me check your saved details.", ToolCalls: []providertest.Call{providertest.ToolCall("call_m1", "memory_read", map[string]any{})}}
	answer := providertest.Reply{Content: "I have nothing saved about you yet."}
	b.model.Script(check, answer, check, answer)
	c := b.client(option.WithHeader("x-stackbone-session", "steps-1"))
	want := []string{"Let me check your saved details.", "I have nothing saved about you yet."}
	texts := func(m anthropic.Message) []string {
		var out []string
		for _, bl := range m.Content {
			if bl.Type != "text" {
				t.Fatalf("block %s", bl.RawJSON())
			}
			out = append(out, bl.Text)
		}
		return out
	}
	p := params("support", user("What do you know about me?"))
	p.Metadata.UserID = anthropic.String("crm/1")
	var resp *http.Response
	got, err := c.Messages.New(ctx, p, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(texts(*got), want) {
		t.Fatalf("plain blocks %s", got.RawJSON())
	}
	if _, err := uuid.Parse(resp.Header.Get("x-stackbone-run-id")); err != nil {
		t.Fatalf("run id header %q", resp.Header.Get("x-stackbone-run-id"))
	}

	p.Messages = append(p.Messages, got.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And now?")))
	msg, events := stream(t, c, p, option.WithResponseInto(&resp))
	if !slices.Equal(texts(msg), want) {
		t.Fatalf("streamed blocks %+v (%q)", msg.Content, compact(types(events)))
	}
	if _, err := uuid.Parse(resp.Header.Get("x-stackbone-run-id")); err != nil {
		t.Fatalf("run id header %q", resp.Header.Get("x-stackbone-run-id"))
	}
	wantSent := []string{"system: You help customers.", "user: What do you know about me?", "assistant: " + want[0], `tool: {"facts":[],"recentCalls":[]}`,
		"assistant: " + want[1], "user: And now?"}
	if got := b.sent(2); !slices.Equal(got, wantSent) {
		t.Fatalf("the model received\n%q\nwant\n%q", got, wantSent)
	}
}

// A route the wire does not serve (the SDK's token counting) answers
// Anthropic's error shape, naming the route it serves.
func TestUnknownRouteNamesTheRoute(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	_, err := b.client().Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "support", Messages: user("Hi")})
	expectError(t, err, 404, "not_found_error", "POST /anthropic/v1/messages")
}
