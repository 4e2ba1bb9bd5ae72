package voice

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/memory"
	"github.com/stackbone/box/provider"
	"github.com/stackbone/box/provider/providertest"
)

const chainAgents = `
agents:
  resilient:
    model: [openai/chat, backup/chat]
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice:
      stt: [openai/whisper-1, backup/whisper-1]
      tts: [openai/tts-1, backup/tts-1]
  resumable:
    model: openai/chat
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice:
      tts: [openai/tts-1, backup/tts-1]
      firstByteTimeout: 400ms
  fragile:
    model: openai/chat
    greeting: Hello, this is the front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice: {fallbackSentence: "Sorry, we have a problem. Call back later."}
  silent:
    model: openai/chat
    greeting: Hello.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice: {fallbackAudio: %q}
`

// chainEnv runs calls whose agents have a primary ("openai", e.model) and
// a backup provider for every part.
// The primary's circuit opens after primaryFailures failures (0: the
// default).
func chainEnv(t *testing.T, fallbackAudio string, primaryFailures int) (*env, *providertest.Server) {
	t.Helper()
	primary, backup := providertest.New(t), providertest.New(t)
	e := newEnvWith(t, strings.Replace(chainAgents, "%q", `"`+fallbackAudio+`"`, 1), map[string]config.Provider{
		"openai": {BaseURL: primary.URL(), Circuit: config.Circuit{Failures: primaryFailures}},
		"backup": {BaseURL: backup.URL()},
	}, primary)
	return e, backup
}

// Every part of a call moves to its backup when its primary fails: the
// caller's words are transcribed by the backup, the answer comes from the
// backup model and is spoken by the backup voice; the heard transcript and
// the save are as on a call with no failure, and the runs name the model
// that answered.
func TestCallPartsFallBack(t *testing.T) {
	t.Parallel()
	for _, fault := range []providertest.Fault{{Status: 500}, {Refuse: true}, {Garbage: true}} {
		t.Run(faultName(fault), func(t *testing.T) {
			t.Parallel()
			e, backup := chainEnv(t, "", 0)
			number := "+34600999111"
			backup.ScriptTranscripts("I would like a table for two.")
			backup.Script(providertest.Reply{Content: "A table for two is booked."})
			e.model.Script(providertest.Reply{Content: `{"operations":[{"op":"add","content":"Books tables for two."}],"summary":"Booked a table."}`})
			r := e.start(CallInfo{Agent: "resilient", PhoneNumber: number})
			r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
			// From here on the primary fails every part.
			for _, ep := range []string{providertest.EndpointTranscriptions, providertest.EndpointSpeech} {
				e.model.SetFault(ep, fault)
			}
			e.model.SetFault(providertest.EndpointChat, providertest.Fault{Status: fault.Status, Refuse: fault.Refuse, Garbage: fault.Garbage, Times: 1})
			r.say(1200)
			r.stepUntil("the backup's answer to play through", 1500, func() bool { return len(r.call.Entries()) == 3 })
			for _, ep := range []string{providertest.EndpointTranscriptions, providertest.EndpointSpeech} {
				e.model.ClearFault(ep)
			}
			r.call.End(OutcomeCallerHangup, "")
			rec := r.end()
			var texts []string
			for _, en := range rec.Transcript {
				texts = append(texts, en.Role+": "+en.Text)
			}
			if got := strings.Join(texts, "|"); got != "assistant: Hello, this is the front desk.|user: I would like a table for two.|assistant: A table for two is booked." {
				t.Fatalf("heard transcript %q", got)
			}
			if *rec.Outcome != OutcomeCallerHangup || !rec.Memory.Saved {
				t.Fatalf("record: outcome %s, memory %+v", *rec.Outcome, rec.Memory)
			}
			if e.model.Faulted(providertest.EndpointTranscriptions) == 0 || e.model.Faulted(providertest.EndpointChat) != 1 ||
				e.model.Faulted(providertest.EndpointSpeech) == 0 || len(backup.SpeechRequests()) == 0 {
				t.Fatalf("faults answered: stt %d, chat %d, speech %d; backup spoke %d sentences", e.model.Faulted(providertest.EndpointTranscriptions),
					e.model.Faulted(providertest.EndpointChat), e.model.Faulted(providertest.EndpointSpeech), len(backup.SpeechRequests()))
			}
			var model string
			if err := e.mgr.cfg.Pool.QueryRow(context.Background(), `SELECT model FROM stackbone_platform.runs WHERE agent_id = 'resilient'
				AND kind = 'agent_turn'`).Scan(&model); err != nil || model != "backup/chat" {
				t.Fatalf("the turn's run names %q (%v)", model, err)
			}
			facts, _ := e.mem.Recall(context.Background(), memory.RecallRequest{AgentID: "resilient", UserID: number})
			if len(facts.Facts) != 1 {
				t.Fatalf("saved memory %+v", facts)
			}
		})
	}
}

// A model that fails once costs the caller an apology, not the call; with
// every provider of the model down (its circuit open), the agent says its
// fallback sentence, which the caller hears, and hangs up: the call ends
// as provider_failed with the reason, and what was heard is saved.
func TestEveryModelDownEndsTheCallGracefully(t *testing.T) {
	t.Parallel()
	e, _ := chainEnv(t, "", 2)
	number := "+34600999222"
	e.model.RespondTranscripts(func([]byte) string { return "Can you book me a table?" })
	e.model.Respond(func(req *openaiRequest) providertest.Reply {
		if isExtraction(req) {
			return providertest.Reply{Content: `{"operations":[],"summary":"Asked for a table; the agent could not answer."}`}
		}
		return providertest.Reply{Status: 503, Message: "overloaded"}
	})
	r := e.start(CallInfo{Agent: "fragile", PhoneNumber: number})
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	// The first failure: the agent asks again and the call goes on.
	r.say(1200)
	r.stepUntil("the apology", 2000, func() bool {
		spoken := e.model.SpeechRequests()
		return spoken[len(spoken)-1] == fallbackText
	})
	if r.ended() {
		t.Fatal("one failure of the model ended the call")
	}
	r.stepUntil("the apology to play", 1000, func() bool { return len(r.call.Entries()) == 3 })
	heard := r.line.voicedOut()
	r.say(1200)
	r.stepUntil("the call to end", 2000, r.ended)
	rec := r.end()
	if *rec.Outcome != OutcomeProviderFailed || rec.EndReason == nil || !strings.Contains(*rec.EndReason, "model provider is down") {
		t.Fatalf("outcome %s, reason %v", *rec.Outcome, rec.EndReason)
	}
	if r.line.voicedOut() <= heard+10 {
		t.Fatalf("the caller heard %d voiced frames after the greeting, want the fallback sentence", r.line.voicedOut()-heard)
	}
	spoken := e.model.SpeechRequests()
	if len(spoken) == 0 || spoken[len(spoken)-1] != "Sorry, we have a problem. Call back later." {
		t.Fatalf("spoken %q", spoken)
	}
	if !rec.Memory.Saved || len(rec.Transcript) < 4 || rec.Transcript[1].Text != "Can you book me a table?" || rec.Transcript[3].Text != "Can you book me a table?" {
		t.Fatalf("save %+v of transcript %+v", rec.Memory, rec.Transcript)
	}
}

// With no voice left either, the fallback audio file plays.
func TestFallbackAudioWhenNoVoiceIsLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sorry.wav")
	pcm := make([]int16, 16000) // one second at 16 kHz
	for i := range pcm {
		pcm[i] = int16(9000 * sinTable(i, 16000, 400))
	}
	if err := os.WriteFile(path, encodeWAV(pcm, 16000), 0o600); err != nil {
		t.Fatal(err)
	}
	e, _ := chainEnv(t, path, 1)
	e.model.ScriptTranscripts("Hello?")
	e.model.Respond(func(req *openaiRequest) providertest.Reply {
		if isExtraction(req) {
			return providertest.Reply{Content: `{"operations":[],"summary":"A short call."}`}
		}
		return providertest.Reply{Status: 500, Message: "down"}
	})
	r := e.start(CallInfo{Agent: "silent", PhoneNumber: "+34600999333"})
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	e.model.SetFault(providertest.EndpointSpeech, providertest.Fault{Status: 500})
	heard := r.line.voicedOut()
	r.say(800)
	r.stepUntil("the call to end", 2000, r.ended)
	rec := r.end()
	if *rec.Outcome != OutcomeProviderFailed || r.line.voicedOut() < heard+40 {
		t.Fatalf("outcome %s; %d voiced frames after the greeting, want the one second of fallback audio", *rec.Outcome, r.line.voicedOut()-heard)
	}
}

func faultName(f providertest.Fault) string {
	switch {
	case f.Refuse:
		return "refused"
	case f.Garbage:
		return "garbage"
	}
	return "status"
}

type openaiRequest = openai.ChatCompletionRequest

// isExtraction reports the memory extraction's request.
func isExtraction(req *openaiRequest) bool {
	return len(req.Messages) > 0 && strings.Contains(req.Messages[0].Content, `"operations"`)
}

func sinTable(i, rate, hz int) float64 {
	return math.Sin(2 * math.Pi * float64(hz) * float64(i) / float64(rate))
}

// ended reports whether the call completed.
func (r *run) ended() bool {
	select {
	case <-r.call.done:
		return true
	default:
		return false
	}
}

// A voice that trickles its audio (pieces 2 s apart) is given up at the
// chain's chunk bound once it began, and the next voice says the sentence:
// the caller waits the bound, not the trickle; the turn's report names the
// voice that served and why the first was skipped. The chain's last voice
// is not bounded.
func TestSpeechChainChunkBound(t *testing.T) {
	t.Parallel()
	primary, backup := providertest.New(t), providertest.New(t)
	reg := provider.NewRegistry(map[string]config.Provider{
		"openai": {BaseURL: primary.URL(), Circuit: config.Circuit{Failures: 1000}},
		"backup": {BaseURL: backup.URL()},
	}, nil)
	entry := func(id string) ttsEntry {
		m, err := reg.Resolve(id)
		if err != nil {
			t.Fatal(err)
		}
		return ttsEntry{id: id, circuit: m.EndpointCircuit(provider.EndpointSpeech), tts: ProviderTTS{Model: m}}
	}
	chain := chainTTS([]ttsEntry{entry("openai/tts-1"), entry("backup/tts-1")}, time.Second, 200*time.Millisecond)
	st, ok := chain.(StreamingSynthesizer)
	if !ok {
		t.Fatal("a chain of streaming voices does not stream")
	}
	primary.SetFault(providertest.EndpointSpeech, providertest.Fault{Trickle: 2 * time.Second})
	ctx, rep := withReport(context.Background(), partTTS)
	began := time.Now()
	heard := 0
	// At the provider's own rate, each piece of the trickle is audio at once.
	err := st.SynthesizeStream(ctx, "We open at nine.", 24000, func(pcm []int16) { heard += len(pcm) })
	took := time.Since(began)
	if err != nil || took > 700*time.Millisecond {
		t.Fatalf("the trickling voice: %v after %s", err, took)
	}
	if primary.Faulted(providertest.EndpointSpeech) != 1 || len(backup.SpeechRequests()) != 1 {
		t.Fatalf("faulted %d, the backup was asked %d times", primary.Faulted(providertest.EndpointSpeech), len(backup.SpeechRequests()))
	}
	if heard < 24000/2 {
		t.Fatalf("%d samples of audio, want the backup's sentence", heard)
	}
	if got := fmt.Sprint(rep.view()); got != "map[servedBy:[backup/tts-1] skipped:[map[engine:openai/tts-1 reason:provider_timeout]]]" {
		t.Fatalf("report %s", got)
	}

	// Alone, a voice silent between two pieces for longer than the bound
	// is waited for: a chain's last engine has nowhere else to go.
	last := chainTTS([]ttsEntry{entry("openai/tts-1")}, time.Second, 200*time.Millisecond).(StreamingSynthesizer)
	primary.SetFault(providertest.EndpointSpeech, providertest.Fault{Stall: 600 * time.Millisecond, Times: 1})
	began = time.Now()
	if err := last.SynthesizeStream(context.Background(), "Hi.", 8000, func([]int16) {}); err != nil || time.Since(began) < 600*time.Millisecond {
		t.Fatalf("the last voice: %v after %s", err, time.Since(began))
	}
}

// A voice that stalls in the middle of the answer's second sentence hands
// that sentence to the next voice, which says it from its start: the box
// knows what the caller heard only sentence by sentence (no word timings
// on a stream), so the first sentence, played through, is not said again,
// and only the start of the second (its first 100 ms) is heard twice. The
// heard transcript holds each sentence once and the save holds.
func TestVoiceFailingMidAnswerResumesAtItsSentence(t *testing.T) {
	t.Parallel()
	e, backup := chainEnv(t, "", 0)
	number := "+34600999333"
	const first, second = "We open at nine.", "On Sundays we are closed."
	e.model.RespondTranscripts(func([]byte) string { return "When are you open?" })
	e.model.Respond(func(req *openaiRequest) providertest.Reply {
		if isExtraction(req) {
			return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Asked for the hours."}],"summary":"Asked for the hours."}`}
		}
		return providertest.Reply{Content: first + " " + second}
	})
	r := e.start(CallInfo{Agent: "resumable", PhoneNumber: number})
	r.stepUntil("the greeting", 500, func() bool { return len(r.call.Entries()) == 1 })
	greeting := r.line.voicedOut()
	// The answer's second sentence stalls after its first 100 ms of audio.
	e.model.SetFault(providertest.EndpointSpeech, providertest.Fault{Stall: time.Minute, Every: 2, Times: 1})
	r.say(1200)
	r.stepUntil("the answer to play through", 20000, func() bool { return len(r.call.Entries()) == 3 })
	if e.model.Faulted(providertest.EndpointSpeech) != 1 {
		t.Fatal("the stall was never met")
	}
	if got := backup.SpeechRequests(); len(got) != 1 || got[0] != second {
		t.Fatalf("the next voice was asked to say %q, want only the sentence that stalled", got)
	}
	// Each sentence of the scripted voice is 40 ms a character: 32 voiced
	// frames for the first, 50 for the second, and up to 5 of the stalled
	// start; the first said twice would be 32 more.
	answer := r.line.voicedOut() - greeting
	if answer < 32+50-4 || answer > 32+50+5+4 {
		t.Fatalf("the caller heard %d voiced frames of the answer, want about %d", answer, 32+50)
	}
	r.call.End(OutcomeCallerHangup, "")
	rec := r.end()
	if len(rec.Transcript) != 3 || rec.Transcript[2].Text != first+" "+second || !rec.Memory.Saved {
		t.Fatalf("save %+v of transcript %+v", rec.Memory, rec.Transcript)
	}
}
