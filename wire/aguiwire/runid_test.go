package aguiwire_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"

	"github.com/stackbone/box/provider/providertest"
)

// A run's answer names the box's run behind it; a request refused before
// the run began names none.
func TestRunIDHeader(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: "Hello."})
	resp, raw := post(t, b.url+"/agui/support", boxKey, customerHello)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	if _, err := uuid.Parse(resp.Header.Get("x-stackbone-run-id")); err != nil {
		t.Fatalf("x-stackbone-run-id %q", resp.Header.Get("x-stackbone-run-id"))
	}
	resp, raw = post(t, b.url+"/agui/support", boxKey, `{"threadId":"t2","runId":"r1","messages":[{"id":"u1","role":"robot","content":"x"}]}`)
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("x-stackbone-run-id") != "" {
		t.Fatalf("refused: %d %q: %s", resp.StatusCode, resp.Header.Get("x-stackbone-run-id"), raw)
	}
}
