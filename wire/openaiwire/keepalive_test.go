package openaiwire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/wire/wiretest"
)

// keepAliveYAML is agentsYAML with keep-alives every 100 ms.
const keepAliveYAML = agentsYAML + "http: {streamKeepAlive: 100ms}\n"

// stalled is a provider that says nothing for a second, then answers.
var stalled = providertest.Reply{Content: "Sorry for the wait.", Delay: time.Second}

// tapped starts a box of yaml whose provider answers reply, and returns the
// official client on it with a tap on what the client reads.
func tapped(t *testing.T, yaml string, reply providertest.Reply) (*openai.Client, *wiretest.Tap) {
	t.Helper()
	b := boxtest.New(t, yaml)
	b.Model.Script(reply)
	tap := &wiretest.Tap{}
	c := openai.NewClient(option.WithBaseURL(b.URL+"/openai/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0),
		option.WithHTTPClient(tap.Client()))
	return &c, tap
}

// keepAlivesBefore counts the keep-alive comments of a raw stream and
// checks that they came before text, the first of the answer.
func keepAlivesBefore(t *testing.T, raw, text string) int {
	t.Helper()
	n := strings.Count(raw, "\n: keep-alive\n\n")
	first, answer := strings.Index(raw, ": keep-alive"), strings.Index(raw, text)
	if n < 2 || first < 0 || answer < 0 || first > answer {
		t.Fatalf("%d keep-alives (first at byte %d, the answer at %d) in the stream:\n%s", n, first, answer, raw)
	}
	return n
}

// While the provider is slow to answer, the streamed answer carries SSE
// comment keep-alives after its role chunk, so proxies and clients see a
// live connection; the official SDK skips them and receives the answer.
func TestChatStreamKeepsAliveWhileTheProviderIsSlow(t *testing.T) {
	t.Parallel()
	c, tap := tapped(t, keepAliveYAML, stalled)
	acc, chunks := stream(t, c, openai.ChatCompletionNewParams{Model: "plain", Messages: user("Hello?")})
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != stalled.Content || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("the SDK assembled %+v from %d chunks", acc.Choices, len(chunks))
	}
	n := keepAlivesBefore(t, tap.String(), "Sorry")
	if !strings.HasPrefix(tap.String(), "data: ") || !strings.Contains(tap.String()[:strings.Index(tap.String(), ": keep-alive")], `"role":"assistant"`) {
		t.Fatalf("the stream does not open with the role chunk:\n%s", tap.String())
	}
	t.Logf("%d keep-alives while the provider was silent for %s", n, stalled.Delay)
}

// The Responses API's stream carries them after response.created and
// response.in_progress, without sequence numbers of their own.
func TestResponsesStreamKeepsAliveWhileTheProviderIsSlow(t *testing.T) {
	t.Parallel()
	c, tap := tapped(t, keepAliveYAML, stalled)
	s := c.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "plain",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello?")}})
	var seq []int64
	var done responses.Response
	for s.Next() {
		ev := s.Current()
		seq = append(seq, ev.SequenceNumber)
		if ev.Type == "response.completed" {
			done = ev.Response
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if done.Status != "completed" || done.OutputText() != stalled.Content {
		t.Fatalf("completed response %s", done.RawJSON())
	}
	for i, n := range seq {
		if n != int64(i) {
			t.Fatalf("sequence numbers %v", seq)
		}
	}
	raw := tap.String()
	keepAlivesBefore(t, raw, "Sorry")
	if strings.Index(raw, "response.in_progress") > strings.Index(raw, ": keep-alive") {
		t.Fatalf("a keep-alive before response.in_progress:\n%s", raw)
	}
}

// A provider that never answers still times out (providers' firstByteTimeout):
// the stream it kept alive then ends with the wire's provider-timeout
// error event, which the SDK reports as a stream error.
func TestChatStreamKeptAliveThenTimesOut(t *testing.T) {
	t.Parallel()
	c, tap := tapped(t, keepAliveYAML+"providers: {openai: {firstByteTimeout: 1s}}\n", providertest.Reply{Content: "Too late.", Delay: time.Minute})
	started := time.Now()
	s := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "plain", Messages: user("Hello?")})
	for s.Next() {
		for _, ch := range s.Current().Choices {
			if ch.Delta.Content != "" || ch.FinishReason != "" {
				t.Fatalf("a chunk from a provider that never answered: %s", s.Current().RawJSON())
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
	if err := json.Unmarshal(se.Event.Data, &body); err != nil || body.Error.Code != "provider_timeout" {
		t.Fatalf("error event %s", se.Event.Data)
	}
	if n := strings.Count(tap.String(), "\n: keep-alive\n\n"); n < 2 || time.Since(started) > 30*time.Second {
		t.Fatalf("%d keep-alives in %s before the timeout:\n%s", n, time.Since(started), tap.String())
	}
}
