package box_test

import (
	"context"
	"slices"
	"strings"
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

// A phone call goes on when a provider of any of its parts fails, on a
// real line: the caller (a SIP phone) hears the backup's answer, as late
// as a call with no failure plus at most the timeout that tripped and
// 200 ms; the heard transcript and the save are right and the run names
// the model that answered.
func TestPhoneCallsGoOnWhenAProviderFails(t *testing.T) {
	t.Parallel()
	backup := providertest.New(t)
	b := boxtest.New(t, fallbackAgents, boxtest.Tune(func(cfg *config.Config) {
		p := cfg.Providers["openai"]
		p.Circuit = config.Circuit{Failures: 1000} // every call meets the fault, not an open circuit
		cfg.Providers["openai"] = p
		cfg.Providers["backup"] = config.Provider{BaseURL: backup.URL()}
	}))
	for _, m := range []*providertest.Server{b.Model, backup} {
		m.RespondTranscripts(func([]byte) string { return "What are your opening hours?" })
		m.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
			if strings.Contains(req.Messages[0].Content, `"operations"`) {
				return providertest.Reply{Content: `{"operations":[{"op":"add","content":"Asked for the hours."}],"summary":"Asked for the hours."}`}
			}
			return providertest.Reply{Content: "We open at nine."}
		})
	}
	caller := siptest.NewCaller(t)
	// gap places a call, sets fault (if any) on the primary once the
	// greeting was heard, speaks one sentence and returns how long the
	// caller waited from the end of its words to the answer's first sound.
	gap := func(number, endpoint string, fault providertest.Fault) time.Duration {
		t.Helper()
		ctx := context.Background()
		call, err := caller.Call(ctx, "100", b.Phones.Addr(), number)
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		poll.Until(t, "the greeting", 30*time.Second, func() bool { return call.Voiced() > 25 })
		if endpoint != "" {
			b.Model.SetFault(endpoint, fault)
		}
		faulted := b.Model.Faulted(endpoint)
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
		if endpoint != "" {
			b.Model.ClearFault(endpoint)
			if b.Model.Faulted(endpoint) == faulted {
				t.Fatalf("%s: the fault was never met", endpoint)
			}
		}
		poll.Until(t, "the answer to be heard through", 30*time.Second, func() bool {
			var n int
			err := b.Pool.QueryRow(ctx, `SELECT jsonb_array_length(transcript) FROM stackbone_platform.voice_calls
				WHERE phone_number = $1`, number).Scan(&n)
			return err == nil && n >= 3
		})
		if err := call.Hangup(ctx); err != nil {
			t.Fatal(err)
		}
		var transcript string
		poll.Until(t, "the call's save", 30*time.Second, func() bool {
			err := b.Pool.QueryRow(ctx, `SELECT transcript::text FROM stackbone_platform.voice_calls WHERE phone_number = $1
				AND status = 'ended' AND (memory->>'saved')::bool`, number).Scan(&transcript)
			return err == nil
		})
		if !strings.Contains(transcript, "What are your opening hours?") || !strings.Contains(transcript, "We open at nine.") {
			t.Fatalf("%s: heard transcript %s", endpoint, transcript)
		}
		return answered.Sub(spoke)
	}
	baseline := min(gap("+34611000001", "", providertest.Fault{}), gap("+34611000002", "", providertest.Fault{}))
	for i, tc := range []struct {
		endpoint string
		fault    providertest.Fault
		trip     time.Duration // the timeout the fault trips
	}{
		{providertest.EndpointChat, providertest.Fault{Hang: time.Minute}, 1500 * time.Millisecond},
		{providertest.EndpointChat, providertest.Fault{Status: 500}, 0},
		{providertest.EndpointChat, providertest.Fault{Refuse: true}, 0},
		{providertest.EndpointTranscriptions, providertest.Fault{Status: 503}, 0},
		{providertest.EndpointTranscriptions, providertest.Fault{Hang: time.Minute}, 3 * time.Second},
		{providertest.EndpointSpeech, providertest.Fault{Hang: time.Minute}, 1500 * time.Millisecond},
		{providertest.EndpointTranscriptions, providertest.Fault{Garbage: true}, 0},
		{providertest.EndpointSpeech, providertest.Fault{Refuse: true}, 0},
		{providertest.EndpointSpeech, providertest.Fault{Garbage: true}, 0},
	} {
		number := "+3461100010" + string(rune('0'+i))
		got := gap(number, tc.endpoint, tc.fault)
		t.Logf("%s %+v: the caller waited %s", tc.endpoint, tc.fault, got.Round(time.Millisecond))
		if extra := got - baseline; extra > tc.trip+200*time.Millisecond {
			t.Errorf("%s %+v: the caller waited %s, %s more than with no failure (allowed: %s + 200 ms)", tc.endpoint, tc.fault,
				got.Round(time.Millisecond), extra.Round(time.Millisecond), tc.trip)
		}
		var model string
		if err := b.Pool.QueryRow(t.Context(), `SELECT r.model FROM stackbone_platform.runs r JOIN stackbone_platform.voice_calls c
			ON c.metrics->0->>'runId' = r.id::text WHERE c.phone_number = $1`, number).Scan(&model); err != nil {
			t.Fatalf("%s: the turn's run: %v", tc.endpoint, err)
		}
		if want := map[bool]string{true: "backup/chat", false: "openai/chat"}[tc.endpoint == providertest.EndpointChat]; model != want {
			t.Errorf("%s: the turn's run names %s, want %s", tc.endpoint, model, want)
		}
	}
	t.Logf("the caller's wait with no failure: %s", baseline.Round(time.Millisecond))
}

// With every model provider down (its circuit open), the caller on a real
// line hears the agent's fallback sentence, then the box hangs up: the call ends as
// provider_failed with its reason, and what was heard is saved.
func TestPhoneCallWithEveryProviderDownEndsGracefully(t *testing.T) {
	t.Parallel()
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
	var outcome, reason string
	var saved bool
	poll.Until(t, "the call's record", 30*time.Second, func() bool {
		err := b.Pool.QueryRow(ctx, `SELECT outcome, coalesce(end_reason, ''), coalesce((memory->>'saved')::bool, false)
			FROM stackbone_platform.voice_calls WHERE phone_number = $1 AND status = 'ended'`, number).Scan(&outcome, &reason, &saved)
		return err == nil
	})
	if outcome != "provider_failed" || !strings.Contains(reason, "model provider is down") || !saved {
		t.Fatalf("outcome %s, reason %q, saved %v", outcome, reason, saved)
	}
}
