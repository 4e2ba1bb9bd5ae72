package openaiwire_test

import (
	"net/http"
	"strings"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/wire"
)

// chainAnswer is what the chained agent's answer says, whichever model of
// its chain ends up saying it.
const chainAnswer = "We open at nine and close at five."

// The official SDK against an agent whose model is a chain: when the
// primary refuses the connection, or cuts its answer mid-stream, the
// client gets the backup's answer, streamed and not, and a cut answer
// goes on from what the client already has (said once); the run names
// the model that served and why the primary was skipped.
func TestChainOverTheOfficialSDK(t *testing.T) {
	t.Parallel()
	backup := providertest.New(t)
	b := boxtest.New(t, `
agents:
  chained:
    model: [openai/chat, backup/chat]
    instructions: You answer.
`, boxtest.Tune(func(cfg *config.Config) {
		p := cfg.Providers["openai"]
		p.Circuit = config.Circuit{Failures: 1000} // every request meets its fault, not an open circuit
		cfg.Providers["openai"] = p
		cfg.Providers["backup"] = config.Provider{BaseURL: backup.URL()}
	}))
	b.Model.Respond(func(*openaiRequest) providertest.Reply {
		return providertest.Reply{Content: "We open at nine", Cut: true}
	})
	backup.Respond(func(req *openaiRequest) providertest.Reply {
		n := len(req.Messages)
		if req.Messages[n-1].Role == "system" && strings.Contains(req.Messages[n-1].Content, "cut off") {
			return providertest.Reply{Content: strings.TrimPrefix(chainAnswer, req.Messages[n-2].Content)}
		}
		return providertest.Reply{Content: chainAnswer}
	})
	client := openai.NewClient(option.WithBaseURL(b.URL+"/openai/v1/"), option.WithAPIKey(boxtest.Key), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "chained",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("When are you open?")}}

	for _, c := range []struct {
		name   string
		refuse bool
		stream bool
		reason string
	}{
		{"refused", true, false, "provider_failed"},
		{"refused, streamed", true, true, "provider_failed"},
		{"cut", false, false, "provider_failed"},
		{"cut mid-stream", false, true, "provider_failed"},
	} {
		if c.refuse {
			b.Model.SetFault(providertest.EndpointChat, providertest.Fault{Refuse: true, Times: 1})
		}
		var resp *http.Response
		var text string
		if c.stream {
			s := client.Chat.Completions.NewStreaming(t.Context(), params, option.WithResponseInto(&resp))
			var deltas []string
			for s.Next() {
				if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
					deltas = append(deltas, ch.Choices[0].Delta.Content)
				}
			}
			if err := s.Err(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			text = strings.Join(deltas, "")
			if !c.refuse && (len(deltas) < 2 || !strings.HasPrefix(chainAnswer, deltas[0])) {
				t.Fatalf("%s: deltas %q: not the primary's start and the backup's rest", c.name, deltas)
			}
		} else {
			got, err := client.Chat.Completions.New(t.Context(), params, option.WithResponseInto(&resp))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			text = got.Choices[0].Message.Content
		}
		if text != chainAnswer {
			t.Fatalf("%s: the client got %q", c.name, text)
		}
		var model, servedBy, skippedModel, reason string
		if err := b.Pool.QueryRow(t.Context(), `SELECT model, metadata->>'servedBy', metadata->'modelsSkipped'->0->>'model',
			metadata->'modelsSkipped'->0->>'reason' FROM stackbone_platform.runs WHERE id = $1`,
			resp.Header.Get(wire.HeaderRunID)).Scan(&model, &servedBy, &skippedModel, &reason); err != nil {
			t.Fatalf("%s: the run: %v", c.name, err)
		}
		if model != "backup/chat" || servedBy != "backup/chat" || skippedModel != "openai/chat" || reason != c.reason {
			t.Fatalf("%s: the run says model %s, servedBy %s, skipped %s for %s", c.name, model, servedBy, skippedModel, reason)
		}
	}
	if b.Model.Faulted(providertest.EndpointChat) != 2 {
		t.Fatalf("%d refusals met, want 2", b.Model.Faulted(providertest.EndpointChat))
	}
}
