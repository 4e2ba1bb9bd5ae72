package box_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

// overrideAgents run on the scripted "openai" provider; the tests add a
// second one, "backup", that Studio's overrides move the chains to.
const overrideAgents = `
agents:
  support:
    model: openai/chat
    instructions: You are the support agent.
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
`

// newOverrideBox is a box whose agents use "openai" (b.Model) and that
// also has a provider "backup" (the server returned).
func newOverrideBox(t *testing.T) (*boxtest.Box, *providertest.Server) {
	t.Helper()
	backup := providertest.New(t)
	b := boxtest.New(t, overrideAgents, boxtest.Tune(func(cfg *config.Config) {
		cfg.Providers["backup"] = config.Provider{BaseURL: backup.URL()}
	}))
	for _, m := range []*providertest.Server{b.Model, backup} {
		m.RespondTranscripts(func([]byte) string { return "What are your opening hours?" })
		m.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
			if strings.Contains(req.Messages[0].Content, `"operations"`) {
				return providertest.Reply{Content: `{"operations":[],"summary":"Asked for the hours."}`}
			}
			return providertest.Reply{Content: "We open at nine."}
		})
	}
	return b, backup
}

// chainsView is what the models routes answer.
type chainsView struct {
	Value     struct{ Model, STT, TTS []string }
	Origins   struct{ Model, STT, TTS string }
	Providers []string
	UpdatedBy *string
}

// An operator moves an agent's model chain to another provider: the next
// text turn is served by it (its run names it, its server got the
// request), and a reset goes back to the config's chain. Bad chains are
// refused with the field and the entry named, an unknown agent is a 404,
// and a key without config:write may read the chains but not change them.
func TestModelChainOverrideServesTheNextTurn(t *testing.T) {
	t.Parallel()
	b, backup := newOverrideBox(t)
	ctx := t.Context()
	c := &client{t: t, url: b.URL}
	const path = "/api/agents/support/models"
	turns := 0
	turn := func() string {
		t.Helper()
		c.want(boxtest.Key, "POST", "/openai/v1/chat/completions",
			`{"model":"support","messages":[{"role":"user","content":"When do you open?"}]}`, nil, 200)
		turns++
		poll.Until(t, "the turn's run", 10*time.Second, func() bool {
			var n int
			err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.runs WHERE agent_id = 'support' AND kind = 'agent_turn'`).Scan(&n)
			return err == nil && n == turns
		})
		var model string
		if err := b.Pool.QueryRow(ctx, `SELECT model FROM stackbone_platform.runs WHERE agent_id = 'support' AND kind = 'agent_turn'
			ORDER BY started_at DESC LIMIT 1`).Scan(&model); err != nil {
			t.Fatal(err)
		}
		return model
	}
	view := func(raw string) chainsView {
		t.Helper()
		var env struct{ Data chainsView }
		if err := json.Unmarshal([]byte(raw), &env); err != nil {
			t.Fatal(err)
		}
		return env.Data
	}

	if got := turn(); got != "openai/chat" {
		t.Fatalf("the first turn's run names %q", got)
	}
	_, raw := c.want(boxtest.Key, "GET", path, "", nil, 200)
	if v := view(raw); strings.Join(v.Value.Model, ",") != "openai/chat" || v.Origins.Model != "code" ||
		v.Origins.STT != "default" || strings.Join(v.Value.TTS, ",") != "openai/tts-1" || strings.Join(v.Providers, ",") != "backup,openai" {
		t.Fatalf("before: %s", raw)
	}

	_, raw = c.want(boxtest.Key, "PUT", path, `{"model":["backup/chat"]}`, nil, 200)
	if v := view(raw); strings.Join(v.Value.Model, ",") != "backup/chat" || v.Origins.Model != "studio" || v.Origins.TTS != "default" ||
		v.UpdatedBy == nil || *v.UpdatedBy != "key:test" {
		t.Fatalf("after the PUT: %s", raw)
	}
	asked := len(b.Model.ChatRequests())
	if got := turn(); got != "backup/chat" {
		t.Fatalf("the turn after the PUT: its run names %q", got)
	}
	if reqs := backup.ChatRequests(); len(reqs) != 1 || reqs[0].Model != "chat" || len(b.Model.ChatRequests()) != asked {
		t.Fatalf("the backup got %d chat requests, the first provider %d more", len(reqs), len(b.Model.ChatRequests())-asked)
	}
	_, raw = c.want(boxtest.Key, "GET", "/api/agents", "", nil, 200)
	if !strings.Contains(raw, `"name":"support","model":"backup/chat","fallbacks":[],"stt":["openai/whisper-1"],"tts":["openai/tts-1"],"origins":{"model":"studio","stt":"default","tts":"default"}`) {
		t.Fatalf("GET /api/agents: %s", raw)
	}

	_, raw = c.want(boxtest.Key, "DELETE", path+"?field=model", "", nil, 200)
	if v := view(raw); strings.Join(v.Value.Model, ",") != "openai/chat" || v.Origins.Model != "code" || v.UpdatedBy != nil {
		t.Fatalf("after the reset: %s", raw)
	}
	if got := turn(); got != "openai/chat" {
		t.Fatalf("the turn after the reset: its run names %q", got)
	}
	if n := len(backup.ChatRequests()); n != 1 {
		t.Fatalf("the backup got %d chat requests after the reset", n)
	}
	_, raw = c.want(boxtest.Key, "GET", "/api/activity?subject=agent:support", "", nil, 200)
	if !strings.Contains(raw, `"action":"agent.models.reset","subject":"agent:support","fields":["model"]`) ||
		!strings.Contains(raw, `"action":"agent.models.saved","subject":"agent:support","fields":["model"]`) ||
		strings.Contains(raw, "backup/chat") {
		t.Fatalf("activity log: %s", raw)
	}

	// Refusals: 400 naming the field and the entry, nothing saved.
	for _, tc := range []struct{ body, want string }{
		{`{"model":["acme/gpt"]}`, `model: entry 1 \"acme/gpt\": no provider \"acme\" is configured (configured: backup, openai)`},
		{`{"model":["openai/chat","espeak"]}`, `model: entry 2 \"espeak\": espeak is a text-to-speech engine`},
		{`{"model":[]}`, `model: list 1 to 5 entries`},
		{`{"stt":["openai/a","openai/b","openai/c","openai/d","openai/e","openai/f"]}`, `stt: list 1 to 5 entries, the first tried first (got 6)`},
		{`{"tts":["openai/tts-1","openai/tts-1"]}`, `tts: entry 2 \"openai/tts-1\" is listed twice`},
		{`{"tts":["openai tts"]}`, `tts: entry 1 \"openai tts\" is not a provider/model id`},
		{`{"model":null}`, `model must not be null`},
		{`{"model":"openai/chat"}`, `invalid_request`},
		{`{"voice":["openai/chat"]}`, `invalid_request`},
		{`{}`, `nothing to save`},
	} {
		if _, raw := c.want(boxtest.Key, "PUT", path, tc.body, nil, 400); !strings.Contains(raw, tc.want) {
			t.Errorf("PUT %s: %s, want it to say %s", tc.body, raw, tc.want)
		}
	}
	c.want(boxtest.Key, "DELETE", path+"?field=voice", "", nil, 400)
	_, raw = c.want(boxtest.Key, "GET", path, "", nil, 200)
	if v := view(raw); v.Origins.Model != "code" || v.Origins.STT != "default" || v.Origins.TTS != "default" {
		t.Fatalf("refused changes were saved: %s", raw)
	}
	_, raw = c.want(boxtest.Key, "PUT", path, `{"tts":["backup/tts-1","espeak"]}`, nil, 200)
	if v := view(raw); strings.Join(v.Value.TTS, ",") != "backup/tts-1,espeak" || v.Origins.TTS != "studio" {
		t.Fatalf("a tts chain ending in espeak: %s", raw)
	}
	for _, method := range []string{"GET", "PUT", "DELETE"} {
		if _, raw := c.want(boxtest.Key, method, "/api/agents/nobody/models", `{"model":["openai/chat"]}`, nil, 404); !strings.Contains(raw, "agent_not_found") {
			t.Errorf("%s of an unknown agent: %s", method, raw)
		}
	}

	// A key that may read the config but not write it.
	reader, _, err := b.Keys.Create(ctx, "reader", []string{auth.ScopeConfigRead})
	if err != nil {
		t.Fatal(err)
	}
	c.want(reader, "GET", path, "", nil, 200)
	c.want(reader, "PUT", path, `{"model":["backup/chat"]}`, nil, 403)
	c.want(reader, "DELETE", path, "", nil, 403)
	c.want(boxtest.Key, "DELETE", path, "", nil, 200)
	_, raw = c.want(reader, "GET", path, "", nil, 200)
	if v := view(raw); v.Origins.Model != "code" || v.Origins.TTS != "default" {
		t.Fatalf("after resetting all: %s", raw)
	}
}

// A call takes the agent's chains when it opens: with its speech and model
// chains moved to "backup", the caller's greeting, transcription and
// answer all come from the backup, even after the override is reset in the
// middle of the call; the next call is back on the config's provider.
func TestCallTakesTheOverriddenChainsWhenItOpens(t *testing.T) {
	t.Parallel()
	b, backup := newOverrideBox(t)
	c := &client{t: t, url: b.URL}
	caller := siptest.NewCaller(t)
	ctx := context.Background()
	c.want(boxtest.Key, "PUT", "/api/agents/receptionist/models",
		`{"model":["backup/chat"],"stt":["backup/whisper-1"],"tts":["backup/tts-1"]}`, nil, 200)

	call, err := caller.Call(ctx, "100", b.Phones.Addr(), "+34612000001")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	if spoken := backup.SpeechRequests(); len(spoken) == 0 || spoken[0] != "Hello, front desk." {
		t.Fatalf("the backup voice said %q", spoken)
	}
	// Reset while the call goes on: this call keeps what it opened with.
	c.want(boxtest.Key, "DELETE", "/api/agents/receptionist/models", "", nil, 200)
	call.Talk(1)
	poll.Until(t, "the answer spoken by the backup", 30*time.Second, func() bool {
		return strings.Contains(strings.Join(backup.SpeechRequests(), "|"), "We open at nine.")
	})
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	if len(backup.Uploads()) == 0 || len(b.Model.Uploads()) != 0 || len(b.Model.SpeechRequests()) != 0 {
		t.Fatalf("transcriptions: backup %d, openai %d; openai spoke %q", len(backup.Uploads()), len(b.Model.Uploads()), b.Model.SpeechRequests())
	}
	var model string
	poll.Until(t, "the call's turn run", 30*time.Second, func() bool {
		return b.Pool.QueryRow(ctx, `SELECT model FROM stackbone_platform.runs WHERE agent_id = 'receptionist' AND kind = 'agent_turn'`).Scan(&model) == nil
	})
	if model != "backup/chat" {
		t.Fatalf("the call's turn ran on %q", model)
	}

	// The next call opens on the config's chains.
	call, err = caller.Call(ctx, "100", b.Phones.Addr(), "+34612000002")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the second call's greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	if spoken := b.Model.SpeechRequests(); len(spoken) != 1 || spoken[0] != "Hello, front desk." {
		t.Fatalf("the config's voice said %q", spoken)
	}
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
}
