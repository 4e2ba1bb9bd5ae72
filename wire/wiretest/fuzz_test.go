package wiretest_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/provider/providertest"
)

// FuzzWireRequests sends any body, and the same body cut in half (a client
// that stopped mid-upload), through the whole request path of every text
// wire on a running box: authentication, decoding, checks, the turn and the
// answer. None may answer 500 or take the box down.
func FuzzWireRequests(f *testing.F) {
	routes := []struct{ path, seed string }{
		{"/openai/v1/chat/completions", `{"model":"support","messages":[{"role":"user","content":"hi"}]}`},
		{"/openai/v1/responses", `{"model":"support","input":[{"role":"user","content":"hi"}],"stream":true}`},
		{"/anthropic/v1/messages", `{"model":"support","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`},
		{"/agui/support", `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`},
	}
	for _, r := range routes {
		f.Add(r.seed)
		f.Add(r.seed[:len(r.seed)/2])
	}
	f.Add(`{"model":"support","messages":[`)
	f.Add("{\"model\":\"support\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}")
	// The box logs nowhere: the fuzzing engine forbids f.Log inside the target.
	b := boxtest.New(f, agents, boxtest.Logger(slog.New(slog.DiscardHandler)))
	b.Model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "ok"} })
	f.Fuzz(func(t *testing.T, body string) {
		for _, r := range routes {
			for _, sent := range []string{body, body[:len(body)/2]} {
				req, _ := http.NewRequest("POST", b.URL+r.path, strings.NewReader(sent))
				req.Header.Set("Authorization", "Bearer "+boxtest.Key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", r.path, err)
				}
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					t.Fatalf("%s: %d for %q", r.path, resp.StatusCode, sent)
				}
			}
		}
	})
}
