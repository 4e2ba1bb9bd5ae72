package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
)

type box struct {
	t     *testing.T
	url   string
	model *providertest.Server
	keys  *auth.Store
	pool  *pgxpool.Pool
}

const devKey = "local-dev"

func newBox(t *testing.T) *box {
	t.Helper()
	b := boxtest.New(t, `
agents:
  support:
    model: openai/gpt-4o-mini
    memory: {identityKey: customerId, read: true, save: false, instructions: "Remember preferences."}
  receptionist:
    model: openai/gpt-4o-mini
`, boxtest.Tune(func(cfg *config.Config) {
		p := cfg.Providers["openai"]
		p.Prices = map[string]config.Price{"gpt-4o": {Input: 2.5, Output: 10}}
		cfg.Providers["openai"] = p
		cfg.Memory.Model = ""
	}))
	if err := b.Keys.Ensure(t.Context(), auth.DevKey, devKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	return &box{t: t, url: b.URL, model: b.Model, keys: b.Keys, pool: b.Pool}
}

type envelope struct {
	Data  json.RawMessage `json:"data"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// do sends a request and returns the status and the decoded envelope.
func (b *box) do(method, path, key, body string) (int, envelope) {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.url+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		b.t.Fatalf("%s %s: body is not JSON: %s", method, path, raw)
	}
	if (env.Error == nil) == (resp.StatusCode >= 400) {
		b.t.Fatalf("%s %s: status %d with envelope %s", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, env
}

func (b *box) expect(method, path, key, body string, status int, code string) envelope {
	b.t.Helper()
	got, env := b.do(method, path, key, body)
	gotCode := ""
	if env.Error != nil {
		gotCode = env.Error.Code
	}
	if got != status || gotCode != code {
		b.t.Fatalf("%s %s %s: got %d %q (%+v), want %d %q", method, path, body, got, gotCode, env.Error, status, code)
	}
	return env
}

func TestAuthAndScopes(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	routes := [][2]string{
		{"POST", "/api/memory/add"}, {"POST", "/api/memory/recall"}, {"POST", "/api/memory/delete-all"},
		{"GET", "/api/memory/settings/support"}, {"PUT", "/api/memory/settings/support"}, {"DELETE", "/api/memory/settings/support"},
		{"GET", "/api/system/memory-extraction"}, {"PUT", "/api/system/memory-extraction"}, {"GET", "/api/system/models"},
		{"GET", "/api/runs"}, {"GET", "/api/agents"}, {"GET", "/api/activity"}, {"GET", "/api/nothing-here"},
	}
	for _, r := range routes {
		b.expect(r[0], r[1], "", "{}", 401, "unauthorized")
		b.expect(r[0], r[1], "wrong-key", "{}", 401, "unauthorized")
	}
	// Health is open.
	resp, err := http.Get(b.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	// A key without config:write can read settings but not write them.
	ctx := context.Background()
	reader, _, err := b.keys.Create(ctx, "reader", []string{auth.ScopeConfigRead, auth.ScopeMemoryRead})
	if err != nil {
		t.Fatal(err)
	}
	b.expect("GET", "/api/memory/settings/support", reader, "", 200, "")
	b.expect("PUT", "/api/memory/settings/support", reader, `{"read":false}`, 403, "forbidden")
	b.expect("DELETE", "/api/memory/settings/support", reader, "", 403, "forbidden")
	b.expect("PUT", "/api/system/memory-extraction", reader, `{"model":"openai/x"}`, 403, "forbidden")
	b.expect("POST", "/api/memory/add", reader, `{}`, 403, "forbidden")
	b.expect("POST", "/api/memory/recall", reader, `{"agentId":"support","userId":"u"}`, 200, "")
	// A revoked key stops working.
	if err := b.keys.Revoke(ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	b.expect("POST", "/api/memory/recall", reader, `{"agentId":"support","userId":"u"}`, 401, "unauthorized")
	b.expect("GET", "/api/nothing-here", devKey, "", 404, "not_found")
	// Any valid key may read what the box offers; memory.basic is advertised.
	if env := b.expect("GET", "/api/capabilities", reader2(t, b), "", 200, ""); !bytes.Contains(env.Data, []byte(`"memory.basic"`)) {
		t.Fatalf("capabilities: %s", env.Data)
	}
	// Keys are stored hashed, never in plain text.
	var plain int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.api_keys
		WHERE position(convert_to($1, 'UTF8') IN key_hash) > 0 OR position(convert_to($2, 'UTF8') IN key_hash) > 0`,
		devKey, reader).Scan(&plain); err != nil || plain != 0 {
		t.Fatalf("plain keys stored: %d %v", plain, err)
	}
}

// The models a client may offer for memory extraction: the configured
// providers and the models the config names (priced or used by an agent),
// for a key that may read the config; nothing of a provider but its name.
func TestSystemModels(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	env := b.expect("GET", "/api/system/models", devKey, "", 200, "")
	if got := string(env.Data); got != `{"providers":["openai"],"models":["openai/gpt-4o","openai/gpt-4o-mini"]}` {
		t.Fatalf("models %s", got)
	}
	runsOnly, _, err := b.keys.Create(context.Background(), "runs-only", []string{auth.ScopeRunsRead})
	if err != nil {
		t.Fatal(err)
	}
	b.expect("GET", "/api/system/models", runsOnly, "", 403, "forbidden")
}

// A write the database refuses answers 500 memory_persist_failed, the
// code the API documents, with the sentinel's words and not the
// database's; nothing was written.
func TestMemoryPersistFailedKeepsItsCode(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	if _, err := b.pool.Exec(context.Background(), `ALTER TABLE stackbone_platform.memory_calls ADD CONSTRAINT refuse CHECK (summary <> 'REFUSE')`); err != nil {
		t.Fatal(err)
	}
	b.model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"Kept?"}],"summary":"REFUSE"}`})
	env := b.expect("POST", "/api/memory/add", devKey, `{"content":"hello","agentId":"support","userId":"+34111111119"}`, 500, "memory_persist_failed")
	if msg := env.Error.Message; msg != "persist failed" {
		t.Fatalf("the database's words reached the client: %s", msg)
	}
	env = b.expect("POST", "/api/memory/recall", devKey, `{"agentId":"support","userId":"+34111111119"}`, 200, "")
	if strings.Contains(string(env.Data), "Kept?") {
		t.Fatalf("a failed write left facts: %s", env.Data)
	}
}

func TestMemoryRoutes(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	b.model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master."},{"op":"add","content":"Call after 16:00."}],"summary":"Asked about the AI master."}`})
	env := b.expect("POST", "/api/memory/add", devKey, `{
		"content": [{"role":"user","content":"I am interested in the AI master. Call me after 16:00."},
		            {"role":"assistant","content":[{"type":"text","text":"I will arrange an afternoon follow-up."}]}],
		"agentId": "support", "userId": "+34111111111",
		"call": {"startedAt": "2026-10-26T09:00:00.000Z", "durationSeconds": 83, "outcome": "scheduled", "runId": "run-1"}}`, 200, "")
	var added struct {
		Facts []memory.Fact `json:"facts"`
		Call  memory.Call   `json:"call"`
	}
	json.Unmarshal(env.Data, &added)
	if len(added.Facts) != 2 || added.Call.Summary != "Asked about the AI master." || *added.Call.DurationSeconds != 83 ||
		added.Call.StartedAt.Format("2006-01-02T15:04:05Z07:00") != "2026-10-26T09:00:00Z" || *added.Call.RunID != "run-1" {
		t.Fatalf("add: %s", env.Data)
	}
	// The transcript reached the model as data, array content parts included.
	usr := b.model.ChatRequests()[0].Messages[1].Content
	if !strings.Contains(usr, "I will arrange an afternoon follow-up.") {
		t.Fatalf("content parts lost: %s", usr)
	}

	env = b.expect("POST", "/api/memory/recall", devKey, `{"agentId":"support","userId":"+34111111111","calls":3}`, 200, "")
	var rec struct {
		Facts []map[string]any `json:"facts"`
		Calls []map[string]any `json:"calls"`
	}
	json.Unmarshal(env.Data, &rec)
	if len(rec.Facts) != 2 || len(rec.Calls) != 1 {
		t.Fatalf("recall: %s", env.Data)
	}
	for _, k := range []string{"id", "content", "createdAt", "updatedAt"} {
		if _, ok := rec.Facts[0][k]; !ok {
			t.Errorf("fact lacks %s: %v", k, rec.Facts[0])
		}
	}
	for _, k := range []string{"id", "startedAt", "durationSeconds", "outcome", "summary", "runId"} {
		if _, ok := rec.Calls[0][k]; !ok {
			t.Errorf("call lacks %s: %v", k, rec.Calls[0])
		}
	}
	env = b.expect("POST", "/api/memory/delete-all", devKey, `{"agentId":"support","userId":"+34111111111"}`, 200, "")
	if string(env.Data) != `{"deleted":3}` {
		t.Fatalf("delete-all: %s", env.Data)
	}

	// Invalid requests: the seed's code, 400, and nothing reaches the model.
	n := len(b.model.ChatRequests())
	for _, body := range []string{
		``, `[]`, `{"agentId":"support","userId":"u"}`, `{"content":"x","userId":"u"}`, `{"content":"x","agentId":"support"}`,
		`{"content":"x","agentId":"support","userId":""}`, `{"content":"","agentId":"support","userId":"u"}`,
		`{"content":42,"agentId":"support","userId":"u"}`, `{"content":"x","agentId":"support","userId":"u","extra":1}`,
		`{"content":[{"role":"user","content":"x","mood":"happy"}],"agentId":"support","userId":"u"}`,
		`{"content":"x","agentId":"support","userId":"u","call":{"startedAt":"yesterday"}}`,
		`{"content":"x","agentId":"support","userId":"u","call":{"durationSeconds":"83"}}`,
		`{"content":"x","agentId":"support","userId":"u","call":{"outcome":"ok","color":"red"}}`,
		`{"content":"x","agentId":"support","userId":"u","instructions":""}`,
		`{"content":"x","agentId":"support","userId":"u","instructions":null}`,
		`{"content":"x","agentId":"support","userId":"u"} {"again":true}`,
		`{"content":"x","agentId":"support","userId":7}`,
	} {
		b.expect("POST", "/api/memory/add", devKey, body, 400, "memory_invalid_request")
	}
	for _, body := range []string{`{"agentId":"support"}`, `{"agentId":"support","userId":"u","calls":101}`,
		`{"agentId":"support","userId":"u","calls":-1}`, `{"agentId":"support","userId":"u","calls":1.5}`, `{"agentId":"support","userId":"u","calls":null}`} {
		b.expect("POST", "/api/memory/recall", devKey, body, 400, "memory_invalid_request")
	}
	b.expect("POST", "/api/memory/delete-all", devKey, `{"agentId":"support"}`, 400, "memory_invalid_request")
	if len(b.model.ChatRequests()) != n {
		t.Fatal("an invalid request reached the model")
	}
	big := fmt.Sprintf(`{"content":%q,"agentId":"support","userId":"u"}`, strings.Repeat("x", 5<<20))
	b.expect("POST", "/api/memory/add", devKey, big, 400, "memory_invalid_request")

	// Model failures and conflicts map to their statuses.
	b.model.Script(providertest.Reply{Content: "```json\n{}\n```"})
	b.expect("POST", "/api/memory/add", devKey, `{"content":"x","agentId":"support","userId":"u"}`, 502, "memory_invalid_model_output")
	b.model.Script(providertest.Reply{Status: 500})
	b.expect("POST", "/api/memory/add", devKey, `{"content":"x","agentId":"support","userId":"u"}`, 502, "memory_model_failed")
	gate := make(chan struct{})
	b.model.Script(providertest.Reply{Gate: gate, Content: `{"operations":[],"summary":"s"}`})
	done := make(chan envelope)
	go func() {
		_, env := b.do("POST", "/api/memory/add", devKey, `{"content":"x","agentId":"support","userId":"racer"}`)
		done <- env
	}()
	waitForRequests(t, b.model, n+3)
	b.expect("POST", "/api/memory/delete-all", devKey, `{"agentId":"support","userId":"racer"}`, 200, "")
	close(gate)
	if env := <-done; env.Error == nil || env.Error.Code != "memory_conflict" {
		t.Fatalf("add racing delete-all: %+v", env.Error)
	}
}

func waitForRequests(t *testing.T, m *providertest.Server, n int) {
	t.Helper()
	for i := 0; len(m.ChatRequests()) < n; i++ {
		if i > 5000 {
			t.Fatal("the model never received the request")
		}
		select {
		case <-t.Context().Done():
			return
		case <-timeAfterMs(2):
		}
	}
}

func TestSettingsRoutes(t *testing.T) {
	t.Parallel()
	b := newBox(t)
	env := b.expect("GET", "/api/memory/settings/support", devKey, "", 200, "")
	var v map[string]any
	json.Unmarshal(env.Data, &v)
	for _, k := range []string{"agentId", "overrides", "value", "origins", "binding"} {
		if _, ok := v[k]; !ok {
			t.Fatalf("settings lack %s: %s", k, env.Data)
		}
	}
	env = b.expect("PUT", "/api/memory/settings/support", devKey, `{"read":false,"instructions":"Only product interests."}`, 200, "")
	if !bytes.Contains(env.Data, []byte(`"origins":{"read":"studio","save":"code","instructions":"studio"}`)) ||
		!bytes.Contains(env.Data, []byte(`"overrides":{"read":false,"instructions":"Only product interests."}`)) {
		t.Fatalf("put: %s", env.Data)
	}
	env = b.expect("DELETE", "/api/memory/settings/support?field=instructions", devKey, "", 200, "")
	if !bytes.Contains(env.Data, []byte(`"instructions":"code"`)) {
		t.Fatalf("reset field: %s", env.Data)
	}
	env = b.expect("DELETE", "/api/memory/settings/support", devKey, "", 200, "")
	if !bytes.Contains(env.Data, []byte(`"overrides":{}`)) {
		t.Fatalf("reset all: %s", env.Data)
	}
	b.expect("GET", "/api/memory/settings/nobody", devKey, "", 404, "agent_not_found")
	b.expect("PUT", "/api/memory/settings/nobody", devKey, `{"read":true}`, 404, "agent_not_found")
	b.expect("DELETE", "/api/memory/settings/support?field=color", devKey, "", 400, "memory_invalid_request")
	b.expect("DELETE", "/api/memory/settings/support?field=", devKey, "", 400, "memory_invalid_request")
	for _, body := range []string{`{}`, `{"read":"yes"}`, `{"read":null}`, `{"save":1}`, `{"instructions":""}`, `{"color":"red"}`, `{"identityKey":""}`} {
		b.expect("PUT", "/api/memory/settings/support", devKey, body, 400, "memory_invalid_request")
	}
	b.expect("PUT", "/api/memory/settings/support", devKey, `{"identityKey":"customerId"}`, 200, "")
	b.expect("PUT", "/api/memory/settings/support", devKey, `{"identityKey":"email"}`, 409, "memory_identity_key_fixed")
	env = b.expect("GET", "/api/memory/settings/receptionist", devKey, "", 200, "")
	if !bytes.Contains(env.Data, []byte(`"binding":null`)) {
		t.Fatalf("unbound agent: %s", env.Data)
	}
	env = b.expect("GET", "/api/activity?subject=agent:support", devKey, "", 200, "")
	if bytes.Contains(env.Data, []byte("Only product interests")) || !bytes.Contains(env.Data, []byte(`"fields":["read","instructions"]`)) {
		t.Fatalf("activity: %s", env.Data)
	}

	// System extraction settings.
	b.expect("PUT", "/api/system/memory-extraction", devKey, `{"model":"openai/gpt-4o-mini","reasoningEffort":"medium"}`, 200, "")
	b.expect("PUT", "/api/system/memory-extraction", devKey, `{"reasoningEffort":"huge"}`, 400, "memory_invalid_request")
	b.expect("PUT", "/api/system/memory-extraction/prompt", devKey, `{"text":"Keep dietary needs."}`, 200, "")
	env = b.expect("POST", "/api/system/memory-extraction/prompt/publish", devKey, "", 200, "")
	if !bytes.Contains(env.Data, []byte(`"activeGuidance":"published"`)) {
		t.Fatalf("publish: %s", env.Data)
	}
	env = b.expect("DELETE", "/api/system/memory-extraction/prompt", devKey, "", 200, "")
	if !bytes.Contains(env.Data, []byte(`"activeGuidance":"built-in"`)) {
		t.Fatalf("reset prompt: %s", env.Data)
	}
	env = b.expect("PUT", "/api/system/memory-extraction", devKey, `{"model":null}`, 200, "")
	if !bytes.Contains(env.Data, []byte(`"selection":{"model":null,"reasoningEffort":"medium"}`)) {
		t.Fatalf("clear model: %s", env.Data)
	}
}

func reader2(t *testing.T, b *box) string {
	secret, _, err := b.keys.Create(context.Background(), "runs-only", []string{auth.ScopeRunsRead})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}
