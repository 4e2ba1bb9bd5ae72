package tools_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stackbone/box/agent"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/lockedbuf"
	"github.com/stackbone/box/provider/providertest"
)

const ordersToken = "s3cr3t-orders-token-7f1c"

// orders is a real HTTP order service on loopback: it checks the bearer
// token, and records the paths it was asked for.
type orders struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string
	gone  chan struct{} // closed when a slow request's client gave up
	once  sync.Once
}

func newOrders(t *testing.T) *orders {
	o := &orders{gone: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.paths = append(o.paths, r.URL.EscapedPath()+"?"+r.URL.RawQuery)
		o.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+ordersToken {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch id := r.PathValue("id"); id {
		case "missing":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"no order with that number"}`)
		case "boom":
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"database down"}`)
		case "slow":
			<-r.Context().Done() // answers only when the box gives up
			o.once.Do(func() { close(o.gone) })
		case "big":
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range 10 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		default:
			fmt.Fprintf(w, `{"order":%q,"status":"shipped","carrier":"DHL"}`, id)
		}
	})
	mux.HandleFunc("POST /tickets", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.paths = append(o.paths, "POST /tickets "+string(b))
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ticket":"T-9"}`)
	})
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

func (o *orders) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.paths...)
}

func receptionistYAML(ordersURL string) string {
	return fmt.Sprintf(`
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone for a shop.
    tools:
      - name: order_status
        kind: http
        description: Look up an order by its number.
        method: GET
        url: %[1]s/orders/{orderId}
        parameters: {type: object, properties: {orderId: {type: string}}, required: [orderId]}
        headers: {Authorization: "Bearer ${ORDERS_TOKEN}"}
        timeout: 500ms
        maxResponseBytes: 4096
        filler: One moment, I'm checking that.
      - name: open_ticket
        kind: http
        description: Open a support ticket.
        method: POST
        url: %[1]s/tickets
        parameters: {type: object, properties: {subject: {type: string}, priority: {type: integer}}, required: [subject]}
        headers: {X-Api-Key: "${ORDERS_TOKEN}"}
`, ordersURL)
}

func newReceptionist(t *testing.T, o *orders, opts ...boxtest.Option) *boxtest.Box {
	opts = append([]boxtest.Option{boxtest.Env(map[string]string{"ORDERS_TOKEN": ordersToken})}, opts...)
	return boxtest.New(t, receptionistYAML(o.srv.URL), opts...)
}

// TestHTTPToolThroughATurn runs the order tool through real turns against
// a real local service: the model sees the body, a truncated body said to
// be truncated, or a short error it can act on; run history keeps the
// outcome of each call.
func TestHTTPToolThroughATurn(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	b := newReceptionist(t, o)
	for _, c := range []struct {
		order   string
		outcome string
		sees    []string
		hides   []string
	}{
		{"A-1001", "ok", []string{`{"order":"A-1001","status":"shipped","carrier":"DHL"}`}, []string{"error"}},
		{"missing", "http_404", []string{"error: order_status answered HTTP 404 Not Found", "no order with that number"}, nil},
		{"boom", "http_503", []string{"error: order_status answered HTTP 503 Service Unavailable", "database down"}, nil},
		{"slow", "timeout", []string{"error: order_status timed out after 500ms"}, nil},
		{"big", "ok", []string{"[truncated: the response is longer than 4096 bytes and only its first 4096 bytes are shown]"}, nil},
	} {
		t.Run(c.order, func(t *testing.T) {
			before := len(b.Model.ChatRequests())
			b.Model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("call_1", "order_status", map[string]string{"orderId": c.order})}},
				providertest.Reply{Content: "Here is what I found."})
			res, err := b.Runtime.Turn(t.Context(), agent.TurnRequest{Agent: "receptionist", Messages: user("Where is my order " + c.order + "?")}, func(agent.Event) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if res.Finish != agent.FinishStop || res.Text != "Here is what I found." {
				t.Fatalf("turn: %+v", res)
			}
			reqs := b.Model.ChatRequests()[before:]
			if len(reqs) != 2 {
				t.Fatalf("the model got %d requests, want 2", len(reqs))
			}
			got := toolResult(t, reqs, 1)
			for _, s := range c.sees {
				if !strings.Contains(got, s) {
					t.Errorf("the model saw %q, want it to contain %q", clipTest(got), s)
				}
			}
			for _, s := range c.hides {
				if strings.Contains(got, s) {
					t.Errorf("the model saw %q, which should not contain %q", clipTest(got), s)
				}
			}
			if c.order == "big" && len(got) > 4096+200 {
				t.Errorf("the model got %d bytes of a 10 MB response, want at most the cap and the note", len(got))
			}
			calls := toolRuns(t, b, res.RunID)
			if len(calls) != 1 || calls[0]["name"] != "order_status" || calls[0]["outcome"] != c.outcome || calls[0]["durationMs"] == nil {
				t.Fatalf("run history: %+v, want one order_status call with outcome %s", calls, c.outcome)
			}
			if len(res.ToolRuns) != 1 || res.ToolRuns[0].Outcome != c.outcome {
				t.Fatalf("result tool runs: %+v", res.ToolRuns)
			}
		})
	}
	select {
	case <-o.gone:
	default:
		t.Fatal("the slow request was not cancelled when the tool timed out")
	}
}

// TestHTTPToolEscapesArguments: an argument cannot change the URL's shape,
// and arguments not in the URL go in the JSON body of a POST.
func TestHTTPToolEscapesArguments(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	b := newReceptionist(t, o)
	b.Model.Script(
		providertest.Reply{ToolCalls: []providertest.Call{
			providertest.ToolCall("c1", "order_status", map[string]string{"orderId": "../admin?x=1#y"}),
			providertest.ToolCall("c2", "order_status", map[string]string{"orderId": ".."}),
			providertest.ToolCall("c3", "order_status", map[string]string{}),
			providertest.ToolCall("c4", "open_ticket", map[string]any{"subject": "Broken & late", "priority": 2}),
		}},
		providertest.Reply{Content: "Done."})
	res, err := b.Runtime.Turn(t.Context(), agent.TurnRequest{Agent: "receptionist", Messages: user("help")}, func(agent.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	seen := o.seen()
	want := []string{"/orders/..%2Fadmin%3Fx=1%23y?", `POST /tickets {"priority":2,"subject":"Broken \u0026 late"}`}
	if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("the service saw %q, want %q", seen, want)
	}
	outcomes := []string{}
	for _, c := range toolRuns(t, b, res.RunID) {
		outcomes = append(outcomes, c["outcome"].(string))
	}
	if strings.Join(outcomes, ",") != "ok,invalid_arguments,invalid_arguments,ok" {
		t.Fatalf("outcomes %v", outcomes)
	}
	msgs := b.Model.ChatRequests()[1].Messages
	var results []string
	for _, m := range msgs {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 4 || results[1] != `error: the argument orderId must not be ".."` || results[2] != "error: the argument orderId is required" || results[3] != `{"ticket":"T-9"}` {
		t.Fatalf("the model saw %q", results)
	}
}

// TestHTTPToolSecretStaysInTheBox: the header secret reaches the tool's
// service and nothing else: not the logs (every level), not run history,
// not the model's requests, not any API answer.
func TestHTTPToolSecretStaysInTheBox(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	var logs lockedbuf.Buffer
	b := newReceptionist(t, o, boxtest.LogTo(&logs))
	b.Model.Script(providertest.Reply{ToolCalls: []providertest.Call{
		providertest.ToolCall("c1", "order_status", map[string]string{"orderId": "A-1001"}),
		providertest.ToolCall("c2", "order_status", map[string]string{"orderId": "missing"}),
		providertest.ToolCall("c3", "open_ticket", map[string]string{"subject": "x"}),
	}}, providertest.Reply{Content: "Done."})
	res, err := b.Runtime.Turn(t.Context(), agent.TurnRequest{Agent: "receptionist", SessionKey: "s1", Messages: user("help")}, func(agent.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(o.seen()) != 3 {
		t.Fatalf("the service saw %q", o.seen())
	}
	check := func(where, text string) {
		t.Helper()
		if strings.Contains(text, ordersToken) {
			t.Errorf("the secret is in %s", where)
		}
	}
	for i, r := range b.Model.Requests() {
		check(fmt.Sprintf("model request %d", i), string(r.Body)+fmt.Sprint(r.Header))
	}
	check("run history", runMeta(t, b, res.RunID))
	var rows string
	if err := b.Pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(t::text, ' '), '') FROM (
		SELECT r::text AS t FROM stackbone_platform.runs r UNION ALL SELECT s::text FROM stackbone_platform.sessions s
		UNION ALL SELECT st::text FROM stackbone_platform.session_turns st) x`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	check("the database", rows)
	for _, path := range []string{"/api/runs", "/api/runs/" + res.RunID.String(), "/api/sessions",
		"/api/sessions/" + agent.SessionID("session", "receptionist", "", "s1")} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, b.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+boxtest.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		check("GET "+path, string(body))
	}
	if logs.Len() == 0 {
		t.Fatal("no logs were captured")
	}
	check("the logs", logs.String())
}

// TestHTTPToolConfig: declarations that would leak a secret or let the
// model pick the host are refused at load, and a secret that is not set
// stops the start with its variable's name.
func TestHTTPToolConfig(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		`{name: a, kind: http, url: "http://h/x", headers: {Authorization: "Bearer abc"}}`:                              "header Authorization carries credentials",
		`{name: a, kind: http, url: "http://{host}/x", parameters: {type: object, properties: {host: {type: string}}}}`: "never the host",
		`{name: a, kind: http, url: "http://h/{id}"}`:                                                                   "url placeholder {id} is not a property of parameters",
		`{name: a, kind: http, url: "ftp://h/x"}`:                                                                       "is not an http(s) URL",
		`{name: a, kind: http, url: "http://h/x", method: TRACE}`:                                                       "method \"TRACE\" is not one of",
		`{name: a, kind: http, url: "http://h/x", timeout: 10m}`:                                                        "timeout must be up to 2m0s",
		`{name: a, kind: mcp}`: "kind mcp needs a url (streamable HTTP) or a command (stdio)",
		`{name: a, kind: mcp, url: "http://h/mcp", method: GET}`:         "are for kind http",
		`{name: a, kind: http, url: "http://h/x", allow: [x]}`:           "are for kind mcp",
		`{name: a, kind: mcp, command: [x], tokenEnv: T}`:                "tokenEnv is for a url server",
		`{name: a, kind: http, url: "http://h/x", maxResponseBytes: -1}`: "maxResponseBytes must be",
	} {
		_, err := config.Parse([]byte("agents:\n  a:\n    model: openai/chat\n    tools:\n      - " + yaml + "\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", yaml, err, want)
		}
	}
	cfg, err := config.Parse([]byte(receptionistYAML("http://127.0.0.1:1")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = toolsNew(cfg.Agents, map[string]string{})
	if err == nil || !strings.Contains(err.Error(), "ORDERS_TOKEN, which is not set") || strings.Contains(err.Error(), ordersToken) {
		t.Fatalf("a missing secret: %v", err)
	}
}

func clipTest(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestHTTPToolHeldAndLimited: an http tool in interruptOn waits for a
// person's decision before the service is called; past maxToolCalls the
// model is told to answer with what it has and the service is not called.
func TestHTTPToolHeldAndLimited(t *testing.T) {
	t.Parallel()
	o := newOrders(t)
	yaml := receptionistYAML(o.srv.URL) + `    interruptOn: [open_ticket]
    maxToolCalls: 2
`
	b := boxtest.New(t, yaml, boxtest.Env(map[string]string{"ORDERS_TOKEN": ordersToken}))
	b.Model.Script(providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("c1", "open_ticket", map[string]string{"subject": "late"})}})
	res, err := b.Runtime.Turn(t.Context(), agent.TurnRequest{Agent: "receptionist", SessionKey: "s1", Messages: user("Open a ticket.")}, func(agent.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Finish != agent.FinishHeld || len(o.seen()) != 0 {
		t.Fatalf("held: %+v, service saw %q", res, o.seen())
	}
	b.Model.Script(providertest.Reply{Content: "Ticket T-9 is open."})
	sessionID := agent.SessionID("session", "receptionist", "", "s1")
	res, err = b.Runtime.Decide(t.Context(), sessionID, agent.Decision{Approve: true}, func(agent.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "Ticket T-9 is open." || len(o.seen()) != 1 || toolResult(t, b.Model.ChatRequests(), -1) != `{"ticket":"T-9"}` {
		t.Fatalf("approved: %+v, service saw %q", res, o.seen())
	}

	b.Model.Script(providertest.Reply{ToolCalls: []providertest.Call{
		providertest.ToolCall("c1", "order_status", map[string]string{"orderId": "1"}),
		providertest.ToolCall("c2", "order_status", map[string]string{"orderId": "2"}),
		providertest.ToolCall("c3", "order_status", map[string]string{"orderId": "3"}),
	}}, providertest.Reply{Content: "Two of them shipped."})
	res, err = b.Runtime.Turn(t.Context(), agent.TurnRequest{Agent: "receptionist", Messages: user("Check 1, 2 and 3.")}, func(agent.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(o.seen()) != 3 {
		t.Fatalf("the service saw %q, want two more calls", o.seen())
	}
	if got := toolResult(t, b.Model.ChatRequests(), -1); got != `{"error":"this turn reached its limit of 2 tool calls: answer with what you have"}` {
		t.Fatalf("the model saw %q", got)
	}
	calls := toolRuns(t, b, res.RunID)
	if len(calls) != 3 || calls[2]["outcome"] != "limit" {
		t.Fatalf("run history %+v", calls)
	}
}
