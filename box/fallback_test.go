package box_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

const fallbackAgents = `
agents:
  receptionist:
    model: [openai/chat, backup/chat]
    instructions: You answer the phone.
    greeting: Hello, front desk.
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice:
      stt: [openai/whisper-1, backup/whisper-1]
      tts: [openai/tts-1, backup/tts-1]
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
`

// fallbackCase is one provider fault a call meets: a fault of the
// primary's endpoint (Fault) or a chat answer the primary cuts, stalls or
// trickles in the middle (chat: "cut", "cut late", "stall" or "trickle").
// trip is the timeout it trips.
type fallbackCase struct {
	endpoint string
	fault    providertest.Fault
	chat     string
	trip     time.Duration
}

func (c fallbackCase) String() string {
	if c.chat != "" {
		return "chat answer " + c.chat
	}
	f := c.fault
	switch {
	case f.Hang > 0:
		return c.endpoint + " hangs"
	case f.Status != 0:
		return fmt.Sprintf("%s answers %d", c.endpoint, f.Status)
	case f.Refuse:
		return c.endpoint + " refuses"
	case f.Garbage:
		return c.endpoint + " answers garbage"
	case f.Cut:
		return c.endpoint + " cuts its answer"
	case f.Stall > 0:
		return c.endpoint + " stalls mid-answer"
	case f.Trickle > 0:
		return c.endpoint + " trickles its answer"
	}
	return "no failure"
}

// fallbackCases are the faults of every part a call meets.
var fallbackCases = []fallbackCase{
	{endpoint: providertest.EndpointChat, fault: providertest.Fault{Hang: time.Minute}, trip: 1500 * time.Millisecond},
	{endpoint: providertest.EndpointChat, fault: providertest.Fault{Status: 500}},
	{endpoint: providertest.EndpointChat, fault: providertest.Fault{Refuse: true}},
	{endpoint: providertest.EndpointChat, fault: providertest.Fault{Garbage: true}},
	{endpoint: providertest.EndpointChat, fault: providertest.Fault{Trickle: 2 * time.Second}, trip: 1500 * time.Millisecond},
	{endpoint: providertest.EndpointChat, chat: "cut"},
	{endpoint: providertest.EndpointChat, chat: "stall", trip: 1500 * time.Millisecond},
	{endpoint: providertest.EndpointChat, chat: "cut late"},
	{endpoint: providertest.EndpointChat, chat: "trickle", trip: 1500 * time.Millisecond},
	{endpoint: providertest.EndpointTranscriptions, fault: providertest.Fault{Status: 503}},
	{endpoint: providertest.EndpointTranscriptions, fault: providertest.Fault{Hang: time.Minute}, trip: 3 * time.Second},
	{endpoint: providertest.EndpointTranscriptions, fault: providertest.Fault{Garbage: true}},
	{endpoint: providertest.EndpointTranscriptions, fault: providertest.Fault{Refuse: true}},
	{endpoint: providertest.EndpointTranscriptions, fault: providertest.Fault{Trickle: 2 * time.Second}, trip: 3 * time.Second},
	{endpoint: providertest.EndpointTranscriptions, fault: providertest.Fault{Cut: true}},
	{endpoint: providertest.EndpointSpeech, fault: providertest.Fault{Hang: time.Minute}, trip: 1500 * time.Millisecond},
	{endpoint: providertest.EndpointSpeech, fault: providertest.Fault{Refuse: true}},
	{endpoint: providertest.EndpointSpeech, fault: providertest.Fault{Garbage: true}},
	{endpoint: providertest.EndpointSpeech, fault: providertest.Fault{Status: 500}},
	{endpoint: providertest.EndpointSpeech, fault: providertest.Fault{Cut: true}},
	{endpoint: providertest.EndpointSpeech, fault: providertest.Fault{Stall: time.Minute}, trip: 1500 * time.Millisecond},
	{endpoint: providertest.EndpointSpeech, fault: providertest.Fault{Trickle: 2 * time.Second}, trip: 1500 * time.Millisecond},
}

// longAnswer is the answer of the cases whose primary fails mid-answer
// ("cut late", "trickle").
const longAnswer = "We open at nine. On Sundays we are closed."

// fallbackLine is a box whose receptionist has a primary and a backup for
// every part; the primary meets one case's fault at a time.
type fallbackLine struct {
	t      *testing.T
	b      *boxtest.Box
	backup *providertest.Server
	chat   atomic.Value // the primary's chat fault: "", or fallbackCase.chat
}

func newFallbackLine(t *testing.T) *fallbackLine {
	l := &fallbackLine{t: t, backup: providertest.New(t)}
	l.chat.Store("")
	l.b = boxtest.New(t, fallbackAgents, boxtest.Tune(func(cfg *config.Config) {
		p := cfg.Providers["openai"]
		p.Circuit = config.Circuit{Failures: 1000} // every call meets the fault, not an open circuit
		cfg.Providers["openai"] = p
		cfg.Providers["backup"] = config.Provider{BaseURL: l.backup.URL()}
	}))
	for _, m := range []*providertest.Server{l.b.Model, l.backup} {
		primary := m == l.b.Model
		m.RespondTranscripts(func([]byte) string { return "What are your opening hours?" })
		m.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
			if strings.Contains(req.Messages[0].Content, `"operations"`) {
				return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Asked for the hours."}],"summary":"Asked for the hours."}`}
			}
			if n := len(req.Messages); !primary && req.Messages[n-1].Role == "system" && strings.Contains(req.Messages[n-1].Content, "cut off") {
				// The backup goes on from what the primary sent, which
				// the caller heard or is hearing.
				answer := "We open at nine."
				if c := l.chat.Load(); c == "cut late" || c == "trickle" {
					answer = longAnswer
				}
				return providertest.Reply{Content: strings.TrimPrefix(answer, req.Messages[n-2].Content)}
			}
			switch l.chat.Load() {
			case "cut":
				if primary {
					return providertest.Reply{Content: "We open", Cut: true}
				}
			case "stall":
				if primary {
					return providertest.Reply{Content: "We open", Stall: time.Minute}
				}
			case "cut late":
				// Cut once its first sentence went to the caller.
				if primary {
					return providertest.Reply{Content: "We open at nine. On Sundays", Cut: true}
				}
			case "trickle":
				// A token, then the next long after: the first sentence
				// plays, the second trickles.
				if primary {
					return providertest.Reply{Content: longAnswer, ChunkDelay: 2 * time.Second}
				}
				return providertest.Reply{Content: longAnswer}
			}
			return providertest.Reply{Content: "We open at nine."}
		})
	}
	return l
}

// meet sets c's fault on the primary and returns a func that clears it
// and fails the test when no request met it.
func (l *fallbackLine) meet(c fallbackCase) (clear func()) {
	if c.chat != "" {
		before := len(l.backup.ChatRequests())
		l.chat.Store(c.chat)
		return func() {
			l.chat.Store("")
			if len(l.backup.ChatRequests()) == before {
				l.t.Fatalf("%s: the backup was never asked", c)
			}
		}
	}
	if c.endpoint == "" {
		return func() {}
	}
	faulted := l.b.Model.Faulted(c.endpoint)
	spoken := len(l.backup.SpeechRequests())
	l.b.Model.SetFault(c.endpoint, c.fault)
	return func() {
		l.b.Model.ClearFault(c.endpoint)
		if l.b.Model.Faulted(c.endpoint) == faulted {
			l.t.Fatalf("%s: the fault was never met", c)
		}
		// The next voice is asked for the sentence the caller has not
		// heard through, once: a voice failing mid-sentence hands over
		// that sentence and nothing said before it.
		if c.endpoint == providertest.EndpointSpeech {
			got := l.backup.SpeechRequests()[spoken:]
			if n := len(slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s != "We open at nine." })); n != 1 {
				l.t.Fatalf("%s: the next voice was asked to say %q", c, got)
			}
		}
	}
}

// heard waits for the call from number to end saved and checks its heard
// transcript and the model its turn's run names.
func (l *fallbackLine) heard(number string, c fallbackCase) {
	t := l.t
	t.Helper()
	var transcript string
	poll.Until(t, "the call's save", 30*time.Second, func() bool {
		err := l.b.Pool.QueryRow(t.Context(), `SELECT transcript::text FROM stackbone_platform.voice_calls WHERE phone_number = $1
			AND status = 'ended' AND (memory->>'saved')::bool`, number).Scan(&transcript)
		return err == nil
	})
	long := c.chat == "cut late" || c.chat == "trickle"
	if !strings.Contains(transcript, "What are your opening hours?") || !strings.Contains(transcript, "We open at nine.") ||
		strings.Count(transcript, "We open") != 1 || long && (!strings.Contains(transcript, "On Sundays we are closed.") || strings.Count(transcript, "Sundays") != 1) {
		t.Fatalf("%s: heard transcript %s", c, transcript)
	}
	if c.endpoint == "" {
		return
	}
	// The turn's run names the engine of each part that served it.
	var model, servedBy, skipped, stt, tts string
	poll.Until(t, "the turn's run", 30*time.Second, func() bool {
		err := l.b.Pool.QueryRow(t.Context(), `SELECT r.model, coalesce(r.metadata->>'servedBy', ''), coalesce(r.metadata->>'modelsSkipped', ''),
			coalesce(r.metadata->'voice'->'speechToTextBy'->>'servedBy', ''),
			coalesce(r.metadata->'voice'->'textToSpeechBy'->>'servedBy', '')
			FROM stackbone_platform.runs r JOIN stackbone_platform.voice_calls c
			ON c.metrics->0->>'runId' = r.id::text WHERE c.phone_number = $1`, number).Scan(&model, &servedBy, &skipped, &stt, &tts)
		return err == nil && tts != ""
	})
	if c.endpoint == providertest.EndpointChat && (servedBy != "backup/chat" || !strings.Contains(skipped, `"model": "openai/chat"`)) {
		t.Errorf("%s: the turn's run says servedBy %q, modelsSkipped %s", c, servedBy, skipped)
	}
	backup := func(part, primary, second string) string {
		if c.endpoint == part {
			return second
		}
		return primary
	}
	if want := backup(providertest.EndpointChat, "openai/chat", "backup/chat"); model != want {
		t.Errorf("%s: the turn's run names the model %s, want %s", c, model, want)
	}
	if want := backup(providertest.EndpointTranscriptions, `["openai/whisper-1"]`, `["backup/whisper-1"]`); stt != want {
		t.Errorf("%s: the turn's run names the speech-to-text %s, want %s", c, stt, want)
	}
	if want := backup(providertest.EndpointSpeech, `["openai/tts-1"]`, `["backup/tts-1"]`); tts != want {
		t.Errorf("%s: the turn's run names the voice %s, want %s", c, tts, want)
	}
}

// check fails the test when the caller's wait with c's fault exceeds the
// wait with no failure by more than c's trip + 200 ms.
func (c fallbackCase) check(t *testing.T, got, baseline time.Duration) {
	t.Helper()
	extra := got - baseline
	t.Logf("%s: the answer came %s later than with no failure", c, extra.Round(time.Millisecond))
	if extra > c.trip+200*time.Millisecond {
		t.Errorf("%s: the caller waited %s, %s more than with no failure (allowed: %s + 200 ms)", c,
			got.Round(time.Millisecond), extra.Round(time.Millisecond), c.trip)
	}
}

// A phone call goes on when a provider of any of its parts fails, on a
// real line: the caller (a SIP phone) hears the backup's answer, as late
// as a call with no failure plus at most the timeout that tripped and
// 200 ms; the heard transcript and the save are right and the run names
// the model that answered.
func TestPhoneCallsGoOnWhenAProviderFails(t *testing.T) {
	t.Parallel()
	l := newFallbackLine(t)
	caller := siptest.NewCaller(t)
	// gap places a call, meets c's fault once the greeting was heard,
	// speaks one sentence and returns how long the caller waited from the
	// end of its words to the answer's first sound.
	gap := func(number string, c fallbackCase) time.Duration {
		t.Helper()
		ctx := context.Background()
		call, err := caller.Call(ctx, "100", l.b.Phones.Addr(), number)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
		clear := l.meet(c)
		// Talk(1): 0.4 s of line noise, then 0.8 s of speech.
		spoke := time.Now().Add(1200 * time.Millisecond)
		call.Talk(1)
		var answered time.Time
		poll.Until(t, "the answer", 30*time.Second, func() bool {
			i := slices.IndexFunc(call.Onsets(), func(at time.Time) bool { return at.After(spoke) })
			if i >= 0 {
				answered = call.Onsets()[i]
			}
			return i >= 0
		})
		poll.Until(t, "the answer to be heard through", 30*time.Second, func() bool {
			var n int
			err := l.b.Pool.QueryRow(ctx, `SELECT jsonb_array_length(stackbone_platform.heard_transcript(voice_calls)) FROM stackbone_platform.voice_calls
				WHERE phone_number = $1`, number).Scan(&n)
			return err == nil && n >= 3
		})
		clear()
		if err := call.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
		l.heard(number, c)
		return answered.Sub(spoke)
	}
	baseline := min(gap("+34611000001", fallbackCase{}), gap("+34611000002", fallbackCase{}))
	for i, c := range fallbackCases {
		c.check(t, gap(fmt.Sprintf("+346110001%02d", i), c), baseline)
	}
	t.Logf("the caller's wait with no failure: %s", baseline.Round(time.Millisecond))
}

// The same faults met by a real softphone: baresip calls the box, says one
// sentence from a file and records what it hears; the answer's first sound
// in its recording comes at most the tripped timeout + 200 ms later than
// with no failure, and the heard transcript, the save and the run are
// right.
func TestBaresipCallsGoOnWhenAProviderFails(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	l := newFallbackLine(t)
	words, err := os.ReadFile(siptest.SpeechFile(t, t.TempDir(), "What are your opening hours?", 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := siptest.WAVSamples(words)
	if err != nil {
		t.Fatal(err)
	}
	said := time.Duration(len(pcm)) * time.Second / 8000
	// The transcribers hear the question once a request holds all of it,
	// its first words (no closing mark) before that, as a real one would:
	// a request of part of it (a pause's speculation, the words of a
	// caller talking over the greeting) is no finished question.
	first, last := -1, 0
	for i, v := range pcm {
		if v > 300 || v < -300 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	whole := time.Duration(last-first)*time.Second/8000 - 100*time.Millisecond // its words, less their fading ends
	for _, m := range []*providertest.Server{l.b.Model, l.backup} {
		m.RespondTranscripts(func(wav []byte) string {
			if time.Duration((len(wav)-44)/2)*time.Second/8000 < whole {
				return "What are your"
			}
			return "What are your opening hours?"
		})
	}
	// gap is how long after the end of the caller's words the answer's
	// first sound is in baresip's recording. The recording starts a little
	// after the microphone's file does; that offset is the same in every
	// call, so it cancels in the difference from a call with no failure.
	gap := func(number string, c fallbackCase) time.Duration {
		t.Helper()
		lead := 2.5 // seconds of silence first, while the greeting plays
		if c.endpoint == providertest.EndpointSpeech {
			lead += c.trip.Seconds() // the greeting meets the voice's fault too
		}
		mic := siptest.SpeechFile(t, t.TempDir(), "What are your opening hours?", lead, 3+c.trip.Seconds())
		spoken := time.Duration(lead*float64(time.Second)) + said
		clear := l.meet(c) // before the call: the greeting may meet it too
		ph := siptest.StartBaresip(t, number, mic, "sip:100@"+l.b.Phones.Addr())
		// The fault ends once the answer was heard, before the call's save
		// asks its extraction model (the primary's chat endpoint).
		poll.Until(t, "the answer to be heard through", 30*time.Second, func() bool {
			var n int
			err := l.b.Pool.QueryRow(t.Context(), `SELECT jsonb_array_length(stackbone_platform.heard_transcript(voice_calls)) FROM stackbone_platform.voice_calls
				WHERE phone_number = $1`, number).Scan(&n)
			return err == nil && n >= 3
		})
		clear()
		ph.CallEnded(t, 60*time.Second)
		l.heard(number, c)
		rec := ph.Recording(t)
		// The answer is the first sound after a silence that starts before
		// the caller's words end (the greeting is over by then).
		i := int((spoken-time.Second).Seconds()*8000) / 160 * 160
		for ; i+160 <= len(rec) && voicedWindow(rec[i:i+160]); i += 160 {
		}
		for ; i+160 <= len(rec); i += 160 {
			if voicedWindow(rec[i : i+160]) {
				return time.Duration(i)*time.Second/8000 - spoken
			}
		}
		t.Fatalf("%s: baresip heard no answer (recording %s)", c, time.Duration(len(rec))*time.Second/8000)
		return 0
	}
	baseline := min(gap("+34611000301", fallbackCase{}), gap("+34611000302", fallbackCase{}))
	for i, c := range fallbackCases {
		c.check(t, gap(fmt.Sprintf("+346110004%02d", i), c), baseline)
	}
}

// voicedWindow is a 20 ms window louder than silence (RMS over 500).
func voicedWindow(pcm []int16) bool {
	var sum float64
	for _, v := range pcm {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum/float64(len(pcm))) > 500
}

// With every model provider down (its circuit open), the caller on a real
// line hears the agent's fallback sentence, then the box hangs up: the call ends as
// provider_failed with its reason, and what was heard is saved.
// providersDownBox is a box whose receptionist has one model, down at its
// first failure, which fails every answer.
func providersDownBox(t *testing.T) *boxtest.Box {
	b := boxtest.New(t, strings.Replace(fallbackAgents, "model: [openai/chat, backup/chat]", "model: openai/chat", 1),
		boxtest.Tune(func(cfg *config.Config) {
			p := cfg.Providers["openai"]
			p.Circuit = config.Circuit{Failures: 1} // down at its first failure
			cfg.Providers["openai"] = p
			a := cfg.Agents["receptionist"]
			a.Voice.STT, a.Voice.TTS = config.ModelChain{"openai/whisper-1"}, config.ModelChain{"openai/tts-1"}
			a.Voice.FallbackSentence = "Sorry, we are having trouble. Please call back later."
			cfg.Agents["receptionist"] = a
		}))
	b.Model.RespondTranscripts(func([]byte) string { return "What are your opening hours?" })
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: `{"operations":[],"summary":"Asked for the hours; the agent could not answer."}`}
		}
		return providertest.Reply{Status: 503, Message: "overloaded"}
	})
	return b
}

// A real softphone hears the fallback sentence when every model provider
// is down: baresip's recording has it after the caller's words, the box
// hangs up, and the call ends provider_failed and saved.
func TestBaresipHearsTheFallbackSentence(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	b := providersDownBox(t)
	const lead = 2.5
	mic := siptest.SpeechFile(t, t.TempDir(), "What are your opening hours?", lead, 10)
	number := "+34611000201"
	ph := siptest.StartBaresip(t, number, mic, "sip:100@"+b.Phones.Addr())
	ph.CallEnded(t, 60*time.Second)
	pcm := ph.Recording(t)
	// The sentence is 54 characters of the scripted voice (2.2 s): far more
	// than 25 voiced windows after the greeting, which is over by the
	// caller's first word.
	from := int(lead*8000) / 160 * 160
	voiced := 0
	for i := from; i+160 <= len(pcm); i += 160 {
		if voicedWindow(pcm[i : i+160]) {
			voiced++
		}
	}
	if voiced < 25 {
		t.Fatalf("baresip heard %d voiced windows after the greeting, want the fallback sentence", voiced)
	}
	if len(pcm) > int((lead+8)*8000) {
		t.Fatalf("the call lasted %s of the phone's %g s: the box did not hang up", time.Duration(len(pcm))*time.Second/8000, lead+12.0)
	}
	checkProviderFailed(t, b, number)
}

func TestPhoneCallWithEveryProviderDownEndsGracefully(t *testing.T) {
	t.Parallel()
	b := providersDownBox(t)
	ctx := context.Background()
	caller := siptest.NewCaller(t)
	number := "+34611000200"
	call, err := caller.Call(ctx, "100", b.Phones.Addr(), number)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
	greeting := call.Voiced()
	call.Talk(1)
	select {
	case <-call.Ended():
	case <-time.After(60 * time.Second):
		t.Fatal("the box did not hang up")
	}
	// The fallback sentence is 54 characters of the scripted voice: far
	// more than 25 voiced packets.
	if heard := call.Voiced() - greeting; heard < 25 {
		t.Fatalf("the caller heard %d voiced packets after the greeting, want the fallback sentence", heard)
	}
	if spoken := b.Model.SpeechRequests(); spoken[len(spoken)-1] != "Sorry, we are having trouble. Please call back later." {
		t.Fatalf("spoken %q", spoken)
	}
	checkProviderFailed(t, b, number)
}

// checkProviderFailed waits for the call from number to end and fails the
// test unless it ended provider_failed with its reason, saved.
func checkProviderFailed(t *testing.T, b *boxtest.Box, number string) {
	t.Helper()
	var outcome, reason string
	var saved bool
	poll.Until(t, "the call's record", 30*time.Second, func() bool {
		err := b.Pool.QueryRow(t.Context(), `SELECT outcome, coalesce(end_reason, ''), coalesce((memory->>'saved')::bool, false)
			FROM stackbone_platform.voice_calls WHERE phone_number = $1 AND status = 'ended' AND save_pending = false`, number).Scan(&outcome, &reason, &saved)
		return err == nil && saved
	})
	if outcome != "provider_failed" || !strings.Contains(reason, "model provider is down") || !saved {
		t.Fatalf("outcome %s, reason %q, saved %v", outcome, reason, saved)
	}
}
