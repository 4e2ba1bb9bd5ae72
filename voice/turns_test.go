package voice

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/runs"
)

// Agents whose speech-to-text provider ends their callers' turns: a
// Deepgram-compatible turn-taking stream and an OpenAI Realtime session
// with semantic_vad.
const turnAgents = `
agents:
  flux:
    model: openai/chat
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice: {stt: openai/flux-general-en, sttMode: deepgram, turnDetection: provider, eagerness: high}
  semantic:
    model: openai/chat
    memory: {identityKey: phoneNumber, read: true, save: true}
    voice: {stt: openai/gpt-4o-transcribe, sttMode: realtime, turnDetection: provider, eagerness: low}
`

func turnEnv(t *testing.T) *env {
	model := providertest.New(t)
	return newEnvWith(t, turnAgents, map[string]config.Provider{"openai": {BaseURL: model.URL()}}, model)
}

// untilTurn waits for the provider to have sent the turn signal event.
func untilTurn(t *testing.T, srv *providertest.Server, event string) {
	t.Helper()
	poll.Until(t, "the provider's "+event, 10*time.Second, func() bool {
		for _, s := range srv.LiveSessions() {
			for _, ev := range s.Turns {
				if ev.Event == event {
					return true
				}
			}
		}
		return false
	})
}

// A statement without punctuation waits 600 ms of silence under the box's
// own endpointing. With the provider's turn detection the turn ends when
// the provider ends it (here 160 ms into the silence): the call's clock
// never gets further than that before the answer is asked for, the turn
// commits the provider's words, and its end reason says who ended it. The
// Realtime session asked for semantic_vad with the agent's eagerness; the
// turn-taking stream for the eagerness's thresholds, and the box sent it
// no ForceEndTurn.
func TestProviderEndOfTurnEndsTheTurnBeforeTheSilenceEndpoint(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{"flux", "semantic"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			e := turnEnv(t)
			const said = "I need to move my appointment"
			e.model.SetLive(providertest.Live{EndOfTurn: 160 * time.Millisecond, FinalDelay: 20 * time.Millisecond})
			e.model.ScriptTranscripts(said)
			e.model.Script(providertest.Reply{Content: "Of course."})
			r := e.start(CallInfo{Agent: agent, PhoneNumber: "+1555"})
			r.say(1000) // its last 40 ms are quiet
			r.step(len(r.in))
			r.step(6) // 160 ms of silence after the last voiced frame, and no more
			untilTurn(t, e.model, map[string]string{"flux": "EndOfTurn", "semantic": "input_audio_buffer.speech_stopped"}[agent])
			poll.Until(t, "the answer asked for", 10*time.Second, func() bool { return len(e.model.ChatRequests()) == 1 })
			// The provider's end of turn comes on the wall clock while the
			// call's clock is stepped, so on a busy machine the answer may
			// start inside those 160 ms; never later than them.
			if n := r.line.voicedOut(); n > 6 {
				t.Fatalf("%d voiced frames before the answer", n)
			}
			r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
			if en := r.call.Entries(); en[0].Text != said || en[1].Text != "Of course." {
				t.Fatalf("heard %+v", en)
			}
			sessions := e.model.LiveSessions()
			if len(sessions) != 1 {
				t.Fatalf("%d live sessions", len(sessions))
			}
			s := sessions[0]
			switch agent {
			case "flux":
				q := s.Query
				if s.Protocol != "flux" || q.Get("model") != "flux-general-en" || q.Get("eot_threshold") != "0.6" || q.Get("eager_eot_threshold") != "0.4" {
					t.Fatalf("turn-taking stream %s opened with %v", s.Protocol, q)
				}
				if msgs := strings.Join(s.Messages, "\n"); strings.Contains(msgs, "ForceEndTurn") {
					t.Fatalf("the box ended a turn the provider ended:\n%s", msgs)
				}
			case "semantic":
				var update struct {
					Type    string `json:"type"`
					Session struct {
						Audio struct {
							Input struct {
								TurnDetection map[string]any `json:"turn_detection"`
							} `json:"input"`
						} `json:"audio"`
					} `json:"session"`
				}
				if err := json.Unmarshal([]byte(s.Messages[0]), &update); err != nil || update.Type != "session.update" {
					t.Fatalf("first message %s (%v)", s.Messages[0], err)
				}
				if td := update.Session.Audio.Input.TurnDetection; td["type"] != "semantic_vad" || td["eagerness"] != "low" || len(td) != 2 {
					t.Fatalf("turn_detection %v", td)
				}
			}
			r.call.End(OutcomeCompleted, "")
			rec := r.end()
			m := rec.Metrics[0]
			if m["transcription"] != "stream" || m["endpoint"] != endTurn {
				t.Fatalf("metrics %+v", m)
			}
			if eou := m["endOfUtteranceMs"].(float64); eou > 260 {
				t.Fatalf("the turn ended %v ms after the caller's last voiced frame, want the provider's 160 (+ a frame)", eou)
			}
		})
	}
}

// The turn-taking stream's EagerEndOfTurn starts the answer, held: it is
// generated and synthesised, and nothing of it plays. The caller goes on
// (TurnResumed): the held answer is abandoned, its run marked cancelled,
// nothing of it committed; the next eager end of turn starts the answer
// to the whole question, and the provider's EndOfTurn confirms it.
func TestEagerEndOfTurnStartsTheAnswerAndTurnResumedAbandonsIt(t *testing.T) {
	t.Parallel()
	e := turnEnv(t)
	e.model.SetLive(providertest.Live{EagerEndOfTurn: 100 * time.Millisecond, EndOfTurn: 400 * time.Millisecond, FinalDelay: 20 * time.Millisecond})
	e.model.RespondTranscripts(func(wav []byte) string {
		if len(wav)-44 < 2*8000 { // under a second of audio
			return "Can I book a table"
		}
		return "Can I book a table for two on Friday"
	})
	e.model.Script(providertest.Reply{Content: "Sure, for how many?"}, providertest.Reply{Content: "Friday for two is booked."})
	r := e.start(CallInfo{Agent: "flux", PhoneNumber: "+1555"})
	r.say(800) // its last 40 ms are quiet
	r.step(len(r.in))
	r.step(3) // 100 ms of silence: the provider's eager end of turn
	untilTurn(t, e.model, "EagerEndOfTurn")
	poll.Until(t, "the held answer's speech", 10*time.Second, func() bool { return len(e.model.SpeechRequests()) >= 1 })
	if chats := e.model.ChatRequests(); len(chats) != 1 || chats[0].Messages[len(chats[0].Messages)-1].Content != "Can I book a table" {
		t.Fatalf("chat requests before the end of the turn: %+v", chats)
	}
	if n := r.line.voicedOut(); n != 0 || len(r.call.Entries()) != 0 {
		t.Fatalf("%d voiced frames played, entries %+v, before the end of the turn", n, r.call.Entries())
	}
	r.say(600) // the caller goes on
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	if en := r.call.Entries(); en[0].Text != "Can I book a table for two on Friday" || en[1].Text != "Friday for two is booked." {
		t.Fatalf("heard %+v", en)
	}
	var events []string
	for _, ev := range e.model.LiveSessions()[0].Turns {
		if ev.Event != "Update" {
			events = append(events, ev.Event)
		}
	}
	// The second eager end of turn, in the silence after the whole
	// question, started the answer heard.
	if got := strings.Join(events, " "); got != "StartOfTurn EagerEndOfTurn TurnResumed EagerEndOfTurn EndOfTurn" {
		t.Fatalf("the provider's turn signals: %s", got)
	}
	r.call.End(OutcomeCompleted, "")
	rec := r.end()
	for _, en := range rec.Transcript {
		if strings.Contains(en.Text, "how many") {
			t.Fatal("the abandoned answer was committed")
		}
	}
	m := rec.Metrics[0]
	if m["endpoint"] != endTurn || m["preemptive"] != true {
		t.Fatalf("metrics %+v", m)
	}
	wasted, _ := m["wasted"].([]any)
	if len(wasted) != 1 || wasted[0].(map[string]any)["kind"] != "generation" {
		t.Fatalf("wasted %+v", m["wasted"])
	}
	untilCancelled(t, e, "flux", 1)
}

// untilCancelled waits until n runs of agent were abandoned as preemptive
// answers and marked cancelled, and returns their reasons.
func untilCancelled(t *testing.T, e *env, agent string, n int) []string {
	t.Helper()
	var reasons []string
	poll.Until(t, "the abandoned run marked", 10*time.Second, func() bool {
		list, err := runs.NewStore(e.mgr.cfg.Pool).List(context.Background(), runs.Filter{AgentID: agent})
		if err != nil {
			t.Fatal(err)
		}
		reasons = nil
		for _, run := range list {
			if v, ok := run.Metadata["voice"].(map[string]any); ok && v["preemptive"] == "abandoned" && run.Status == runs.StatusCancelled {
				reasons = append(reasons, v["reason"].(string))
			}
		}
		return len(reasons) == n
	})
	return reasons
}

// eagerAnswerHeld starts a call whose caller asked "Can I book a table"
// and whose provider sent an eager end of turn, and waits for the held
// answer's speech (the answer to the whole question is scripted next).
func eagerAnswerHeld(t *testing.T) (*env, *run, *fakeStream) {
	t.Helper()
	f := &fakeStreamSTT{final: func(*fakeStream) TranscriptEvent {
		return TranscriptEvent{Text: "Can I book a table for two?", Final: true}
	}}
	e := streamingEnv(t, f)
	e.model.Script(providertest.Reply{Content: "Sure, for how many?"}, providertest.Reply{Content: "Yes, for two."})
	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	s := f.opened(t)
	r.say(800)
	r.step(len(r.in))
	s.results <- TranscriptEvent{Text: "Can I book a table", Turn: TurnEager}
	poll.Until(t, "the held answer's speech", 10*time.Second, func() bool { return len(e.model.SpeechRequests()) >= 1 })
	return e, r, s
}

// TurnResumed alone abandons an answer started on EagerEndOfTurn, even
// when the box heard nothing new (the caller's words were too soft for
// its VAD): the answer was held, nothing of it plays, and its run is
// cancelled because the turn resumed.
func TestTurnResumedAbandonsTheEagerAnswer(t *testing.T) {
	t.Parallel()
	e, r, s := eagerAnswerHeld(t)
	s.results <- TranscriptEvent{Text: "Can I book a table", Turn: TurnResumed}
	if reasons := untilCancelled(t, e, "talker", 1); reasons[0] != "the turn resumed" {
		t.Fatalf("abandoned because %q", reasons[0])
	}
	if n := r.line.voicedOut(); n != 0 || len(r.call.Entries()) != 0 {
		t.Fatalf("%d voiced frames played, entries %+v", n, r.call.Entries())
	}
	// The box's own endpoint ends the turn; its answer is the one heard.
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	if en := r.call.Entries(); en[0].Text != "Can I book a table for two?" || en[1].Text != "Yes, for two." {
		t.Fatalf("heard %+v", en)
	}
	r.call.End(OutcomeCompleted, "")
	rec := r.end()
	if m := rec.Metrics[0]; m["endpoint"] == endTurn {
		t.Fatalf("metrics %+v: a resumed turn ended on the provider's signal", m)
	}
}

// On the turn-taking stream, the box's own endpoint ends a turn the
// provider has open with ForceEndTurn, whose EndOfTurn is the final; a
// turn the provider ended itself arrives as settled words with TurnEnd,
// and the Finalize after it is answered at once with them, without a
// ForceEndTurn the provider would ignore.
func TestTurnTakingStreamFinals(t *testing.T) {
	srv := providertest.New(t)
	srv.SetLive(providertest.Live{EndOfTurn: 200 * time.Millisecond, FinalDelay: 10 * time.Millisecond})
	srv.ScriptTranscripts("ended by the box", "ended by the provider")
	c := &DeepgramSTT{BaseURL: srv.URL(), APIKey: liveKey, Model: "flux-general-en", TurnTaking: true, Eagerness: "low"}
	ts := listen(t, c, 8000)
	speak(t, ts, 600, 8000)
	if err := ts.Finalize(); err != nil {
		t.Fatal(err)
	}
	if _, ev := untilFinal(t, ts); ev.Text != "ended by the box" {
		t.Fatalf("final %q", ev.Text)
	}
	speak(t, ts, 600, 8000)
	silence := make([]int16, 160)
	for range 12 { // 240 ms: the provider ends the turn at 200
		if err := ts.Send(silence); err != nil {
			t.Fatal(err)
		}
	}
	for {
		ev, ok := next(t, ts, 10*time.Second)
		if !ok || ev.Err != nil || ev.Final {
			t.Fatalf("event %+v before the provider's end of turn", ev)
		}
		if ev.Turn == TurnEnd {
			if !ev.Settled || ev.Text != "ended by the provider" || ev.Through < 1400*time.Millisecond {
				t.Fatalf("end of turn %+v", ev)
			}
			break
		}
	}
	if err := ts.Finalize(); err != nil {
		t.Fatal(err)
	}
	if ev, _ := next(t, ts, 10*time.Second); !ev.Final || ev.Text != "ended by the provider" {
		t.Fatalf("the Finalize after the provider's end of turn: %+v", ev)
	}
	_ = ts.Close()
	s := srv.LiveSessions()[0]
	if n := strings.Count(strings.Join(s.Messages, "\n"), "ForceEndTurn"); n != 1 {
		t.Fatalf("%d ForceEndTurn messages, want the box's one:\n%s", n, strings.Join(s.Messages, "\n"))
	}
	if q := s.Query; q.Get("eot_threshold") != "0.8" || q.Has("eager_eot_threshold") || s.Header.Get("Authorization") != "Token "+liveKey {
		t.Fatalf("opened with %v", q)
	}
	noStreamGoroutines(t)
}

// The box hears the caller go on after an eager end of turn before the
// provider's TurnResumed arrives: the eager words do not start the answer
// a second time at the caller's next short silence (the provider's
// signal is forgotten once the caller is heard again).
func TestCallerGoingOnForgetsTheEagerSignal(t *testing.T) {
	t.Parallel()
	e, r, s := eagerAnswerHeld(t)
	// The caller goes on, with a short silence in their words; the
	// provider's TurnResumed is late.
	r.say(300)
	r.step(len(r.in))
	r.step(4)
	s.results <- TranscriptEvent{Text: "Can I book a table for", Turn: TurnResumed}
	untilCancelled(t, e, "talker", 1)
	r.stepUntil("the answer to play through", 1000, func() bool { return len(r.call.Entries()) == 2 })
	asked := 0
	for _, req := range e.model.ChatRequests() {
		if req.Messages[len(req.Messages)-1].Content == "Can I book a table" {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("the eager words were answered %d times, want once", asked)
	}
	r.call.End(OutcomeCompleted, "")
	r.end()
}
