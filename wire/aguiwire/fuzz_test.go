package aguiwire

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestBody runs the wire's whole input reading (RunAgentInput to a
// turn) on any body: it must answer an error or a turn, never panic.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}],"forwardedProps":{"customerId":"c","identities":{"email":"a@b"}},"tools":[{"name":"f","description":"d","parameters":{"type":"object"}}]}`,
		`{"threadId":"t","runId":"r","state":{},"context":[],"messages":[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"id":"b","role":"tool","toolCallId":"c","content":"r"}]}`,
	} {
		f.Add(s)
	}
	log := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, body string) {
		w := httptest.NewRecorder()
		in, err := decodeInput(w, httptest.NewRequest("POST", "/agui/support", strings.NewReader(body)))
		if err != nil {
			return
		}
		_, _ = in.turnRequest("support", log)
	})
}
