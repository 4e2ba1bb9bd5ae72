package wiretest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stackbone/box/wire"
	aguiwire "github.com/stackbone/box/wire/agui"
	anthropicwire "github.com/stackbone/box/wire/anthropic"
	openaiwire "github.com/stackbone/box/wire/openai"
	"github.com/stackbone/box/wire/wiretest"
)

const agents = `
agents:
  support:
    model: openai/chat
    memory: {identityKey: customerId, read: true, save: false}
`

// allWires mounts the three text wires on one box.
func allWires(mux wire.Mux, cfg wire.Config) {
	openaiwire.Register(mux, cfg)
	anthropicwire.Register(mux, cfg)
	aguiwire.Register(mux, cfg)
}

func post(t *testing.T, b *wiretest.Box, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", b.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+wiretest.Key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// NUL characters and bytes that are not UTF-8 are refused at the edge of
// every wire with a 400 naming the field, before any model call; they never
// reach PostgreSQL as a 5xx.
func TestBadBytesAreRefusedAtEveryWire(t *testing.T) {
	t.Parallel()
	b := wiretest.New(t, agents, allWires)
	for _, tc := range []struct {
		name, path, body, field string
		headers                 []string
	}{
		{"openai NUL content", "/openai/v1/chat/completions",
			`{"model":"support","messages":[{"role":"user","content":"hi \u0000 there"}]}`, "messages[0].content", nil},
		{"openai invalid UTF-8 user", "/openai/v1/chat/completions",
			"{\"model\":\"support\",\"user\":\"ann\xff\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "user", nil},
		{"openai session content", "/openai/v1/chat/completions",
			"{\"model\":\"support\",\"messages\":[{\"role\":\"user\",\"content\":\"a\xc3\"}]}", "messages[0].content",
			[]string{wire.HeaderSession, "s1"}},
		{"anthropic NUL metadata", "/anthropic/v1/messages",
			`{"model":"support","max_tokens":10,"metadata":{"user_id":"a\u0000"},"messages":[{"role":"user","content":"hi"}]}`, "metadata.user_id", nil},
		{"anthropic invalid content", "/anthropic/v1/messages",
			"{\"model\":\"support\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\xfe\"}]}]}", "messages[0].content[0].text", nil},
		{"agui NUL message", "/agui/support",
			`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"\u0000"}]}`, "messages[0].content", nil},
		{"identities header", "/openai/v1/chat/completions",
			`{"model":"support","messages":[{"role":"user","content":"hi"}]}`, "identities",
			[]string{wire.HeaderIdentities, "{\"customerId\":\"c\xff\"}"}},
		{"query parameter", "/openai/v1/chat/completions?kind=%00",
			`{"model":"support","messages":[{"role":"user","content":"hi"}]}`, "query parameter kind", nil},
	} {
		status, body := post(t, b, tc.path, tc.body, tc.headers...)
		if status != http.StatusBadRequest || !strings.Contains(body, tc.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.name, status, body, tc.field)
		}
		if strings.Contains(body, "SQLSTATE") {
			t.Errorf("%s: answer quotes PostgreSQL: %s", tc.name, body)
		}
	}
	if n := len(b.Model.Requests()); n != 0 {
		t.Fatalf("the model was called %d times for refused requests", n)
	}
}
