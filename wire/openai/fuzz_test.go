package openaiwire

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBody runs the wire's whole request reading (decode, checks,
// messages, tools, options) on any body: it must answer an error or a
// request, never panic.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"model":"support","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","stream":true,"user":"u","stop":["x"],"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"t"}]}]}`,
		`{"model":"a","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`,
		"{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		req, err := decodeRequest(w, httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(body)))
		if err != nil {
			return
		}
		if req.check() != nil {
			return
		}
		_, _ = req.messages()
		_, _ = req.tools()
		_ = req.options()
	})
}
