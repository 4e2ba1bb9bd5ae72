package sip_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

const boxAgents = `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone for a training company.
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
`

func newBox(t *testing.T, sipCfg config.SIP) *box {
	t.Helper()
	return startBox(t, sipCfg, boxAgents, nil)
}

// A real softphone calls the box and talks; the box answers from the
// scripted model and the phone hears it; after the phone hangs up, the
// person's memory holds the facts and a call record; a second call from
// the same number recalls them before the greeting.
func TestBaresipCallsTheBoxAndIsRemembered(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	cfg := config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
		Name: "local", Sources: []string{"127.0.0.1"}, Routes: []config.Route{{Number: "*", Agent: "receptionist"}},
	}}}}
	b := newBox(t, cfg)
	ctx := context.Background()
	const number = "+34600111222"
	dir := t.TempDir()

	b.model.ScriptTranscripts("I am interested in the AI master. Call me after four.")
	b.model.Script(
		providertest.Reply{Content: "Great. I will arrange a call after four."},
		providertest.Reply{Content: `{"operations":[{"op":"add","content":"Interested in the AI master."},{"op":"add","content":"Wants calls after 16:00."}],"summary":"Asked about the AI master."}`},
	)
	mic := siptest.SpeechFile(t, dir, "I am interested in the AI master. Call me after four.", 2.5, 7)
	ph := siptest.StartBaresip(t, number, mic, "sip:100@"+b.sip.Addr())
	ph.CallEnded(t, 60*time.Second)
	if n := ph.Heard(t); n < 25 {
		t.Fatalf("baresip heard %d voiced 20 ms windows, want the greeting and the answer", n)
	}
	var rec memory.RecallResult
	poll.Until(t, "the memory save", 30*time.Second, func() bool {
		var err error
		rec, err = b.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
		return err == nil && len(rec.Calls) == 1
	})

	if len(rec.Facts) != 2 || rec.Facts[0].Content != "Interested in the AI master." {
		t.Fatalf("facts: %+v", rec.Facts)
	}
	call := rec.Calls[0]
	if call.Outcome == nil || *call.Outcome != string(voice.OutcomeCallerHangup) || call.DurationSeconds == nil || *call.DurationSeconds < 5 {
		t.Fatalf("call record: outcome %v duration %v", call.Outcome, call.DurationSeconds)
	}
	chats := b.model.ChatRequests()
	if len(chats) < 2 {
		t.Fatalf("%d chat requests", len(chats))
	}
	extraction := chats[len(chats)-1].Messages
	if !strings.Contains(extraction[len(extraction)-1].Content, "Great. I will arrange a call after four.") {
		t.Fatal("the extraction did not get the heard answer")
	}

	// The second call from the same number: the recall is in what the model
	// is sent for its first answer, taken at open, before the greeting.
	before := len(b.model.ChatRequests())
	b.model.ScriptTranscripts("Hi again.")
	b.model.Script(providertest.Reply{Content: "Welcome back."},
		providertest.Reply{Content: `{"operations":[],"summary":"Called again."}`})
	mic2 := siptest.SpeechFile(t, t.TempDir(), "Hi again.", 2.5, 4)
	ph2 := siptest.StartBaresip(t, number, mic2, "sip:100@"+b.sip.Addr())
	poll.Until(t, "the second call's first answer", 40*time.Second, func() bool { return len(b.model.ChatRequests()) > before })
	first := b.model.ChatRequests()[before]
	var system strings.Builder
	for _, m := range first.Messages {
		if m.Role == "system" {
			system.WriteString(m.Content)
		}
	}
	if !strings.Contains(system.String(), "Interested in the AI master.") || !strings.Contains(system.String(), "Asked about the AI master.") {
		t.Fatalf("the recall was not sent to the model: %+v", first.Messages)
	}
	ph2.CallEnded(t, 60*time.Second)
	poll.Until(t, "the second call record", 30*time.Second, func() bool {
		rec, err := b.mem.Recall(ctx, memory.RecallRequest{AgentID: "receptionist", UserID: number})
		return err == nil && len(rec.Calls) == 2
	})

}

// The box dials out through its trunk and a real softphone answers: it
// hears the greeting, and the call is recorded as outbound to its number.
func TestDialRingsBaresip(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	mic := siptest.SpeechFile(t, t.TempDir(), "", 0, 6)
	// baresip takes calls for its account's user: the dialled number.
	ph := siptest.StartBaresip(t, "+34600999888", mic, "")
	cfg := config.SIP{Trunks: config.Trunks{Outbound: []config.OutboundTrunk{{
		Name: "local", Proxy: "127.0.0.1:" + strconv.Itoa(ph.Port), CallerNumber: "+15550100",
	}}}}
	b := newBox(t, cfg)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: `{"operations":[],"summary":"Outbound call, the callee listened."}`}
	})
	ctx := context.Background()
	id, err := b.sip.Dial(ctx, sip.DialRequest{Agent: "receptionist", To: "+34 600 999 888"})
	if err != nil {
		t.Fatal(err)
	}
	ph.CallEnded(t, 40*time.Second)
	if n := ph.Heard(t); n < 10 {
		t.Fatalf("baresip heard %d voiced windows, want the greeting", n)
	}
	var r voice.CallRecord
	poll.Until(t, "the call record", 30*time.Second, func() bool {
		r, err = b.mgr.Get(ctx, id)
		return err == nil && r.Status == "ended"
	})

	if r.Direction != voice.Outbound || r.PhoneNumber == nil || *r.PhoneNumber != "+34600999888" || r.Trunk == nil || *r.Trunk != "local" ||
		r.AnsweredAt == nil || r.Outcome == nil || *r.Outcome != voice.OutcomeCallerHangup {
		t.Fatalf("call record: %+v", r)
	}
	if r.Memory == nil || r.Memory.Identity != "+34600999888" {
		t.Fatalf("memory report: %+v", r.Memory)
	}
}
