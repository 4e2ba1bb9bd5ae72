package anthropicwire

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBody runs the wire's whole request reading on any body: it
// must answer an error or a request, never panic.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"support","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","max_tokens":5,"system":[{"type":"text","text":"s"}],"metadata":{"user_id":"u"},"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"t"}]}]}`,
		`{"model":"a","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		_, _ = protocol{}.Decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/anthropic/v1/messages", strings.NewReader(body)))
	})
}
