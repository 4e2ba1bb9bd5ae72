package memory_test

import (
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
)

// A retried add with the same idempotency key returns the first result and
// changes nothing, whether the retry comes after the first or races it; a
// new key is a new add; erasure forgets the keys with the facts.
func TestIdempotentAdds(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	user := "+34600444555"
	req := memory.AddRequest{AgentID: "support", UserID: user, Transcript: memory.Transcript{Text: "I prefer email."},
		IdempotencyKey: "retry-1"}
	h.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: ops(`{"op":"add","content":"Prefers email."}`)}
	})
	var wg sync.WaitGroup
	results := make([]memory.AddResult, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], errs[i] = h.svc.Add(h.ctx, req) }()
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || results[i].Call.ID != results[0].Call.ID || len(results[i].Facts) != 1 {
			t.Fatalf("add %d: %+v %v", i, results[i], errs[i])
		}
	}
	again, err := h.svc.Add(h.ctx, req)
	if err != nil || again.Call.ID != results[0].Call.ID {
		t.Fatalf("a later retry: %+v %v", again, err)
	}
	rec := h.recall("support", user)
	if len(rec.Facts) != 1 || len(rec.Calls) != 1 {
		t.Fatalf("after retries: %d facts, %d calls", len(rec.Facts), len(rec.Calls))
	}
	req.IdempotencyKey = "retry-2"
	if _, err := h.svc.Add(h.ctx, req); err != nil {
		t.Fatal(err)
	}
	if rec := h.recall("support", user); len(rec.Calls) != 2 {
		t.Fatalf("a new key made %d call records, want 2", len(rec.Calls))
	}
	if _, err := h.svc.DeleteAll(h.ctx, "support", user); err != nil {
		t.Fatal(err)
	}
	var keys int
	h.pool.QueryRow(h.ctx, `SELECT count(*) FROM stackbone_platform.memory_idempotency WHERE user_id = $1`, user).Scan(&keys)
	if keys != 0 {
		t.Fatalf("%d idempotency results survived the erasure", keys)
	}
	req.IdempotencyKey = strings.Repeat("k", 201)
	if _, err := h.svc.Add(h.ctx, req); err == nil {
		t.Fatal("an over-long key was accepted")
	}
}
