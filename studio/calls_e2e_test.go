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

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

const (
	callerSays = "I am interested in the AI master. Call me after four."
	agentSays  = "Great. I will arrange a call after four."
	extraction = `{"operations":[{"op":"add","content":"Interested in the AI master."}],"summary":"Asked about the AI master."}`
)

// Turning save off in Studio between two real phone calls (baresip calls
// the box over SIP and speaks a recorded voice): the first call's save
// stands, the second call saves nothing and its record says save was off,
// and the person's memory is unchanged.
func TestSaveOffBetweenTwoCalls(t *testing.T) {
	siptest.NeedBaresip(t)
	b := newBox(t)
	ctx := context.Background()
	b.model.RespondTranscripts(func([]byte) string { return "" })
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: extraction}
		}
		return providertest.Reply{Content: agentSays}
	})
	const number = "+34600111222" // the phone's From: the person, by phoneNumber

	call := func(n int) voice.CallRecord {
		t.Helper()
		b.model.ScriptTranscripts(callerSays)
		before := b.count(`SELECT count(*) FROM stackbone_platform.voice_calls`)
		mic := siptest.SpeechFile(t, t.TempDir(), callerSays, 2.5, 7)
		ph := siptest.StartBaresip(t, number, mic, "sip:100@"+b.sip.Addr())
		ph.CallEnded(t, 60*time.Second)
		if heard := ph.Heard(t); heard < 25 {
			t.Fatalf("call %d: baresip heard %d voiced 20 ms windows, want the greeting and the answer", n, heard)
		}
		var rec voice.CallRecord
		poll.Until(t, fmt.Sprintf("call %d to be recorded and settled", n), 30*time.Second, func() bool {
			calls, err := b.calls.ListCalls(ctx, voice.CallFilter{Number: number})
			if err != nil || len(calls) != before+1 {
				return false
			}
			if rec, err = b.calls.Get(ctx, calls[0].ID); err != nil { // newest first; the list leaves out the memory report
				return false
			}
			return rec.Status == "ended" && rec.Memory != nil && (rec.Memory.Saved || rec.Memory.SaveError != "" || !rec.Memory.Save)
		})
		return rec
	}

	first := call(1)
	if first.Direction != voice.Inbound || first.Agent != "frontdesk" || !first.Memory.Save || !first.Memory.Saved {
		t.Fatalf("the first call did not save: %s %s %+v", first.Direction, first.Agent, first.Memory)
	}
	recall := func() memory.RecallResult {
		got, err := b.mem.Recall(ctx, memory.RecallRequest{AgentID: "frontdesk", UserID: number, Calls: ptr(10)})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := recall(); len(got.Facts) != 1 || got.Facts[0].Content != "Interested in the AI master." || len(got.Calls) != 1 {
		t.Fatalf("after the first call: %+v", got)
	}

	// The operator turns save off in Studio.
	p := b.open(t)
	p.signIn(adminKey)
	p.goTo("#/agents")
	p.click("#agent-frontdesk [data-field=save] input")
	p.waitFor(`document.querySelector("#agent-frontdesk .status").textContent.includes("Applies to the next call")`, "save off")

	second := call(2)
	if second.Memory.Save || second.Memory.Saved {
		t.Fatalf("the second call saved with save off: %+v", second.Memory)
	}
	if got := recall(); len(got.Facts) != 1 || len(got.Calls) != 1 {
		t.Fatalf("after the second call the person has %d facts and %d call records", len(got.Facts), len(got.Calls))
	}
	if again, err := b.calls.Get(ctx, first.ID); err != nil || !again.Memory.Saved {
		t.Fatalf("the first call's save: %+v %v", again.Memory, err)
	}
	// Studio's call detail says why the second call saved nothing.
	p.goTo("#/calls/" + second.ID)
	if got := p.text("#saved"); !strings.HasPrefix(got, "not saved") {
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
