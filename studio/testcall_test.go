package studio_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/voice"
)

// The Playground's Call button runs a real browser call in place
// (Chromium's fake microphone plays a recorded voice into the box's WebRTC
// peer): the heard transcript shows on the screen as the call goes, Hang up
// ends it, and the memory report appears once memory has saved. The
// call's record in the database is ended, with the caller's turn and the
// save.
func TestPlaygroundTestCall(t *testing.T) {
	b, p := callerOnABox(t)
	ctx := context.Background()
	p.signIn(adminKey)
	p.goTo("#/playground")
	p.set("main select[name=agent]", "support")
	p.set("main input[name=customerId]", "crm/88")
	p.click("#call-start")

	var shown testCallState
	poll.Until(t, "the agent's answer heard on the Playground", 60*time.Second, func() bool {
		_ = p.br.Eval(p.ctx, `window.stackboneStudioCall`, &shown)
		if shown.Status == "failed" {
			t.Fatalf("the test call failed: %s", shown.Error)
		}
		for _, e := range shown.Transcript {
			if e.Role == voice.RoleAssistant && e.Text == agentSays {
				return true
			}
		}
		return false
	})

	if got := p.text("#call-transcript"); !strings.Contains(got, agentSays) {
		t.Fatalf("the screen's transcript %q", got)
	}
	var callID string
	p.js(`document.getElementById("test-call").dataset.callId`, &callID)
	p.click("#call-end")
	poll.Until(t, "the memory report after the call", 30*time.Second, func() bool {
		var settled bool
		_ = p.br.Eval(p.ctx, `document.getElementById("test-call").dataset.settled === "1"`, &settled)
		return settled
	})

	if got := p.text("#call-memory #saved"); got != "saved" {
		t.Fatalf("the memory report says %q (%s)", got, p.text("#call-memory"))
	}

	rec, err := b.calls.Get(ctx, callID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "ended" || rec.Memory == nil || !rec.Memory.Saved || rec.Memory.Identity != "crm/88" {
		t.Fatalf("the call's record: status %q memory %+v", rec.Status, rec.Memory)
	}
	heard := false
	for _, e := range rec.Transcript {
		if e.Role == voice.RoleUser && e.Text == callerSays {
			heard = true
		}
	}
	if !heard {
		t.Fatalf("the caller's turn is not in the record: %+v", rec.Transcript)
	}
}

// callerOnABox is a box whose scripted provider hears callerSays, answers
// agentSays and extracts one fact, and Studio open in a Chromium whose
// microphone says callerSays once.
func callerOnABox(t *testing.T) (*box, *page) {
	t.Helper()
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test installs it): the call needs a recorded voice", tool)
		}
	}
	b := newBox(t)
	b.model.RespondTranscripts(func([]byte) string { return "" })
	b.model.ScriptTranscripts(callerSays)
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: extraction}
		}
		return providertest.Reply{Content: agentSays}
	})
	return b, b.openWithMic(t, speechWAV(t, callerSays))
}

// newBoxWithoutProvider is newBox with no model provider configured, as
// `stackbone dev` runs on a machine without OPENAI_BASE_URL or
// OPENAI_API_KEY.
func newBoxWithoutProvider(t *testing.T) *box {
	t.Helper()
	b := boxtest.New(t, agentsYAML, boxtest.Tune(func(c *config.Config) {
		c.Providers = map[string]config.Provider{"openai": {}}
	}))
	if err := b.Keys.Ensure(t.Context(), "admin", adminKey, auth.AllScopes); err != nil {
		t.Fatal(err)
	}
	return &box{t: t, url: b.URL, model: b.Model, pool: b.Pool, keys: b.Keys, rt: b.Runtime, mem: b.Memory, calls: b.Calls, sip: b.Phones}
}

// failedTestCall places a test call from the Playground that the box
// cannot carry (no provider for its speech) and returns what the page
// shows once the call is over.
func failedTestCall(t *testing.T) (status, hint string, shown testCallState) {
	b := newBoxWithoutProvider(t)
	p := b.openWithMic(t, "")
	p.signIn(adminKey)
	p.goTo("#/playground")
	p.waitFor(`!document.getElementById("call-provider").hidden`, "the note that no provider is configured")
	hint = p.text("#call-provider")
	p.set("main select[name=agent]", "support")
	p.set("main input[name=customerId]", "crm/88")
	p.click("#call-start")
	poll.Until(t, "the test call's end on the Playground", 60*time.Second, func() bool {
		_ = p.br.Eval(p.ctx, `window.stackboneStudioCall`, &shown)
		return strings.HasPrefix(shown.Status, "failed") || strings.HasPrefix(shown.Status, "ended")
	})
	return p.text("#call-status"), hint, shown
}

type testCallState struct {
	Status, Error string
	Transcript    []voice.Entry
}

// A test call that fails says so, and why: the box's reason for ending
// it, not only that it ended.
func TestTestCallShowsWhyItFailed(t *testing.T) {
	status, _, shown := failedTestCall(t)
	if shown.Status != "failed" || !strings.Contains(status, "speech engines are not available") {
		t.Fatalf("the failed call's page says %q (state %+v)", status, shown)
	}
}

// Without a model provider, the test call panel and the call's failure
// name the settings that configure one.
func TestTestCallNamesTheProviderSetting(t *testing.T) {
	status, hint, _ := failedTestCall(t)
	for _, said := range []string{hint, status} {
		if !strings.Contains(said, "OPENAI_API_KEY") || !strings.Contains(said, "OPENAI_BASE_URL") {
			t.Fatalf("the page does not say which setting configures a provider: %q", said)
		}
	}
}

// A test call the box refuses says so with the API's message and code:
// a key without config:read types the agent's name, and a name the box
// does not know is agent_not_found.
func TestTestCallShowsTheAPIError(t *testing.T) {
	b := newBox(t)
	const caller = "studio-caller"
	if err := b.keys.Ensure(t.Context(), "caller", caller, []string{auth.ScopeVoice, auth.ScopeAgentsRun}); err != nil {
		t.Fatal(err)
	}
	p := b.open(t)
	p.signIn(caller)
	p.goTo("#/playground")
	p.set("main input[name=agent]", "ghost")
	p.click("#call-start")
	p.waitFor(`window.stackboneStudioCall.status === "failed"`, "the refused test call")
	if got := p.text("#call-status"); !strings.Contains(got, "agent_not_found") || !strings.Contains(got, `"ghost"`) {
		t.Fatalf("the refused call's page says %q", got)
	}
	var hidden bool
	p.js(`document.getElementById("call-provider").hidden`, &hidden)
	if !hidden {
		t.Fatal("a key that cannot read the providers is told none is configured")
	}
}
