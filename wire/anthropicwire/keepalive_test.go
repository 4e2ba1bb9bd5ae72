package anthropicwire_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/wire/wiretest"
)

// While the provider is slow to answer, the stream carries ping events
// after message_start, as Anthropic's API does; the official SDK reads
// them and assembles the answer that follows.
func TestStreamPingsWhileTheProviderIsSlow(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, agentsYAML+"http: {streamKeepAlive: 100ms}\n")
	b.Model.Script(providertest.Reply{Content: "Sorry for the wait.", Delay: time.Second})
	tap := &wiretest.Tap{}
	c := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(b.URL+"/anthropic/"),
		option.WithAPIKey(testKey), option.WithMaxRetries(0), option.WithHTTPClient(tap.Client()))
	msg, events := stream(t, &c, params("plain", user("Hello?")))
	if len(msg.Content) != 1 || msg.Content[0].Text != "Sorry for the wait." || msg.StopReason != "end_turn" {
		t.Fatalf("the SDK assembled %s", msg.RawJSON())
	}
	// The SDK reads the pings and skips them: they are on the wire only.
	if got := types(events); slices.Contains(got, "ping") || got[0] != "message_start" {
		t.Fatalf("events the SDK passed on %q", got)
	}
	raw := tap.String()
	const ping = "event: ping\ndata: {\"type\":\"ping\"}\n\n"
	pings := strings.Count(raw, ping)
	start, first, text := strings.Index(raw, "event: message_start"), strings.Index(raw, ping), strings.Index(raw, "event: content_block_start")
	if pings < 2 || start < 0 || first < start || text < first {
		t.Fatalf("%d pings: want message_start, pings while the provider is silent, then the answer:\n%s", pings, raw)
	}
	t.Logf("%d pings while the provider was silent", pings)
}
