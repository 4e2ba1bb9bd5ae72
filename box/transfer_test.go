package box_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

// transferLine is a box whose receptionist hands billing questions to a
// person reached through the outbound trunk at office (a phone's address).
func transferLine(t *testing.T, office string) *boxtest.Box {
	b := boxtest.New(t, fmt.Sprintf(`
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    greeting: Hello, front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice:
      stt: openai/whisper-1
      tts: openai/tts-1
      transfer:
        ringTimeout: 3s
        targets:
          - {name: billing, description: Billing questions., number: "+34600999001"}
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
    outbound:
      - name: office
        proxy: %s
`, office))
	b.Model.RespondTranscripts(func([]byte) string { return "I have a question about my bill." })
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		for _, m := range req.Messages {
			if m.Role == "system" && strings.Contains(m.Content, "You hand a phone call over") {
				return providertest.Reply{Content: "A caller has a question about their bill."}
			}
			if m.Role == "system" && strings.Contains(m.Content, `"operations"`) {
				return providertest.Reply{Content: `{"operations":[],"summary":"Asked about a bill."}`}
			}
		}
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "tool" && strings.Contains(last.Content, `"bridged"`):
			return providertest.Reply{Content: "Connected."}
		case last.Role == "tool":
			return providertest.Reply{Content: "Sorry, nobody in billing is answering right now."}
		}
		return providertest.Reply{Content: "Let me put you through to billing.",
			ToolCalls: []providertest.Call{providertest.ToolCall("t1", "transfer_call", map[string]any{"target": "billing", "reason": "a question about a bill"})}}
	})
	return b
}

// transferMetrics is what the call's record kept of its transfer.
func transferMetrics(t *testing.T, b *boxtest.Box, number string) map[string]any {
	t.Helper()
	var raw []byte
	if err := b.Pool.QueryRow(context.Background(), `SELECT metrics FROM stackbone_platform.voice_calls WHERE phone_number = $1`, number).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var metrics []map[string]any
	_ = json.Unmarshal(raw, &metrics)
	for _, m := range metrics {
		if tr, ok := m["transfer"].(map[string]any); ok {
			return tr
		}
	}
	t.Fatalf("no transfer in the call's metrics %s", raw)
	return nil
}

// A warm transfer on real SIP lines: the caller asks for billing, hears
// the agent's sentence and then hold audio while the box rings the person
// (a second phone), who hears the briefing; then the two are joined and
// hear each other (speech energy both ways). The person hanging up ends
// the call as transferred; the record names the target and the bridge, and
// the heard transcript holds the agent's part as heard.
func TestWarmTransferJoinsCallerAndPerson(t *testing.T) {
	t.Parallel()
	person := siptest.NewPhone(t)
	b := transferLine(t, person.Addr)
	caller := siptest.NewCaller(t)
	ctx := context.Background()
	const number = "+34611000501"
	call, err := caller.Call(ctx, "100", b.Phones.Addr(), number)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	call.Talk(1)
	var human *siptest.Call
	select {
	case human = <-person.Answered():
	case <-time.After(30 * time.Second):
		t.Fatal("the person's phone was never answered")
	}
	poll.Until(t, "the briefing to reach the person", 30*time.Second, func() bool { return human.Voiced() > 40 })
	poll.Until(t, "the transfer to be recorded", 30*time.Second, func() bool {
		var n int
		_ = b.Pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE phone_number = $1
			AND metrics::text LIKE '%"bridged"%'`, number).Scan(&n)
		return n == 1
	})
	// The person speaks: the caller hears it.
	before := call.Voiced()
	joined := time.Now()
	human.Talk(1)
	poll.Until(t, "the person's voice at the caller's ear", 15*time.Second, func() bool { return call.Voiced() > before+20 })
	for _, at := range call.Onsets() {
		if at.After(joined) && at.Sub(joined) < 300*time.Millisecond {
			t.Fatalf("the caller heard speech %s after the join, before the person spoke", at.Sub(joined))
		}
	}
	// The caller speaks: the person hears it.
	heard := human.Voiced()
	call.Talk(1)
	poll.Until(t, "the caller's voice at the person's ear", 15*time.Second, func() bool { return human.Voiced() > heard+20 })
	if err := human.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-call.Ended():
	case <-time.After(15 * time.Second):
		t.Fatal("the caller's line stayed up after the person hung up")
	}
	var outcome, transcript string
	poll.Until(t, "the call's end", 30*time.Second, func() bool {
		err := b.Pool.QueryRow(ctx, `SELECT outcome, transcript::text FROM stackbone_platform.voice_calls WHERE phone_number = $1
			AND status = 'ended'`, number).Scan(&outcome, &transcript)
		return err == nil
	})
	if outcome != "transferred" || !strings.Contains(transcript, "Let me put you through to billing.") || strings.Contains(transcript, "Connected.") {
		t.Fatalf("outcome %s, heard transcript %s", outcome, transcript)
	}
	if tr := transferMetrics(t, b, number); tr["target"] != "billing" || tr["result"] != "bridged" {
		t.Fatalf("transfer recorded %v", tr)
	}
}

// A person who does not answer: the caller hears hold audio while it
// rings, then the agent comes back and says so; the ringing is given up.
func TestWarmTransferNoAnswerComesBack(t *testing.T) {
	t.Parallel()
	person := siptest.NewRingingPhone(t)
	b := transferLine(t, person.Addr)
	caller := siptest.NewCaller(t)
	ctx := context.Background()
	const number = "+34611000502"
	call, err := caller.Call(ctx, "100", b.Phones.Addr(), number)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	call.Talk(1)
	poll.Until(t, "the agent's sentence after no answer", 30*time.Second, func() bool {
		var transcript string
		_ = b.Pool.QueryRow(ctx, `SELECT stackbone_platform.heard_transcript(voice_calls)::text FROM stackbone_platform.voice_calls WHERE phone_number = $1`, number).Scan(&transcript)
		return strings.Contains(transcript, "Sorry, nobody in billing is answering right now.")
	})
	if person.Rang() != 1 {
		t.Fatalf("the person's phone rang %d times", person.Rang())
	}
	poll.Until(t, "the ringing to be given up", 10*time.Second, func() bool { return person.Cancelled() == 1 })
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the call's end", 30*time.Second, func() bool {
		var n int
		_ = b.Pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE phone_number = $1 AND status = 'ended'`, number).Scan(&n)
		return n == 1
	})
	if tr := transferMetrics(t, b, number); tr["result"] != "no_answer" {
		t.Fatalf("transfer recorded %v", tr)
	}
}

// The same warm transfer with a softphone as the person: baresip answers,
// hears the briefing, says its words after five seconds (the caller hears
// them) and records the caller's words relayed to it; its file ends and it
// hangs up, which ends the call as transferred.
func TestBaresipTakesAWarmTransfer(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	mic := siptest.SpeechFile(t, t.TempDir(), "Hello, this is billing. How can I help you today?", 5, 6)
	person := siptest.StartBaresip(t, "+34600999001", mic, "")
	b := transferLine(t, "127.0.0.1:"+strconv.Itoa(person.Port))
	caller := siptest.NewCaller(t)
	ctx := context.Background()
	const number = "+34611000503"
	call, err := caller.Call(ctx, "100", b.Phones.Addr(), number)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	call.Talk(1)
	poll.Until(t, "the join", 30*time.Second, func() bool {
		var n int
		_ = b.Pool.QueryRow(ctx, `SELECT count(*) FROM stackbone_platform.voice_calls WHERE phone_number = $1
			AND metrics::text LIKE '%"bridged"%'`, number).Scan(&n)
		return n == 1
	})
	joined := time.Now()
	poll.Until(t, "the person's words at the caller's ear", 20*time.Second, func() bool {
		return slices.ContainsFunc(call.Onsets(), func(at time.Time) bool { return at.After(joined) })
	})
	call.Talk(1) // the caller answers; the person records it
	person.CallEnded(t, 30*time.Second)
	select {
	case <-call.Ended():
	case <-time.After(15 * time.Second):
		t.Fatal("the caller's line stayed up after the person hung up")
	}
	// The person's recording: the briefing first, the caller's words later.
	pcm := person.Recording(t)
	voiced := func(from, to float64) int {
		n := 0
		for i := int(from * 8000); i+160 <= len(pcm) && i < int(to*8000); i += 160 {
			var sum float64
			for _, v := range pcm[i : i+160] {
				sum += float64(v) * float64(v)
			}
			if math.Sqrt(sum/160) > 500 {
				n++
			}
		}
		return n
	}
	brief, relayed := voiced(0, 4), voiced(5.5, float64(len(pcm))/8000)
	t.Logf("the person heard %d voiced frames of briefing and %d of the caller", brief, relayed)
	if brief < 20 || relayed < 20 {
		t.Fatalf("the person heard %d voiced frames in the first 4 s (the briefing) and %d after 5.5 s (the caller)", brief, relayed)
	}
	var outcome string
	poll.Until(t, "the call's end", 30*time.Second, func() bool {
		return b.Pool.QueryRow(ctx, `SELECT outcome FROM stackbone_platform.voice_calls WHERE phone_number = $1 AND status = 'ended'`,
			number).Scan(&outcome) == nil
	})
	if outcome != "transferred" {
		t.Fatalf("outcome %s", outcome)
	}
}
