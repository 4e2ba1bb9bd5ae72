package wiretest_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/wire"
)

const agents = `
agents:
  support:
    model: openai/chat
    memory: {identityKey: customerId, read: true, save: false}
`

func post(t *testing.T, b *boxtest.Box, path, body string, headers ...string) (int, string) {
	t.Helper()
	return do(t, b, boxtest.Key, "POST", path, body, headers...)
}

// NUL characters and bytes that are not UTF-8 are refused at the edge of
// every wire with a 400 naming the field, before any model call; they never
// reach PostgreSQL as a 5xx.
func TestBadBytesAreRefusedAtEveryWire(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, agents)
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

// A body cut short (a client that stopped mid-upload) is the client's
// error on every wire: a 400 in the wire's shape, never a 500 that tells
// an SDK to retry, and nothing reaches the model.
func TestTruncatedBodiesAreRefusedAtEveryWire(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, agents)
	for _, w := range []struct{ path, body string }{
		{"/openai/v1/chat/completions", `{"model":"support","messages":[{"role":"user","content":"hi"}]}`},
		{"/openai/v1/responses", `{"model":"support","input":[{"role":"user","content":"hi"}]}`},
		{"/anthropic/v1/messages", `{"model":"support","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`},
		{"/agui/support", `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`},
	} {
		for cut := 1; cut < len(w.body); cut++ {
			status, body := post(t, b, w.path, w.body[:cut])
			if status != http.StatusBadRequest {
				t.Errorf("%s cut at %d (%q): %d %s, want 400", w.path, cut, w.body[:cut], status, body)
			}
		}
	}
	if n := len(b.Model.Requests()); n != 0 {
		t.Fatalf("the model was called %d times for cut bodies", n)
	}
}

// do sends method path with the given key and returns the status and body.
func do(t *testing.T, b *boxtest.Box, key, method, path, body string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, b.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
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

// A key restricted to one person cannot reach another person's memory
// through any wire, the memory routes, a tool or a route that spans
// persons; naming no identity, it acts as its own person.
func TestRestrictedKeyReachesOnlyItsPerson(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, agents)
	ctx := t.Context()
	for _, p := range []struct{ user, fact string }{{"cust_A", "A drinks green tea."}, {"cust_B", "B is allergic to nuts."}} {
		b.Model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"` + p.fact + `"}],"summary":"A first call."}`})
		if status, body := do(t, b, boxtest.Key, "POST", "/api/memory/add",
			`{"agentId":"support","userId":"`+p.user+`","content":"hello"}`); status != http.StatusOK {
			t.Fatalf("seed %s: %d %s", p.user, status, body)
		}
	}
	secret, _, err := b.Keys.CreateRestricted(ctx, "browser-a", []string{auth.ScopeAgentsRun, auth.ScopeMemoryRead, auth.ScopeRunsRead},
		map[string]string{identity.CustomerID: "cust_A"})
	if err != nil {
		t.Fatal(err)
	}
	before := len(b.Model.Requests())
	chat := `{"model":"support","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
	}{
		{"openai user", "POST", "/openai/v1/chat/completions", `{"model":"support","user":"cust_B","messages":[{"role":"user","content":"hi"}]}`, nil},
		{"openai identities header", "POST", "/openai/v1/chat/completions", chat, []string{wire.HeaderIdentities, `{"customerId":"cust_B"}`}},
		{"openai other field", "POST", "/openai/v1/chat/completions", chat, []string{wire.HeaderIdentities, `{"email":"b@example.com"}`}},
		{"anthropic metadata.user_id", "POST", "/anthropic/v1/messages",
			`{"model":"support","max_tokens":10,"metadata":{"user_id":"cust_B"},"messages":[{"role":"user","content":"hi"}]}`, nil},
		{"agui forwardedProps", "POST", "/agui/support",
			`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}],"forwardedProps":{"customerId":"cust_B"}}`, nil},
		{"memory recall", "POST", "/api/memory/recall", `{"agentId":"support","userId":"cust_B"}`, nil},
		{"runs span persons", "GET", "/api/runs", "", nil},
	} {
		status, body := do(t, b, secret, tc.method, tc.path, tc.body, tc.headers...)
		if status != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", tc.name, status, body)
		}
		if strings.Contains(body, "nuts") {
			t.Errorf("%s: B's fact reached the restricted key: %s", tc.name, body)
		}
	}
	if n := len(b.Model.Requests()); n != before {
		t.Fatalf("refused requests reached the model (%d calls)", n-before)
	}

	// Its own person: the recall route, and a turn with no identity named,
	// whose memory tool reads A's facts only.
	if status, body := do(t, b, secret, "POST", "/api/memory/recall", `{"agentId":"support","userId":"cust_A"}`); status != http.StatusOK ||
		!strings.Contains(body, "green tea") {
		t.Fatalf("own recall: %d %s", status, body)
	}
	b.Model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "memory_read", map[string]any{})}},
		providertest.Reply{Content: "Hello A."})
	if status, body := do(t, b, secret, "POST", "/openai/v1/chat/completions", chat); status != http.StatusOK {
		t.Fatalf("own turn: %d %s", status, body)
	}
	reqs := b.Model.ChatRequests()
	last := reqs[len(reqs)-1]
	var sent strings.Builder
	for _, m := range last.Messages {
		sent.WriteString(m.Content + "\n")
	}
	if !strings.Contains(sent.String(), "green tea") || strings.Contains(sent.String(), "nuts") {
		t.Fatalf("the memory tool answered for the wrong person: %s", sent.String())
	}
}

// A misbehaving provider is the wire's error on all three wires, never a
// complete answer: a 200 that is not the API's JSON, a stream cut without
// its finish, a 401 quoting its key (never relayed), a stream that hangs
// between chunks (504 within the chunk timeout, not the turn's 5 minutes).
func TestMisbehavingProviderIsAnErrorOnEveryWire(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789abcdefghijklmnop"
	for _, tc := range []struct {
		name   string
		reply  providertest.Reply
		status int
	}{
		{"non-JSON 200", providertest.Reply{Raw: "<html><body>502 Bad Gateway</body></html>"}, http.StatusBadGateway},
		{"stream cut", providertest.Reply{Content: "The first half of an answer and then", Cut: true}, http.StatusBadGateway},
		{"401 quoting the key", providertest.Reply{Status: 401, Message: "Incorrect API key provided: " + key}, http.StatusBadGateway},
		{"hang between chunks", providertest.Reply{Content: "Hello there, this stalls", Stall: time.Minute}, http.StatusGatewayTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The provider's chunk timeout, from config, bounds the hang.
			b := boxtest.New(t, agents+"providers:\n  openai: {chunkTimeout: 500ms}\n")
			for _, w := range []struct{ path, body, terminal string }{
				{"/openai/v1/chat/completions", `{"model":"support","messages":[{"role":"user","content":"hi"}]}`, ""},
				{"/openai/v1/chat/completions", `{"model":"support","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "data: [DONE]"},
				{"/anthropic/v1/messages", `{"model":"support","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`, ""},
				{"/anthropic/v1/messages", `{"model":"support","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop"},
				{"/agui/support", `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}`, "RUN_FINISHED"},
			} {
				b.Model.Script(tc.reply)
				began := time.Now()
				status, body := post(t, b, w.path, w.body, wire.HeaderSession, "s-"+tc.name)
				if strings.Contains(body, key[10:]) || strings.Contains(body, "Incorrect API key") {
					t.Errorf("%s: the provider's text reached the client: %s", w.path, body)
				}
				if time.Since(began) > 20*time.Second {
					t.Errorf("%s: took %s", w.path, time.Since(began))
				}
				switch {
				case status == http.StatusOK && w.terminal != "":
					// A stream that already started ends with the wire's error
					// event, never its normal end.
					if strings.Contains(body, w.terminal) || !strings.Contains(strings.ToLower(body), "error") {
						t.Errorf("%s (stream): ended as complete: %s", w.path, body)
					}
				case status != tc.status:
					t.Errorf("%s: %d %s, want %d", w.path, status, body, tc.status)
				}
			}
			rows, err := b.Pool.Query(t.Context(), `SELECT status FROM stackbone_platform.runs WHERE kind = 'agent_turn'`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var st string
				rows.Scan(&st)
				if st == "succeeded" {
					t.Errorf("a run succeeded on a broken answer")
				}
			}
		})
	}
}

// A turn refused for want of a provider still leaves its run, failed.
func TestTurnWithoutProviderIsARun(t *testing.T) {
	t.Parallel()
	b := boxtest.New(t, agents+"  ghost:\n    model: nowhere/model\n")
	status, body := post(t, b, "/openai/v1/chat/completions", `{"model":"ghost","messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusBadGateway {
		t.Fatalf("%d %s", status, body)
	}
	var n int
	if err := b.Pool.QueryRow(t.Context(), `SELECT count(*) FROM stackbone_platform.runs
		WHERE kind = 'agent_turn' AND agent_id = 'ghost' AND status = 'failed' AND error_code = 'provider_failed'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("failed runs = %d, %v", n, err)
	}
}
