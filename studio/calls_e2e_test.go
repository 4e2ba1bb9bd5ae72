package studio_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/auth"
	"github.com/stackbone/box/internal/cdp"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/voice"
)

const (
	callerSays = "I am interested in the AI master. Call me after four."
	agentSays  = "Great. I will arrange a call after four."
	extraction = `{"operations":[{"op":"add","content":"Interested in the AI master."}],"summary":"Asked about the AI master."}`
)

// Turning save off in Studio between two real browser calls (Chromium on
// the call page, a recorded voice as its microphone, the box's WebRTC
// peer): the first call's save stands, the second call saves nothing and
// its record says save was off, and the person's memory is unchanged.
func TestSaveOffBetweenTwoCalls(t *testing.T) {
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (scripts/test installs it): the calls need a recorded voice", tool)
		}
	}
	b := newBox(t)
	ctx := context.Background()
	if err := b.keys.Ensure(ctx, auth.DevKey, auth.DevKey, auth.AllScopes); err != nil { // the call page's default key
		t.Fatal(err)
	}
	b.model.RespondTranscripts(func([]byte) string { return "" })
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: extraction}
		}
		return providertest.Reply{Content: agentSays}
	})
	wav := speechWAV(t, callerSays)
	const person = "crm/77"

	call := func(n int) voice.CallRecord {
		t.Helper()
		b.model.ScriptTranscripts(callerSays)
		cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		br, err := cdp.Start(cctx, cdp.Options{UserDataDir: t.TempDir(), FakeAudio: wav, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		defer br.Close()
		if err := br.Navigate(cctx, b.url+"/call?raw=1&agent=support&idName=customerId&idValue="+strings.ReplaceAll(person, "/", "%2F")); err != nil {
			t.Fatal(err)
		}
		state := func() (s struct {
			Status, CallID, Error string
			Transcript            []voice.Entry
		}) {
			_ = br.Eval(cctx, `window.stackboneCall`, &s)
			return s
		}
		poll.Until(t, "the call page's agents", 15*time.Second, func() bool {
			var v string
			_ = br.Eval(cctx, `document.getElementById("agent").value`, &v)
			return v == "support"
		})

		if err := br.Eval(cctx, `document.getElementById("start").click()`, nil); err != nil {
			t.Fatal(err)
		}
		poll.Until(t, fmt.Sprintf("the agent's answer heard in call %d", n), 60*time.Second, func() bool {
			s := state()
			if s.Status == "failed" {
				t.Fatalf("call %d failed: %s", n, s.Error)
			}
			for _, e := range s.Transcript {
				if e.Role == voice.RoleAssistant && e.Text == agentSays {
					return true
				}
			}
			return false
		})

		id := state().CallID
		if err := br.Navigate(cctx, "about:blank"); err != nil {
			t.Fatal(err)
		}
		var rec voice.CallRecord
		poll.Until(t, "call to complete", 30*time.Second, func() bool {
			r, err := b.calls.Get(ctx, id)
			rec = r
			return err == nil && r.Status == "ended" && r.Memory != nil && (r.Memory.Saved || r.Memory.SaveError != "" || !r.Memory.Save)
		})

		return rec
	}

	first := call(1)
	if !first.Memory.Save || !first.Memory.Saved {
		t.Fatalf("the first call did not save: %+v", first.Memory)
	}
	facts := func() []memory.Fact {
		got, err := b.mem.Recall(ctx, memory.RecallRequest{AgentID: "support", UserID: person, Calls: ptr(10)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Calls) != 1 {
			t.Fatalf("%d call records for the person", len(got.Calls))
		}
		return got.Facts
	}
	if f := facts(); len(f) != 1 || f[0].Content != "Interested in the AI master." {
		t.Fatalf("after the first call: %+v", f)
	}

	// The operator turns save off in Studio.
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/agents")
	p.click("#agent-support [data-field=save] input")
	p.waitFor(`document.querySelector("#agent-support .status").textContent.includes("Applies to the next call")`, "save off")

	second := call(2)
	if second.Memory.Save || second.Memory.Saved {
		t.Fatalf("the second call saved with save off: %+v", second.Memory)
	}
	if f := facts(); len(f) != 1 {
		t.Fatalf("after the second call the person has %d facts", len(f))
	}
	if again, err := b.calls.Get(ctx, first.ID); err != nil || !again.Memory.Saved {
		t.Fatalf("the first call's save: %+v %v", again.Memory, err)
	}
	// Studio's call detail says why the second call saved nothing.
	p.goTo("#/calls/" + second.ID)
	if got := p.text("#saved"); got != "not saved: save is off for this call" && !strings.HasPrefix(got, "not saved") {
		t.Fatalf("the second call's memory report: %q", got)
	}
}

// speechWAV records text with espeak-ng as the fake microphone plays it:
// 48 kHz mono, half a second of silence first and a long quiet tail.
func speechWAV(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	raw, out := filepath.Join(dir, "espeak.wav"), filepath.Join(dir, "speech.wav")
	if b, err := exec.Command("espeak-ng", "-v", "en-us", "-s", "150", "-w", raw, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, b)
	}
	if b, err := exec.Command("sox", raw, "-r", "48000", "-c", "1", "-b", "16", out, "pad", "0.5", "30").CombinedOutput(); err != nil {
		t.Fatalf("sox: %v: %s", err, b)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
