package studio_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/webhooks"
)

// An operator subscribes a receiver to memory.saved in Studio (the secret
// shown once), sees the event's delivery in the log, replays it (the
// receiver gets the same event id again) and deletes the subscription.
func TestWebhooksScreen(t *testing.T) {
	b := newBox(t)
	var (
		mu     sync.Mutex
		secret string
		ids    []string
		bad    int
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := webhooks.Verify(secret, r.Header, body, time.Now(), 0); err != nil {
			bad++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		ids = append(ids, r.Header.Get(webhooks.HeaderID))
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Close() })
	received := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}

	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/webhooks")
	p.waitFor(`!!document.getElementById("new-webhook")`, "the new subscription form")
	p.set("#new-webhook input[name=url]", "http://"+ln.Addr().String()+"/hook")
	p.js(`document.getElementById("new-webhook").requestSubmit()`)
	p.waitFor(`document.getElementById("webhook-result").textContent.includes("Pick at least one event")`, "the refusal without events")
	if n := b.count(`SELECT count(*) FROM stackbone_platform.webhook_subscriptions`); n != 0 {
		t.Fatalf("%d subscriptions after the refusal", n)
	}
	p.click(`#new-webhook input[value="memory.saved"]`)
	p.js(`document.getElementById("new-webhook").requestSubmit()`)
	p.waitFor(`!!document.getElementById("new-webhook-secret")`, "the signing secret")
	var s string
	p.js(`document.getElementById("new-webhook-secret").value`, &s)
	if !strings.HasPrefix(s, "whsec_") {
		t.Fatalf("secret %q", s)
	}
	mu.Lock()
	secret = s
	mu.Unlock()
	p.waitFor(`document.querySelectorAll("table.webhooks tbody tr").length === 1`, "the subscription in the list")

	b.model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"Prefers email."}],"summary":"Asked about email."}`})
	if st, code := b.do(adminKey, "POST", "/api/memory/add", map[string]any{"agentId": "support", "userId": "crm/7",
		"content": "Please email me."}, nil); st != 200 {
		t.Fatalf("add: %d %s", st, code)
	}
	poll.Until(t, "the delivery", 20*time.Second, func() bool { return len(received()) >= 1 })
	if got := received(); len(got) != 1 {
		t.Fatalf("the receiver got %d deliveries, want 1", len(got))
	}

	p.click(`table.webhooks tbody tr a`)
	p.waitFor(`!!document.querySelector("table.deliveries tbody tr") && document.querySelector("table.deliveries").textContent.includes("delivered")`, "the delivery in the log")
	if row := p.text(`table.deliveries tbody tr`); !strings.Contains(row, "memory.saved") || !strings.Contains(row, "#1 204") || !strings.Contains(row, received()[0]) {
		t.Fatalf("the log's row: %q", row)
	}
	p.click(`table.deliveries button.replay`)
	poll.Until(t, "the replay", 20*time.Second, func() bool { return len(received()) >= 2 })
	if got := received(); len(got) != 2 || got[0] != got[1] {
		t.Fatalf("after the replay the receiver got %v, want the same event id twice", got)
	}
	p.waitFor(`document.querySelector("table.deliveries").textContent.includes("replay 204")`, "the replay in the log")
	mu.Lock()
	if bad > 0 {
		t.Errorf("%d deliveries with a bad signature", bad)
	}
	mu.Unlock()

	p.click(`#delete-webhook`)
	p.click(`.confirm button.yes`)
	p.waitFor(`location.hash === "#/webhooks" && !!document.querySelector("table.webhooks") && document.querySelectorAll("table.webhooks tbody tr").length === 0`, "the empty list")
	if n := b.count(`SELECT count(*) FROM stackbone_platform.webhook_deliveries`); n != 0 {
		t.Fatalf("%d deliveries left after the delete", n)
	}
}
