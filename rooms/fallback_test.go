package rooms_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rooms"
)

// A browser caller hears the answer of the chain's next model when the
// primary cuts its answer mid-stream: the first sentence plays from the
// primary, the backup is given what was sent and goes on from it, and the
// page hears and shows the whole answer once; the call completes and
// saves, and the turn's run names the model that served and the one
// skipped.
func TestBrowserCallHearsTheFallbackModel(t *testing.T) {
	t.Parallel()
	backup := providertest.New(t)
	b := newBox(t, config.Rooms{}, func(cfg *config.Config) {
		cfg.Providers["backup"] = config.Provider{BaseURL: backup.URL()}
		a := cfg.Agents["frontdesk"]
		a.Model = config.ModelChain{"openai/chat", "backup/chat"}
		cfg.Agents["frontdesk"] = a
	})
	const first = "Great. I will"
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: extraction}
		}
		return providertest.Reply{Content: first, Cut: true}
	})
	backup.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		n := len(req.Messages)
		if n < 2 || req.Messages[n-1].Role != "system" || req.Messages[n-2].Content != first {
			return providertest.Reply{Content: "The backup was not told what the caller heard."}
		}
		return providertest.Reply{Content: strings.TrimPrefix(agentSays, first)}
	})
	if b.rooms.Backend() != rooms.BackendEmbedded {
		t.Fatalf("backend %s", b.rooms.Backend())
	}
	callID := browserCall(t, b, rooms.BackendEmbedded, 1.5)
	if len(backup.ChatRequests()) != 1 {
		t.Fatalf("the backup was asked %d times, want once", len(backup.ChatRequests()))
	}
	rec, err := b.calls.Get(t.Context(), callID)
	if err != nil {
		t.Fatal(err)
	}
	runID, _ := rec.Metrics[0]["runId"].(string)
	var run struct {
		Model    string         `json:"model"`
		Metadata map[string]any `json:"metadata"`
	}
	if st, code := b.do("GET", "/api/runs/"+runID, nil, &run); st != 200 {
		t.Fatalf("GET the turn's run: %d %s", st, code)
	}
	skipped, _ := run.Metadata["modelsSkipped"].([]any)
	if run.Model != "backup/chat" || run.Metadata["servedBy"] != "backup/chat" || len(skipped) != 1 ||
		skipped[0].(map[string]any)["model"] != "openai/chat" {
		t.Fatalf("the turn's run: model %s, metadata %v", run.Model, run.Metadata)
	}
}
