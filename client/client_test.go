package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/client"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rag"
)

const configYAML = `
agents:
  support:
    model: openai/chat
    memory: {identityKey: customerId, read: true, save: true}
`

func extract(req *goopenai.ChatCompletionRequest) providertest.Reply {
	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Content)
	}
	text := all.String()
	switch {
	case !strings.Contains(text, `"operations"`):
		return providertest.Reply{Content: "Hello from the box."}
	case strings.Contains(text, "GARBLED"):
		return providertest.Reply{Content: "not JSON"}
	case strings.Contains(text, "SLOW"):
		return providertest.Reply{Delay: 20 * time.Second, Content: `{"operations":[],"summary":"Slow."}`}
	case strings.Contains(text, "interested in the AI master"):
		return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master; call after 16:00."}],"summary":"Asked about the AI master."}`}
	}
	return providertest.Reply{Content: `{"operations":[],"summary":"A short call."}`}
}

func newBox(t *testing.T) (*boxtest.Box, *client.Client) {
	t.Helper()
	b := boxtest.New(t, configYAML)
	b.Model.Respond(extract)
	return b, client.New(b.URL, boxtest.Key)
}

func TestMemory(t *testing.T) {
	t.Parallel()
	_, c := newBox(t)
	ctx := t.Context()
	d := 83.0
	res, err := c.Memory.Add(ctx, []client.Message{
		{Role: "user", Content: "I am interested in the AI master. Call me after 16:00."},
		{Role: "assistant", Content: "I will arrange an afternoon follow-up."},
	}, client.MemoryAdd{AgentID: "support", UserID: "+34111111111", IdempotencyKey: "k1",
		Call: &client.CallRecord{StartedAt: "2026-10-26T09:00:00.000Z", DurationSeconds: &d, Outcome: "scheduled", RunID: "run_1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Facts) != 1 || res.Facts[0].Content != "Interested in the AI master; call after 16:00." || res.Call.Summary != "Asked about the AI master." {
		t.Fatalf("add: %+v", res)
	}
	again, err := c.Memory.Add(ctx, "I am interested in the AI master.", client.MemoryAdd{AgentID: "support", UserID: "+34111111111", IdempotencyKey: "k1"})
	if err != nil || again.Call.ID != res.Call.ID {
		t.Fatalf("a retried add with the same key: %v, call %v, want %v", err, again.Call.ID, res.Call.ID)
	}
	zero := 0
	rec, err := c.Memory.Recall(ctx, "support", "+34111111111", &zero)
	if err != nil || len(rec.Facts) != 1 || len(rec.Calls) != 0 {
		t.Fatalf("recall with calls 0: %+v %v", rec, err)
	}
	rec, err = c.Memory.Recall(ctx, "support", "+34111111111", nil)
	if err != nil || len(rec.Calls) != 1 {
		t.Fatalf("recall: %+v %v", rec, err)
	}
	n, err := c.Memory.DeleteAll(ctx, "support", "+34111111111")
	if err != nil || n != 2 {
		t.Fatalf("deleteAll: %d %v, want 2", n, err)
	}

	// Errors match the client's codes and the box's own sentinels.
	_, err = c.Memory.Add(ctx, "hello", client.MemoryAdd{AgentID: "support"})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 400 || !errors.Is(err, client.ErrMemoryInvalidRequest) || !errors.Is(err, memory.ErrInvalidRequest) {
		t.Fatalf("add without userId: %v", err)
	}
	if errors.Is(err, client.ErrMemoryConflict) {
		t.Fatal("an invalid request matched memory_conflict")
	}
	if _, err := c.Memory.Add(ctx, "GARBLED", client.MemoryAdd{AgentID: "support", UserID: "p"}); !errors.Is(err, memory.ErrInvalidModelOutput) {
		t.Fatalf("garbled model output: %v", err)
	}
	if _, err := c.Memory.Add(ctx, "hi", client.MemoryAdd{AgentID: "ghost", UserID: "p"}); !errors.Is(err, client.ErrAgentNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
	if _, err := client.New(c.BaseURL, "wrong").Memory.Recall(ctx, "support", "p", nil); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("a wrong key: %v", err)
	}

	off := false
	v, err := c.Memory.UpdateSettings(ctx, "support", client.SettingsPatch{Read: &off})
	if err != nil || v.Value.Read || v.Origins.Read != "studio" {
		t.Fatalf("settings put: %+v %v", v, err)
	}
	if v, err = c.Memory.ResetSettings(ctx, "support", "read"); err != nil || !v.Value.Read {
		t.Fatalf("settings reset: %+v %v", v, err)
	}
	if v, err = c.Memory.Settings(ctx, "support"); err != nil || v.AgentID != "support" {
		t.Fatalf("settings get: %+v %v", v, err)
	}
}

func TestRAGStoresKeys(t *testing.T) {
	t.Parallel()
	_, c := newBox(t)
	ctx := t.Context()
	if _, err := c.RAG.CreateCollection(ctx, rag.CreateCollection{Name: "help-center"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RAG.CreateCollection(ctx, rag.CreateCollection{Name: "help-center"}); !errors.Is(err, client.ErrRAGCollectionExists) {
		t.Fatalf("a second collection of one name: %v", err)
	}
	if _, err := c.RAG.Ingest(ctx, rag.IngestRequest{ID: "returns", Collection: "help-center",
		Chunks: []rag.Chunk{{Content: "Return an item within 30 days."}}}); err != nil {
		t.Fatal(err)
	}
	hits, err := c.RAG.Retrieve(ctx, rag.RetrieveRequest{Text: "returns", Namespace: "help-center", TopK: 3})
	if err != nil || len(hits) != 1 || hits[0].DocumentID != "returns" {
		t.Fatalf("retrieve: %+v %v", hits, err)
	}
	if _, err := c.RAG.Retrieve(ctx, rag.RetrieveRequest{Text: "x", Namespace: "nowhere"}); !errors.Is(err, rag.ErrCollectionNotFound) {
		t.Fatalf("retrieve from a missing collection: %v", err)
	}
	if docs, err := c.RAG.Documents(ctx, "help-center"); err != nil || len(docs) != 1 {
		t.Fatalf("documents: %+v %v", docs, err)
	}
	if err := c.RAG.DeleteDocument(ctx, "returns"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RAG.Document(ctx, "returns"); !errors.Is(err, client.ErrRAGDocumentNotFound) {
		t.Fatalf("a deleted document: %v", err)
	}

	for _, name := range []string{"One", "Two", "Three"} {
		if _, err := c.Stores.Create(ctx, name, ""); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for st, err := range c.Stores.List(ctx, url.Values{"limit": {"1"}, "origin": {"curated"}}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, st.Name)
	}
	if len(names) != 3 {
		t.Fatalf("stores: %v", names)
	}

	self, err := c.Keys.Self(ctx)
	if err != nil || self.Name != "test" {
		t.Fatalf("self: %+v %v", self, err)
	}
	_, secret, err := c.Keys.Create(ctx, "reader", []string{"rag:read"})
	if err != nil {
		t.Fatal(err)
	}
	reader := client.New(c.BaseURL, secret)
	if _, err := reader.Memory.Recall(ctx, "support", "p", nil); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("a key without memory:read: %v", err)
	}
	if err := c.Keys.Revoke(ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	if err := c.Keys.Revoke(ctx, "reader"); !errors.Is(err, client.ErrKeyNotFound) {
		t.Fatalf("a second revoke: %v", err)
	}
}

func TestCallsPagesAndRooms(t *testing.T) {
	t.Parallel()
	b, c := newBox(t)
	ctx := t.Context()
	if _, err := b.Pool.Exec(ctx, `INSERT INTO stackbone_platform.voice_calls (id, direction, agent_id, status, started_at, outcome)
		SELECT 'call_page_' || lpad(g::text, 3, '0'), 'inbound', 'support', 'ended', now() - g * interval '1 minute', 'completed'
		FROM generate_series(1, 250) g`); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for call, err := range c.Voice.Calls(ctx, client.CallQuery{Agent: "support", Limit: 100}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, call.ID)
	}
	if len(ids) != 250 || ids[0] != "call_page_001" || ids[249] != "call_page_250" {
		t.Fatalf("%d calls, first %v", len(ids), ids[:1])
	}
	// Stopping early stops the paging.
	n := 0
	for range c.Voice.Calls(ctx, client.CallQuery{Limit: 10}) {
		if n++; n == 15 {
			break
		}
	}
	if _, err := c.Voice.Call(ctx, "call_nope"); !errors.Is(err, client.ErrCallNotFound) {
		t.Fatalf("a missing call: %v", err)
	}
	if err := c.Voice.Hangup(ctx, "call_page_001"); !errors.Is(err, client.ErrCallEnded) {
		t.Fatalf("hang up an ended call: %v", err)
	}
	c.MaxRetries = 0
	if _, err := c.Voice.Dial(ctx, "support", "+34600111222", "", nil); !errors.Is(err, client.ErrVoiceNoTrunk) {
		t.Fatalf("dial without a trunk: %v", err)
	}
	room, err := c.Voice.CreateRoom(ctx, "support", map[string]string{"customerId": "crm/1"})
	if err != nil || room.Agent != "support" {
		t.Fatalf("room: %+v %v", room, err)
	}
	if got, err := c.Voice.Room(ctx, room.ID); err != nil || got.ID != room.ID {
		t.Fatalf("room get: %+v %v", got, err)
	}
	if err := c.Voice.EndRoom(ctx, room.ID); err != nil {
		t.Fatal(err)
	}

	// Sessions and runs from two turns of one conversation.
	for _, q := range []string{"Where is order A-1001?", "Can I still return it?"} {
		req, _ := http.NewRequest("POST", b.URL+"/openai/v1/chat/completions",
			strings.NewReader(`{"model":"support","messages":[{"role":"user","content":"`+q+`"}]}`))
		req.Header.Set("Authorization", "Bearer "+boxtest.Key)
		req.Header.Set("x-stackbone-session", "customer-4711")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var sid string
	for s, err := range c.Sessions.List(ctx, "support", 1) {
		if err != nil {
			t.Fatal(err)
		}
		sid = s.ID
	}
	s, err := c.Sessions.Get(ctx, sid)
	if err != nil || s.Turns != 2 {
		t.Fatalf("session: %+v %v", s, err)
	}
	if err := c.Sessions.Decide(ctx, sid, "approve", ""); !errors.Is(err, client.ErrNoDecisionPending) {
		t.Fatalf("decide with nothing held: %v", err)
	}
	runs := 0
	for r, err := range c.Runs.List(ctx, "", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Runs.Get(ctx, r.ID.String()); err != nil {
			t.Fatal(err)
		}
		runs++
	}
	if runs < 2 {
		t.Fatalf("%d runs, want the two turns", runs)
	}
}

// A 503 with Retry-After is retried after it; a cancelled context ends the
// wait and an in-flight call.
func TestRetryAndCancel(t *testing.T) {
	t.Parallel()
	b, c := newBox(t)
	target, _ := url.Parse(b.URL)
	fwd := httputil.NewSingleHostReverseProxy(target)
	var n atomic.Int32
	var after atomic.Value
	after.Store("1")
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.Header().Set("Retry-After", after.Load().(string))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"data":null,"error":{"code":"unavailable","message":"busy"}}`))
			return
		}
		fwd.ServeHTTP(w, r)
	}))
	defer front.Close()
	pc := client.New(front.URL, boxtest.Key)
	start := time.Now()
	self, err := pc.Keys.Self(t.Context())
	if err != nil || self.Name != "test" {
		t.Fatalf("self through a 503: %+v %v", self, err)
	}
	if took := time.Since(start); took < time.Second || n.Load() != 2 {
		t.Fatalf("retried after %v with %d requests; want after Retry-After: 1 with 2", took, n.Load())
	}

	// Without retries the 503 is the answer, with its Retry-After.
	n.Store(0)
	after.Store("7")
	pc.MaxRetries = 0
	_, err = pc.Keys.Self(t.Context())
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 503 || e.RetryAfter != 7*time.Second || !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("503 without retries: %v", err)
	}

	// Cancelled while waiting to retry.
	n.Store(0)
	after.Store("30")
	pc.MaxRetries = 2
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := pc.Keys.Self(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled in the retry wait: %v after %v", err, time.Since(start))
	}
	// Cancelled in flight.
	ctx2, cancel2 := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel2()
	start = time.Now()
	if _, err := c.Memory.Add(ctx2, "SLOW", client.MemoryAdd{AgentID: "support", UserID: "p"}); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled in flight: %v after %v", err, time.Since(start))
	}
}

func TestStoreVersions(t *testing.T) {
	t.Parallel()
	_, c := newBox(t)
	ctx := t.Context()
	st, err := c.Stores.Create(ctx, "Release policy", "How we ship.")
	if err != nil {
		t.Fatal(err)
	}
	sid := st.ID.String()
	if st, err = c.Stores.Update(ctx, sid, "", "How we version and ship."); err != nil || st.Description != "How we version and ship." {
		t.Fatalf("update: %+v %v", st, err)
	}
	m, err := c.Stores.CreateMemory(ctx, sid, "/releases/versioning.md", "How versions are chosen.", "Bump the minor version.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores.CreateMemory(ctx, sid, "/releases/versioning.md", "s", "c"); !errors.Is(err, client.ErrStoresMemoryPathExists) {
		t.Fatalf("a taken path: %v", err)
	}
	mid := m.ID.String()
	if l, err := c.Stores.Memories(ctx, sid, "/releases/"); err != nil || len(l.Entries) != 1 {
		t.Fatalf("memories: %+v %v", l, err)
	}
	if _, err := c.Stores.UpdateMemory(ctx, sid, mid, client.MemoryUpdate{Content: "x", ContentSHA256: strings.Repeat("0", 64)}); !errors.Is(err, client.ErrContentSHA256Mismatch) {
		t.Fatalf("a stale hash: %v", err)
	}
	if _, err := c.Stores.UpdateMemory(ctx, sid, mid, client.MemoryUpdate{Content: "Bump the major version.", ContentSHA256: m.ContentSHA256}); err != nil {
		t.Fatal(err)
	}
	var versions []string
	for v, err := range c.Stores.Versions(ctx, sid, mid) {
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v.ID.String())
	}
	if len(versions) != 2 {
		t.Fatalf("%d versions, want 2", len(versions))
	}
	restored, err := c.Stores.Restore(ctx, sid, versions[1])
	if err != nil || restored.Content != "Bump the minor version." {
		t.Fatalf("restore: %+v %v", restored, err)
	}
	if err := c.Stores.Redact(ctx, sid, versions[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Stores.DeleteMemory(ctx, sid, mid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores.Memory(ctx, sid, mid); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a deleted memory: %v", err)
	}
	if err := c.Stores.Archive(ctx, sid); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Stores.Get(ctx, sid); err != nil || st.Status != "archived" {
		t.Fatalf("archived: %+v %v", st, err)
	}
	if err := c.Stores.Delete(ctx, sid); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stores.Get(ctx, sid); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a deleted store: %v", err)
	}
	if jobs, err := c.RAG.Jobs(ctx, ""); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs: %v %v", jobs, err)
	}
	if _, err := c.RAG.Job(ctx, 999999); !errors.Is(err, rag.ErrJobNotFound) {
		t.Fatalf("a missing job: %v", err)
	}
	if rs, err := c.Voice.Rooms(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("rooms: %v %v", rs, err)
	}
}
