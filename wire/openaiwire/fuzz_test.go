package openaiwire

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBody runs the wire's whole request reading (decode, checks,
// messages, tools, options, headers) on any body: it must answer an error
// or a turn, never panic.
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
		_, _ = chat{}.Decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(body)))
	})
}

// FuzzResponsesBody is FuzzRequestBody for the Responses API route.
func FuzzResponsesBody(f *testing.F) {
	f.Add(`{"model":"support","input":"hi"}`)
	f.Add(`{"model":"support","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true}`)
	f.Add("{\"model\":\"a\",\"input\":\"\xff\"}")
	f.Fuzz(func(t *testing.T, body string) {
		_, _ = responses{}.Decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/openai/v1/responses", strings.NewReader(body)))
	})
}
