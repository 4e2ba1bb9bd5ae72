package sip_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

// A real softphone on a noisy line: baresip says a sentence with 400 and
// 700 ms pauses in it under pink noise at 10 dB SNR, noise going on for
// 3 s after it (voice/silero/testdata/noisy8k.wav), to an agent with
// voice.vad silero. The box takes the sentence as one turn, whole, ends
// it a closing's delay ("thank you.") after the last word, and answers once; the
// noise neither holds the turn open nor interrupts the answer.
func TestBaresipNoisyLineSilero(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	cfg := config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
		Name: "local", Sources: []string{"127.0.0.1"}, Routes: []config.Route{{Number: "*", Agent: "booking"}},
	}}}}
	b := startBox(t, cfg, "agents:\n  booking:\n    model: openai/chat\n    voice: {vad: silero}\n", nil)
	const whole = "I would like to book a table for Tuesday, my number is four five six seven eight nine, thank you."
	// A transcriber hears the words the audio holds, taken as evenly
	// spread over the first 6.5 s (no closing mark before the last), and
	// the sentence in all of it.
	b.model.RespondTranscripts(func(wav []byte) string {
		if n := (len(wav) - 44) / 2; n < 6500*8 {
			words := strings.Fields(whole)
			return strings.Join(words[:len(words)*n/(6500*8)], " ")
		}
		return whole
	})
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply { return providertest.Reply{Content: "Booked."} })
	mic, err := filepath.Abs("../voice/silero/testdata/noisy8k.wav")
	if err != nil {
		t.Fatal(err)
	}
	ph := siptest.StartBaresip(t, "+34600111222", mic, "sip:100@"+b.sip.Addr())
	var call *voice.Call
	select {
	case call = <-b.opened:
	case <-time.After(30 * time.Second):
		t.Fatal("no call opened")
	}
	ph.CallEnded(t, 60*time.Second)
	var rec voice.CallRecord
	poll.Until(t, "the call record", 30*time.Second, func() bool {
		rec, err = b.mgr.Get(context.Background(), call.ID())
		return err == nil && rec.Status == "ended"
	})
	var turns []string
	for _, en := range rec.Transcript {
		turns = append(turns, en.Role+": "+en.Text)
		if en.Cut {
			t.Errorf("%q was cut", en.Text)
		}
	}
	if len(turns) != 2 || turns[0] != "user: "+whole || turns[1] != "assistant: Booked." {
		t.Fatalf("transcript %q, want the whole sentence once and its answer", turns)
	}
	if n := len(b.model.ChatRequests()); n != 1 {
		t.Fatalf("%d answers asked for, want one", n)
	}
	eou, _ := rec.Metrics[0]["endOfUtteranceMs"].(float64)
	if eou < 150 || eou > 500 {
		t.Fatalf("end of utterance %v ms after the last word, want a closing's delay (200 ms)", eou)
	}
	t.Logf("end of utterance %v ms, wire to wire %v ms", eou, rec.Metrics[0]["wireToWireMs"])
}
