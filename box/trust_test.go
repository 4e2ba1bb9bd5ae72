package box_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/wire"
)

// The people of the trust model's test: a victim with memory, a session, a
// stored response and a browser room, and an attacker holding a key
// restricted to its own phone number with every scope.
const (
	victimCustomer = "victim-42"
	victimPhone    = "+34600000002"
	attackerPhone  = "+34600000001"
	// secret is what the victim told the box; it must reach no answer and
	// no model request made for the attacker.
	secret = "7781"
)

const trustAgents = `
agents:
  support:
    model: openai/chat
    instructions: You are the support agent.
    memory: {identityKey: customerId, read: true, save: true}
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
  plain:
    model: openai/chat
    instructions: You are plain.
sip:
  trunks:
    outbound:
      - {name: carrier, proxy: "%s"}
`

// publicRoutes answer without a key (health, pages, a wire's unknown-route
// answer). Every other route must authenticate: a new route that does not
// is caught here.
var publicRoutes = []string{"GET /healthz", "GET /readyz", "GET /api/openapi.json", "GET /call", "GET /call/", "GET /studio", "GET /studio/",
	"GET /{$}", "/openai/v1/", "/anthropic/v1/"}

// forNoOne are person routes that read or write nothing of any person.
var forNoOne = []string{"GET /openai/v1/models", "GET /openai/v1/models/{model}", "GET /api/capabilities"}

// The whole trust model in one table: every route that spans persons
// refuses a key restricted to a person (whatever its scopes), and every
// route and wire that acts for a person refuses that key when it names
// another person, reading and writing nothing: no memory row, session turn,
// model request, call or room of the victim's is touched. The same key
// acting for its own person is served, on a phone answering at the trunk
// too, with nothing of the victim in the model's context.
func TestTrustModelOnEveryRoute(t *testing.T) {
	t.Parallel()
	phone := siptest.NewPhone(t)
	b := boxtest.New(t, fmt.Sprintf(trustAgents, phone.Addr))
	ctx := t.Context()
	b.Model.RespondTranscripts(func([]byte) string { return "Hello, who is this?" })
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[{"op":"add","content":"The PIN is ` + secret + `."}],"summary":"Gave a PIN."}`}
		}
		return providertest.Reply{Content: "Noted."}
	})
	key := func(name string, allowed map[string]string) string {
		s, _, err := b.Keys.CreateRestricted(ctx, name, auth.AllScopes, allowed)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	victim := key("victim", map[string]string{"customerId": victimCustomer, "phoneNumber": victimPhone})
	attacker := key("attacker", map[string]string{"phoneNumber": attackerPhone})
	c := &client{t: t, url: b.URL}

	// The victim's memory, session, stored response and room.
	for _, seed := range []struct{ agent, user string }{{"support", victimCustomer}, {"receptionist", victimPhone}} {
		c.want(boxtest.Key, "POST", "/api/memory/add", fmt.Sprintf(`{"agentId":%q,"userId":%q,"content":"My PIN is %s."}`,
			seed.agent, seed.user, secret), nil, 200)
	}
	c.want(victim, "POST", "/openai/v1/chat/completions",
		`{"model":"support","messages":[{"role":"user","content":"My PIN is `+secret+`."}]}`, []string{wire.HeaderSession, "shared"}, 200)
	c.want(victim, "POST", "/openai/v1/chat/completions",
		`{"model":"plain","messages":[{"role":"user","content":"My PIN is `+secret+`."}]}`, []string{wire.HeaderSession, "shared"}, 200)
	_, resp := c.want(victim, "POST", "/openai/v1/responses", `{"model":"support","input":"My PIN is `+secret+`."}`, nil, 200)
	responseID := regexp.MustCompile(`"id":"(resp_[0-9a-f]+)"`).FindStringSubmatch(resp)[1]
	_, room := c.want(victim, "POST", "/api/voice/rooms", `{"agent":"support"}`, nil, 201)
	roomID := regexp.MustCompile(`"id":"(room_[^"]+)"`).FindStringSubmatch(room)[1]

	before := snapshot(t, b)
	requests := len(b.Model.Requests())

	// Every route that spans persons, whatever its scope.
	routes := b.API.Routes()
	var person []string
	for _, r := range routes {
		switch {
		case slices.Contains(publicRoutes, r.Pattern):
			continue
		case r.Person:
			person = append(person, r.Pattern)
			continue
		}
		method, path := requestFor(r.Pattern, plausible)
		status, body := c.do(attacker, method, path, "{}", nil)
		if status != http.StatusForbidden {
			t.Errorf("%s: a restricted key got %d %s, want 403", r.Pattern, status, clip(body))
		}
	}

	// Every route that acts for a person, for another person.
	chat := func(agent string) string {
		return `{"model":"` + agent + `","messages":[{"role":"user","content":"What is my PIN?"}]}`
	}
	refused := []struct {
		pattern, method, path, body string
		headers                     []string
		status                      int // 403 unless a not-found is the refusal
	}{
		{"POST /openai/v1/chat/completions", "POST", "/openai/v1/chat/completions",
			`{"model":"support","user":"` + victimCustomer + `","messages":[{"role":"user","content":"What is my PIN?"}]}`, nil, 0},
		{"POST /openai/v1/chat/completions", "POST", "/openai/v1/chat/completions", chat("support"),
			[]string{wire.HeaderIdentities, `{"customerId":"` + victimCustomer + `"}`}, 0},
		{"POST /openai/v1/chat/completions", "POST", "/openai/v1/chat/completions", chat("receptionist"),
			[]string{wire.HeaderIdentities, `{"phoneNumber":"` + victimPhone + `"}`}, 0},
		{"POST /openai/v1/responses", "POST", "/openai/v1/responses",
			`{"model":"support","user":"` + victimCustomer + `","input":"What is my PIN?"}`, nil, 0},
		// Another person's stored response is not found for this key.
		{"POST /openai/v1/responses", "POST", "/openai/v1/responses",
			`{"model":"support","previous_response_id":"` + responseID + `","input":"What is my PIN?"}`, nil, http.StatusBadRequest},
		{"POST /anthropic/v1/messages", "POST", "/anthropic/v1/messages",
			`{"model":"support","max_tokens":50,"metadata":{"user_id":"` + victimCustomer + `"},"messages":[{"role":"user","content":"What is my PIN?"}]}`, nil, 0},
		{"POST /agui/{agent}", "POST", "/agui/support",
			`{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"What is my PIN?"}],"forwardedProps":{"customerId":"` + victimCustomer + `"}}`, nil, 0},
		{"POST /api/memory/add", "POST", "/api/memory/add", `{"agentId":"support","userId":"` + victimCustomer + `","content":"I moved."}`, nil, 0},
		{"POST /api/memory/add", "POST", "/api/memory/add", `{"agentId":"receptionist","userId":"` + victimPhone + `","content":"I moved."}`, nil, 0},
		{"POST /api/memory/recall", "POST", "/api/memory/recall", `{"agentId":"support","userId":"` + victimCustomer + `"}`, nil, 0},
		{"POST /api/memory/recall", "POST", "/api/memory/recall", `{"agentId":"receptionist","userId":"` + victimPhone + `"}`, nil, 0},
		{"POST /api/memory/delete-all", "POST", "/api/memory/delete-all", `{"agentId":"support","userId":"` + victimCustomer + `"}`, nil, 0},
		{"POST /api/voice/rooms", "POST", "/api/voice/rooms", `{"agent":"support","identities":{"customerId":"` + victimCustomer + `"}}`, nil, 0},
		{"GET /api/voice/rooms/{id}", "GET", "/api/voice/rooms/" + roomID, "", nil, 0},
		{"POST /api/voice/rooms/{id}/offer", "POST", "/api/voice/rooms/" + roomID + "/offer", `{"type":"offer","sdp":"v=0"}`, nil, 0},
		{"DELETE /api/voice/rooms/{id}", "DELETE", "/api/voice/rooms/" + roomID, "", nil, 0},
		{"POST /api/voice/calls", "POST", "/api/voice/calls", `{"agent":"receptionist","to":"` + victimPhone + `"}`, nil, 0},
		// Its own number, naming the victim beside it.
		{"POST /api/voice/calls", "POST", "/api/voice/calls",
			`{"agent":"support","to":"` + attackerPhone + `","identities":{"customerId":"` + victimCustomer + `"}}`, nil, 0},
	}
	for _, tc := range refused {
		want := tc.status
		if want == 0 {
			want = http.StatusForbidden
		}
		status, body := c.do(attacker, tc.method, tc.path, tc.body, tc.headers)
		if status != want || strings.Contains(body, secret) {
			t.Errorf("%s %s: %d %s, want %d and nothing of the victim's", tc.method, tc.path, status, clip(body), want)
		}
	}
	for _, p := range person {
		if !slices.Contains(forNoOne, p) && !slices.ContainsFunc(refused, func(r struct {
			pattern, method, path, body string
			headers                     []string
			status                      int
		}) bool {
			return r.pattern == p
		}) {
			t.Errorf("the person route %s has no cross-person case in this table", p)
		}
	}

	// One session key, two persons: the attacker's turn carries none of
	// the victim's words.
	for _, agent := range []string{"support", "plain"} {
		c.want(attacker, "POST", "/openai/v1/chat/completions", chat(agent), []string{wire.HeaderSession, "shared"}, 200)
		if got := lastChat(b); strings.Contains(got, secret) {
			t.Errorf("%s: the attacker's model request carries the victim's session: %s", agent, got)
		}
	}
	if n := len(b.Model.Requests()) - requests; n != 2 {
		t.Errorf("%d model requests for the attacker, want the 2 of its own session turns", n)
	}
	after := snapshot(t, b)
	if after.victim != before.victim || after.calls != before.calls {
		t.Errorf("the victim's rows changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if after.sessions != before.sessions+2 {
		t.Errorf("%d sessions after, %d before: want the attacker's 2 new ones", after.sessions, before.sessions)
	}
	if phone.Rang() != 0 {
		t.Errorf("the phone rang %d times for refused calls", phone.Rang())
	}
	if _, v := c.want(victim, "GET", "/api/voice/rooms/"+roomID, "", nil, 200); !strings.Contains(v, `"status":"waiting"`) {
		t.Errorf("the victim's room after the attempts: %s", clip(v))
	}

	// The attacker's own person is served, on every wire (the Responses
	// API too) and on a phone: its number dialled, the phone answers, the
	// call runs as that number with nothing of the victim's.
	c.want(attacker, "POST", "/api/memory/recall", `{"agentId":"receptionist","userId":"`+attackerPhone+`"}`, nil, 200)
	if _, own := c.want(attacker, "POST", "/openai/v1/responses", `{"model":"receptionist","input":"What is my PIN?"}`, nil, 200); strings.Contains(lastChat(b), secret) {
		t.Fatalf("the attacker's own Responses turn carries the victim's PIN: %s", clip(own))
	}
	_, dial := c.want(attacker, "POST", "/api/voice/calls", `{"agent":"receptionist","to":"`+attackerPhone+`"}`, nil, 202)
	callID := regexp.MustCompile(`"callId":"([^"]+)"`).FindStringSubmatch(dial)[1]
	var call *siptest.Call
	select {
	case call = <-phone.Answered():
	case <-time.After(30 * time.Second):
		t.Fatal("the phone was not called")
	}
	if call.To != attackerPhone {
		t.Fatalf("the box dialled %q", call.To)
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	asked := len(b.Model.ChatRequests())
	call.Talk(1)
	poll.Until(t, "the agent's answer to the callee", 30*time.Second, func() bool { return len(b.Model.ChatRequests()) > asked })
	if got := lastChat(b); strings.Contains(got, secret) || !strings.Contains(got, "no saved memory of this caller") {
		t.Fatalf("the call's model context: %s", got)
	}
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	var identity string
	poll.Until(t, "the call's completion", 30*time.Second, func() bool {
		err := b.Pool.QueryRow(ctx, `SELECT coalesce(memory->>'identity', '') FROM stackbone_platform.voice_calls
			WHERE id = $1 AND status = 'ended'`, callID).Scan(&identity)
		return err == nil
	})
	if identity != attackerPhone {
		t.Fatalf("the call ran as %q", identity)
	}
	if final := snapshot(t, b); final.victim != before.victim {
		t.Fatalf("the victim's memory changed after the attacker's own call:\nbefore %s\nafter  %s", before.victim, final.victim)
	}
}

// rows is what the test compares before and after: the victim's memory
// rows and sessions' turns, and the number of calls and sessions.
type rows struct {
	victim   string
	calls    int
	sessions int
}

func snapshot(t *testing.T, b *boxtest.Box) rows {
	t.Helper()
	var r rows
	err := b.Pool.QueryRow(t.Context(), `SELECT
		(SELECT coalesce(string_agg(agent_id || ':' || content || ':' || updated_at::text, '|' ORDER BY id), '')
			FROM stackbone_platform.memory_facts WHERE user_id = ANY($1)) || '#' ||
		(SELECT coalesce(string_agg(agent_id || ':' || summary, '|' ORDER BY id), '')
			FROM stackbone_platform.memory_calls WHERE user_id = ANY($1)),
		(SELECT count(*) FROM stackbone_platform.voice_calls),
		(SELECT count(*) FROM stackbone_platform.sessions)`,
		[]string{victimCustomer, victimPhone}).Scan(&r.victim, &r.calls, &r.sessions)
	if err != nil {
		t.Fatal(err)
	}
	r.victim += "#" + victimSessions(t, b)
	return r
}

// victimSessions lists the sessions that existed before the attacker's
// turns (they hold the victim's PIN in their turns).
func victimSessions(t *testing.T, b *boxtest.Box) string {
	t.Helper()
	var s string
	err := b.Pool.QueryRow(t.Context(), `SELECT coalesce(string_agg(s.id || ':' || s.turns || ':' || s.last_activity_at::text, '|' ORDER BY s.id), '')
		FROM stackbone_platform.sessions s WHERE EXISTS (SELECT 1 FROM stackbone_platform.session_turns st
			WHERE st.session_id = s.id AND st.user_text LIKE '%' || $1 || '%')`, secret).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lastChat is the last chat request the model was sent, as text.
func lastChat(b *boxtest.Box) string {
	reqs := b.Model.ChatRequests()
	if len(reqs) == 0 {
		return ""
	}
	raw, _ := json.Marshal(reqs[len(reqs)-1].Messages)
	return string(raw)
}

// requestFor makes a request line from a route pattern, each path
// parameter filled by fill.
func requestFor(pattern string, fill func(param string) string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "GET", pattern
	}
	path = strings.TrimSuffix(path, "{$}")
	path = regexp.MustCompile(`\{[^}]+\}`).ReplaceAllStringFunc(path, fill)
	if strings.HasSuffix(path, "/") {
		path += "anything"
	}
	return method, path
}

// plausible fills a path parameter with a value of its kind.
func plausible(param string) string {
	switch param {
	case "{agent}", "{agentId}", "{model}":
		return "support"
	}
	return "x1"
}

type client struct {
	t   *testing.T
	url string
}

func (c *client) do(key, method, path, body string, headers []string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, c.url+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

func (c *client) want(key, method, path, body string, headers []string, status int) (int, string) {
	c.t.Helper()
	got, raw := c.do(key, method, path, body, headers)
	if got != status {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, got, clip(raw), status)
	}
	return got, raw
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
