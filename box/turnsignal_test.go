package box_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/box/boxtest"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

// boxEndpoint is the box's own endpoint on the agents of these tests
// (their minEndpointDelay): the backstop of the provider's turn signal,
// long enough that a turn the provider ends is told from one the box
// ended, whatever the load on the machine. The box counts the silence on
// its clock, the provider on the audio it received: a line whose audio
// stalls for a while on a busy machine brings the box's endpoint that
// much nearer the provider's.
const boxEndpoint = 2500 * time.Millisecond

// turnSignalBox is a box whose one agent, answering every number, takes
// its callers' turns from the speech-to-text provider: voice is the
// provider's part of its voice settings.
func turnSignalBox(t *testing.T, voiceYAML string) *boxtest.Box {
	t.Helper()
	return boxtest.New(t, `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone.
    voice: {`+voiceYAML+`, minEndpointDelay: 2500ms, maxEndpointDelay: 3500ms}
sip:
  trunks:
    inbound:
      - name: local
        sources: [127.0.0.1]
        routes: [{number: "*", agent: receptionist}]
`)
}

// endedCall waits for the call from number to be recorded as ended.
func endedCall(t *testing.T, b *boxtest.Box, number string) voice.CallRecord {
	t.Helper()
	var rec voice.CallRecord
	poll.Until(t, "the call's record", 30*time.Second, func() bool {
		var id string
		if err := b.Pool.QueryRow(t.Context(), `SELECT id FROM stackbone_platform.voice_calls
			WHERE phone_number = $1 AND status = 'ended'`, number).Scan(&id); err != nil {
			return false
		}
		r, err := b.Calls.Get(t.Context(), id)
		rec = r
		return err == nil
	})
	return rec
}

// spans are where a caller's recorded voice speaks: its first and last
// loud 20 ms window and the silences between (each as its start and
// length), as the scripted provider tells speech (RMS over 300).
type spans struct {
	first, last time.Duration
	gaps        [][2]time.Duration
}

func speechSpans(t *testing.T, wav string) spans {
	t.Helper()
	b, err := os.ReadFile(wav)
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := siptest.WAVSamples(b)
	if err != nil {
		t.Fatal(err)
	}
	const win = 160 // 20 ms at 8 kHz
	var s spans
	var lastLoud time.Duration = -1
	for i := 0; i+win <= len(pcm); i += win {
		var sum float64
		for _, v := range pcm[i : i+win] {
			sum += float64(v) * float64(v)
		}
		if math.Sqrt(sum/win) <= 300 {
			continue
		}
		at := time.Duration(i) * time.Second / 8000
		switch {
		case lastLoud < 0:
			s.first = at
		case at-lastLoud > 20*time.Millisecond:
			s.gaps = append(s.gaps, [2]time.Duration{lastLoud + 20*time.Millisecond, at - lastLoud - 20*time.Millisecond})
		}
		lastLoud = at
	}
	s.last = lastLoud + 20*time.Millisecond
	return s
}

// longestGap is the longest silence inside the speech.
func (s spans) longestGap() (at, length time.Duration) {
	for _, g := range s.gaps {
		if g[1] > length {
			at, length = g[0], g[1]
		}
	}
	return at, length
}

// answerWindows is how many 20 ms windows of the scripted voice saying
// text last.
func answerWindows(text string) int {
	return len([]rune(text)) * providertest.SpeechMsPerChar / 20
}

// A real softphone (baresip) asks a question of an agent whose turns the
// speech-to-text provider ends: an OpenAI Realtime session with
// semantic_vad, and a Deepgram-compatible turn-taking stream (/v2/listen).
// The provider was asked for its turn detection with the agent's
// eagerness, sent interim words while the question was being spoken, and
// ended the turn 300 ms into the silence after it: the turn's metrics say
// the provider ended it (endpoint "turn"), well before the box's own
// endpoint would have, the model was asked once, and the phone heard the
// answer whole, once.
func TestBaresipProviderEndsTheTurn(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	const (
		question  = "What are your opening hours?"
		answer    = "We are open from nine to five on weekdays."
		endOfTurn = 300 * time.Millisecond
	)
	for _, mode := range []string{"realtime", "flux"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			settings := map[string]string{
				"realtime": "stt: openai/gpt-4o-transcribe, sttMode: realtime, turnDetection: provider, eagerness: high",
				"flux":     "stt: openai/flux-general-en, sttMode: deepgram, turnDetection: provider, eagerness: medium",
			}[mode]
			b := turnSignalBox(t, settings)
			b.Model.SetLive(providertest.Live{EndOfTurn: endOfTurn})
			b.Model.RespondTranscripts(func([]byte) string { return question })
			b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
				if last := req.Messages[len(req.Messages)-1]; last.Role == openai.ChatMessageRoleUser && last.Content == question {
					return providertest.Reply{Content: answer}
				}
				return providertest.Reply{Content: "The question did not come whole."}
			})
			dir := t.TempDir()
			mic := siptest.SpeechScript(t, dir, 6, siptest.Spoken{Pause: 1.5, Text: question})
			// espeak says the question in one breath: no silence inside it
			// that the provider would take for the end of the turn, or an
			// eager end of it.
			if _, gap := speechSpans(t, mic).longestGap(); gap >= 140*time.Millisecond {
				t.Fatalf("the recorded question has a silence of %s inside it", gap)
			}
			number := map[string]string{"realtime": "+34611000601", "flux": "+34611000602"}[mode]
			ph := siptest.StartBaresip(t, number, mic, "sip:100@"+b.Phones.Addr())
			ph.CallEnded(t, 60*time.Second)
			rec := endedCall(t, b, number)

			// The provider was asked for its turn detection.
			sessions := b.Model.LiveSessions()
			if len(sessions) != 1 {
				t.Fatalf("%d live sessions for one call", len(sessions))
			}
			s := sessions[0]
			// Where the provider ended the turn, on the stream's audio.
			events, ended := s.Signals()
			switch mode {
			case "realtime":
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
					t.Fatalf("the session's first message %s (%v)", s.Messages[0], err)
				}
				if td := update.Session.Audio.Input.TurnDetection; s.Protocol != "realtime" || td["type"] != "semantic_vad" || td["eagerness"] != "high" {
					t.Fatalf("a %s session with turn_detection %v", s.Protocol, td)
				}
				if got := strings.Join(events, " "); got != "input_audio_buffer.speech_started input_audio_buffer.speech_stopped" {
					t.Fatalf("the provider's turn signals: %s", got)
				}
			case "flux":
				q := s.Query
				if s.Protocol != "flux" || q.Get("model") != "flux-general-en" || q.Get("eot_threshold") != "0.7" ||
					q.Get("eager_eot_threshold") != "0.5" || q.Get("sample_rate") != "8000" {
					t.Fatalf("a %s stream opened with %v", s.Protocol, q)
				}
				// The eager end of turn started the answer, which the end of
				// turn confirmed.
				if got := strings.Join(events, " "); got != "StartOfTurn EagerEndOfTurn EndOfTurn" {
					t.Fatalf("the provider's turn signals: %s", got)
				}
				if msgs := strings.Join(s.Messages, "\n"); strings.Contains(msgs, "ForceEndTurn") {
					t.Fatalf("the box ended the turn itself (ForceEndTurn):\n%s", msgs)
				}
			}
			// Interim words came while the question was spoken, before
			// the silence the provider ended the turn on.
			if len(s.Interims) == 0 || s.InterimAudio[0] >= ended-endOfTurn {
				t.Fatalf("interims %q at %v of the stream's audio; the turn ended at %s", s.Interims, s.InterimAudio, ended)
			}

			// The provider's signal ended the turn, before the box's own
			// endpoint would have.
			if len(rec.Metrics) != 1 {
				t.Fatalf("turn metrics %+v", rec.Metrics)
			}
			m := rec.Metrics[0]
			eou, _ := m["endOfUtteranceMs"].(float64)
			t.Logf("turn metrics: %v", m)
			if m["endpoint"] != "turn" || m["transcription"] != "stream" || time.Duration(eou)*time.Millisecond >= boxEndpoint {
				t.Fatalf("the turn ended by %v, %v ms after the caller's last voice (the box's own endpoint: %s)", m["endpoint"], m["endOfUtteranceMs"], boxEndpoint)
			}

			// The model was asked once, and the answer heard whole, once.
			if n := len(b.Model.ChatRequests()); n != 1 {
				t.Fatalf("the model was asked %d times", n)
			}
			if len(rec.Transcript) != 2 || rec.Transcript[0].Text != question || rec.Transcript[1].Text != answer || rec.Transcript[1].Cut {
				t.Fatalf("heard transcript %+v", rec.Transcript)
			}
			want := answerWindows(answer)
			if heard := ph.Heard(t); heard < want*3/4 || heard > want*5/4 {
				t.Fatalf("the phone heard %d loud 20 ms windows; the answer is %d", heard, want)
			}
		})
	}
}

// A caller pauses inside a sentence ("I would like to book a table ...
// for two on Friday evening") long enough for the turn-taking stream's
// eager end of turn, and goes on before its end of turn: the answer that
// started on the eager end of turn is abandoned (the box heard the caller
// go on, the provider said TurnResumed; its run is cancelled and counted
// as the turn's wasted work; nothing of it committed or played), and the
// whole sentence is answered once, on the provider's end of turn.
func TestBaresipTurnResumedAbandonsTheEagerAnswer(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	const (
		first   = "I would like to book a table"
		rest    = "for two on Friday evening"
		whole   = first + " " + rest
		eager   = 150 * time.Millisecond
		endTurn = 900 * time.Millisecond
		// The abandoned answer is long, the heard one short: a phone that
		// heard the first would have heard far more than the second.
		abandoned = "Sure. For how many people, and at what time would you like the table? We have room all week."
		answer    = "Friday evening for two is booked."
		number    = "+34611000603"
	)
	b := turnSignalBox(t, "stt: openai/flux-general-en, sttMode: deepgram, turnDetection: provider, eagerness: high")
	b.Model.SetLive(providertest.Live{EagerEndOfTurn: eager, EndOfTurn: endTurn})
	dir := t.TempDir()
	mic := siptest.SpeechScript(t, dir, 6, siptest.Spoken{Pause: 1.5, Text: first}, siptest.Spoken{Pause: 0.05, Text: rest})
	sp := speechSpans(t, mic)
	pauseAt, pause := sp.longestGap()
	// The pause is the only silence inside the sentence that an eager end
	// of turn takes, and ends well before the end of turn.
	for _, g := range sp.gaps {
		if g[0] != pauseAt && g[1] >= eager-20*time.Millisecond {
			t.Fatalf("the recorded sentence has a silence of %s at %s besides its pause", g[1], g[0])
		}
	}
	if pause < eager+100*time.Millisecond || pause > endTurn-300*time.Millisecond {
		t.Fatalf("the recorded pause is %s, want between %s and %s", pause, eager+100*time.Millisecond, endTurn-300*time.Millisecond)
	}
	// The transcript of the audio so far: the first part until the
	// caller went on well into the rest.
	short := pauseAt - sp.first + (sp.last-pauseAt)/2
	b.Model.RespondTranscripts(func(wav []byte) string {
		if time.Duration(len(wav)-44)/2*time.Second/8000 < short {
			return first
		}
		return whole
	})
	b.Model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		switch req.Messages[len(req.Messages)-1].Content {
		case first:
			return providertest.Reply{Content: abandoned}
		case whole:
			return providertest.Reply{Content: answer}
		}
		return providertest.Reply{Content: "Neither the first words nor the whole sentence."}
	})
	ph := siptest.StartBaresip(t, number, mic, "sip:100@"+b.Phones.Addr())
	ph.CallEnded(t, 60*time.Second)
	rec := endedCall(t, b, number)

	sessions := b.Model.LiveSessions()
	if len(sessions) != 1 {
		t.Fatalf("%d live sessions for one call", len(sessions))
	}
	var events []string
	for _, ev := range sessions[0].Turns {
		switch ev.Event {
		case "Update":
		case "EagerEndOfTurn", "EndOfTurn":
			events = append(events, ev.Event+"("+ev.Transcript+")")
		default:
			events = append(events, ev.Event)
		}
	}
	if got, want := strings.Join(events, " "), "StartOfTurn EagerEndOfTurn("+first+") TurnResumed EagerEndOfTurn("+whole+") EndOfTurn("+whole+")"; got != want {
		t.Fatalf("the provider's turn signals:\n%s\nwant\n%s", got, want)
	}
	// The model was asked for the first words (the eager answer) and for
	// the whole sentence once each. The box hears the caller go on before
	// the provider's TurnResumed comes back, and forgets the eager end of
	// turn then, so no second eager answer starts on it. The answer to the
	// first words must be abandoned.
	eagerAnswers := 0
	for _, r := range b.Model.ChatRequests() {
		switch r.Messages[len(r.Messages)-1].Content {
		case first:
			eagerAnswers++
		case whole:
		default:
			t.Fatalf("the model was asked %q", r.Messages[len(r.Messages)-1].Content)
		}
	}
	if n := len(b.Model.ChatRequests()) - eagerAnswers; eagerAnswers != 1 || n != 1 {
		t.Fatalf("the model was asked for the first words %d times, for the whole sentence %d", eagerAnswers, n)
	}
	// The eager answers' runs were cancelled as abandoned.
	var cancelled []string
	poll.Until(t, "the abandoned runs marked", 10*time.Second, func() bool {
		rows, err := b.Pool.Query(context.Background(), `SELECT metadata->'voice'->>'reason' FROM stackbone_platform.runs
			WHERE status = 'cancelled' AND metadata->'voice'->>'preemptive' = 'abandoned'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cancelled = cancelled[:0]
		for rows.Next() {
			var why string
			if err := rows.Scan(&why); err != nil {
				t.Fatal(err)
			}
			cancelled = append(cancelled, why)
		}
		return len(cancelled) == eagerAnswers
	})
	// The box heard the caller go on, or the provider said the turn
	// resumed: whichever came first abandoned it.
	for _, why := range cancelled {
		if why != "the caller went on" && why != "the turn resumed" {
			t.Fatalf("an eager answer was abandoned because %q", why)
		}
	}
	// One turn: the whole sentence, ended by the provider, answered by the
	// answer started on the second eager end of turn.
	if len(rec.Metrics) != 1 {
		t.Fatalf("turn metrics %+v", rec.Metrics)
	}
	m := rec.Metrics[0]
	t.Logf("turn metrics: %v", m)
	wasted, _ := m["wasted"].([]any)
	if m["endpoint"] != "turn" || m["preemptive"] != true || len(wasted) != eagerAnswers {
		t.Fatalf("turn metrics %+v", m)
	}
	for _, w := range wasted {
		if w.(map[string]any)["kind"] != "generation" {
			t.Fatalf("wasted %+v", wasted)
		}
	}
	if len(rec.Transcript) != 2 || rec.Transcript[0].Text != whole || rec.Transcript[1].Text != answer || rec.Transcript[1].Cut {
		t.Fatalf("heard transcript %+v", rec.Transcript)
	}
	want := answerWindows(answer)
	if heard := ph.Heard(t); heard < want*3/4 || heard > want*5/4 {
		t.Fatalf("the phone heard %d loud 20 ms windows; the answer is %d (the abandoned one %d)", heard, want, answerWindows(abandoned))
	}
}
