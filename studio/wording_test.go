package studio_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/auth"
)

// No screen writes a missing value as a literal null or undefined.
// The screens are read with a key that may change things and with one
// that may only read.
func TestNoLiteralNull(t *testing.T) {
	b := newBox(t)
	b.insertCall("call_done", "inbound", "receptionist", "+34600111222", "completed", time.Now().Add(-time.Minute), `[]`, `{"read":true,"save":true}`, `[]`)
	reader, _, err := b.keys.Create(context.Background(), "reader", []string{auth.ScopeConfigRead, auth.ScopeRAGRead, auth.ScopeRunsRead, auth.ScopeSessionsRead, auth.ScopeVoice})
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`\b(null|undefined|NaN)\b`)
	for _, key := range []string{adminKey, reader} {
		p := b.open(t)
		p.signIn(key)
		for _, hash := range []string{"#/system", "#/agents", "#/runs", "#/rag", "#/webhooks", "#/calls/call_done"} {
			p.goTo(hash)
			p.waitFor(`document.querySelector("main").children.length > 1`, hash+" drawn")
			var text string
			p.js(`document.querySelector("main").innerText + " " + [...document.querySelectorAll("main input, main textarea")].map(i => i.value + " " + (i.placeholder || "")).join(" ")`, &text)
			if m := word.FindString(text); m != "" {
				i := strings.Index(text, m)
				t.Fatalf("%s shows %q: …%s…", hash, m, text[max(0, i-120):min(len(text), i+60)])
			}
		}
	}
}
