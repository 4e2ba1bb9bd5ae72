package voice

import (
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider/providertest"
)

func TestEndpointingDelaysFollowTheWords(t *testing.T) {
	e := newEndpointing(config.Agent{}, VADConfig{})
	cases := []struct {
		text   string
		known  bool
		want   time.Duration
		reason string
	}{
		{"", false, 600 * time.Millisecond, endSilence},
		{"Can I book a table?", true, 200 * time.Millisecond, endComplete},
		{"I would like a table.", true, 250 * time.Millisecond, endClosed},
		{"Hi, this is Ana.", true, 600 * time.Millisecond, endSentence},
		{"Hi, this is Ana. I want to move my booking to Friday.", true, 250 * time.Millisecond, endClosed},
		{"My name is Ana Lopez.", true, 600 * time.Millisecond, endSentence},
		{"I have a question.", true, 600 * time.Millisecond, endSentence},
		{"Okay.", true, 600 * time.Millisecond, endSentence},
		{"A table, please.", true, 200 * time.Millisecond, endComplete},
		{"That's all, thank you.", true, 200 * time.Millisecond, endComplete},
		{"My number is 4 5 6.", true, 1500 * time.Millisecond, endTrailing},
		{"my number is four five six", true, 1500 * time.Millisecond, endTrailing},
		{"A table for four.", true, 600 * time.Millisecond, endSentence},
		{"Cancel my booking for Saturday.", true, 250 * time.Millisecond, endClosed},
		{"We will arrive late tonight.", true, 600 * time.Millisecond, endSentence},
		{"I am interested in the AI master. Call me after four.", true, 600 * time.Millisecond, endSentence},
		{"I’m calling about my booking.", true, 600 * time.Millisecond, endSentence},
		{"I would like a table and", true, 1500 * time.Millisecond, endTrailing},
		{"I would like, um", true, 1500 * time.Millisecond, endTrailing},
		{"I would like a table for.", true, 1500 * time.Millisecond, endTrailing},
		{"so I was thinking...", true, 1500 * time.Millisecond, endTrailing},
		{"Tomorrow at eight,", true, 1500 * time.Millisecond, endTrailing},
		{"tomorrow at eight", true, 600 * time.Millisecond, endSilence},
		{"Can I book a table?", false, 600 * time.Millisecond, endSilence},
	}
	for _, c := range cases {
		if d, r := e.delay(c.text, c.known, false); d != c.want || r != c.reason {
			t.Errorf("%q (known %v): %v %s, want %v %s", c.text, c.known, d, r, c.want, c.reason)
		}
	}
	// An agent's own delays bound the others.
	e = newEndpointing(config.Agent{Voice: &config.AgentVoice{MinEndpointDelay: 300 * time.Millisecond, MaxEndpointDelay: 500 * time.Millisecond}}, VADConfig{})
	if e.min != 300*time.Millisecond || e.sentence != 500*time.Millisecond || e.normal != 500*time.Millisecond || e.max != 500*time.Millisecond {
		t.Fatalf("agent delays: %+v", e)
	}
	// Mode cautious: every statement waits the sentence delay; silence:
	// the words are not read.
	mode := func(m string) endpointing {
		return newEndpointing(config.Agent{Voice: &config.AgentVoice{Endpointing: &config.Endpointing{Mode: m}}}, VADConfig{})
	}
	if d, r := mode(config.EndpointingCautious).delay("I would like a table.", true, true); d != 600*time.Millisecond || r != endSentence {
		t.Errorf("cautious statement: %v %s", d, r)
	}
	if d, r := mode(config.EndpointingCautious).delay("A table, please.", true, true); d != 600*time.Millisecond || r != endSentence {
		t.Errorf("cautious closing: %v %s", d, r)
	}
	if d, r := mode(config.EndpointingCautious).delay("Can I book a table?", true, true); d != 200*time.Millisecond || r != endComplete {
		t.Errorf("cautious question: %v %s", d, r)
	}
	// A transcriber that closes its sentences left this one open: it was
	// cut off mid-sentence ("My name is ... Ana Lopez.").
	if d, r := e.delay("My name is", true, true); d != 500*time.Millisecond || r != endTrailing {
		t.Errorf("an unmarked HTTP transcript: %v %s", d, r)
	}
	if d, r := newEndpointing(config.Agent{}, VADConfig{}).delay("tomorrow at eight", true, true); d != 1500*time.Millisecond || r != endTrailing {
		t.Errorf("an unmarked HTTP transcript: %v %s", d, r)
	}
	if d, r := mode(config.EndpointingSilence).delay("Can I book a table?", true, true); d != 600*time.Millisecond || r != endSilence {
		t.Errorf("silence: %v %s", d, r)
	}
}

// The caller pauses mid-sentence: the speculative transcript of the words
// so far trails off, so the turn waits; the caller goes on, the
// speculation is discarded (recorded as wasted work), and the turn ends
// on the speculation of the whole sentence, which is what is committed.
func TestSpeculationTheCallerTalksPastIsDiscarded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.model.RespondTranscripts(func(wav []byte) string {
		if len(wav)-44 < 2*8000 { // under a second: the first half
			return "I would like to book a table for"
		}
		return "I would like to book a table for two people."
	})
	e.model.Script(providertest.Reply{Content: "Of course."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	r.say(800)
	r.step(len(r.in))
	r.step(20) // a 400 ms pause mid-sentence
	r.say(800)
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	entries := r.call.Entries()
	if entries[0].Text != "I would like to book a table for two people." || entries[1].Text != "Of course." {
		t.Fatalf("heard %+v", entries)
	}
	r.call.End(OutcomeCompleted, "")
	rec := r.end()
	if len(rec.Metrics) != 1 {
		t.Fatalf("metrics %+v", rec.Metrics)
	}
	m := rec.Metrics[0]
	wasted, _ := m["wasted"].([]any)
	if m["transcription"] != "speculative" || m["endpoint"] != endClosed || len(wasted) != 1 {
		t.Fatalf("metrics %+v", m)
	}
	if n := len(e.model.Uploads()); n != 2 {
		t.Fatalf("%d transcription requests, want the discarded speculation and the kept one", n)
	}
	for _, req := range e.model.ChatRequests() {
		for _, msg := range req.Messages {
			if strings.HasSuffix(msg.Content, "table for") {
				t.Fatal("the discarded speculation reached the model")
			}
		}
	}
}
