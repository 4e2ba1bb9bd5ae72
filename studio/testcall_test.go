package studio_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

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
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test installs it): the call needs a recorded voice", tool)
		}
	}
	b := newBox(t)
	ctx := context.Background()
	b.model.RespondTranscripts(func([]byte) string { return "" })
	b.model.ScriptTranscripts(callerSays)
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: extraction}
		}
		return providertest.Reply{Content: agentSays}
	})
	p := b.openWithMic(t, speechWAV(t, callerSays))
	p.signIn(adminKey)
	p.goTo("#/playground")
	p.set("main select[name=agent]", "support")
	p.set("main input[name=customerId]", "crm/88")
	p.click("#call-start")

	var shown struct {
		Status, Error string
		Transcript    []voice.Entry
	}
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
