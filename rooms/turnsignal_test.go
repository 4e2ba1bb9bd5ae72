package rooms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/rooms"
	"github.com/stackbone/box/voice"
)

// A browser caller (headless Chromium, its microphone a recorded voice)
// asks a question of an agent whose turns the speech-to-text provider
// ends: an OpenAI Realtime session with semantic_vad, and a
// Deepgram-compatible turn-taking stream. The provider sent interim words
// while the question came and ended the turn 300 ms into the silence after
// it; the turn's metrics say so (endpoint "turn"), well before the box's
// own endpoint (2.5 s on this agent) would have ended it. The model was
// asked once, and the page heard the answer and shows it once.
func TestBrowserCallProviderEndsTheTurn(t *testing.T) {
	t.Parallel()
	const (
		question    = "What are your opening hours?"
		answer      = "We are open from nine to five on weekdays."
		endOfTurn   = 300 * time.Millisecond
		boxEndpoint = 2500 * time.Millisecond
	)
	for _, mode := range []string{"realtime", "flux"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			need(t, "chromium", "chromium")
			b := newBox(t, config.Rooms{}, func(cfg *config.Config) {
				a := cfg.Agents["frontdesk"]
				a.Voice = &config.AgentVoice{STTMode: mode, TurnDetection: config.TurnDetectionProvider,
					MinEndpointDelay: boxEndpoint, MaxEndpointDelay: 3500 * time.Millisecond}
				switch mode {
				case "realtime":
					a.Voice.STT, a.Voice.Eagerness = config.ModelChain{"openai/gpt-4o-transcribe"}, "high"
				case "flux":
					a.Voice.STT, a.Voice.STTMode, a.Voice.Eagerness = config.ModelChain{"openai/flux-general-en"}, "deepgram", "medium"
				}
				cfg.Agents["frontdesk"] = a
			})
			b.model.SetLive(providertest.Live{EndOfTurn: endOfTurn})
			b.model.RespondTranscripts(func([]byte) string { return question })
			b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
				if strings.Contains(req.Messages[0].Content, `"operations"`) {
					return providertest.Reply{Content: extraction}
				}
				if last := req.Messages[len(req.Messages)-1]; last.Role == openai.ChatMessageRoleUser && last.Content == question {
					return providertest.Reply{Content: answer}
				}
				return providertest.Reply{Content: "The question did not come whole."}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
			defer cancel()
			p := startCallPage(ctx, t, b, rooms.BackendEmbedded, speechWAV(t, question, 1.5), "+34600111444")
			poll.Until(t, "the answer in the page's transcript", 60*time.Second, func() bool {
				return p.state().has(voice.RoleAssistant, answer)
			})
			s := p.state()
			if len(s.Transcript) != 2 || !s.has(voice.RoleUser, question) {
				t.Fatalf("the page shows %+v", s.Transcript)
			}
			// The page heard the answer, once: the scripted voice speaks it
			// for 40 ms a character.
			long := len(answer) * providertest.SpeechMsPerChar
			if s.VoicedMs < long/3 || s.VoicedMs > long*3/2 {
				t.Fatalf("the page heard %d ms of the agent (peak RMS %.3f); the answer lasts %d ms", s.VoicedMs, s.LevelMax, long)
			}
			if err := p.br.Navigate(ctx, "about:blank"); err != nil {
				t.Fatal(err)
			}
			var rec voice.CallRecord
			poll.Until(t, "the call to end after the page left", 30*time.Second, func() bool {
				r, err := b.calls.Get(ctx, s.CallID)
				rec = r
				return err == nil && r.Status == "ended"
			})
			if len(rec.Transcript) != 2 || rec.Transcript[0].Text != question || rec.Transcript[1].Text != answer || rec.Transcript[1].Cut {
				t.Fatalf("the call's transcript %+v", rec.Transcript)
			}

			sessions := b.model.LiveSessions()
			if len(sessions) != 1 {
				t.Fatalf("%d live sessions for one call", len(sessions))
			}
			ls := sessions[0]
			// Where the provider ended the turn, on the stream's audio.
			events, ended := ls.Signals()
			switch mode {
			case "realtime":
				if ls.Protocol != "realtime" || !strings.Contains(ls.Messages[0], `"turn_detection":{"eagerness":"high","type":"semantic_vad"}`) {
					t.Fatalf("a %s session set up with %s", ls.Protocol, ls.Messages[0])
				}
				if got := strings.Join(events, " "); got != "input_audio_buffer.speech_started input_audio_buffer.speech_stopped" {
					t.Fatalf("the provider's turn signals: %s", got)
				}
			case "flux":
				q := ls.Query
				if ls.Protocol != "flux" || q.Get("eot_threshold") != "0.7" || q.Get("eager_eot_threshold") != "0.5" {
					t.Fatalf("a %s stream opened with %v", ls.Protocol, q)
				}
				if got := strings.Join(events, " "); got != "StartOfTurn EagerEndOfTurn EndOfTurn" {
					t.Fatalf("the provider's turn signals: %s", got)
				}
				if strings.Contains(strings.Join(ls.Messages, "\n"), "ForceEndTurn") {
					t.Fatal("the box ended the turn itself (ForceEndTurn)")
				}
			}
			if len(ls.Interims) == 0 || ls.InterimAudio[0] >= ended-endOfTurn {
				t.Fatalf("interims %q at %v of the stream's audio; the turn ended at %s", ls.Interims, ls.InterimAudio, ended)
			}

			if len(rec.Metrics) != 1 {
				t.Fatalf("turn metrics %+v", rec.Metrics)
			}
			m := rec.Metrics[0]
			raw, _ := json.Marshal(m)
			t.Logf("turn metrics: %s", raw)
			eou, _ := m["endOfUtteranceMs"].(float64)
			if m["endpoint"] != "turn" || m["transcription"] != "stream" || time.Duration(eou)*time.Millisecond >= boxEndpoint {
				t.Fatalf("the turn ended by %v, %v ms after the caller's last voice", m["endpoint"], m["endOfUtteranceMs"])
			}
			asked := 0
			for _, r := range b.model.ChatRequests() {
				if !strings.Contains(r.Messages[0].Content, `"operations"`) {
					asked++
				}
			}
			if asked != 1 {
				t.Fatalf("the model was asked %d times", asked)
			}
		})
	}
}

// A browser caller pauses inside a sentence long enough for the
// turn-taking stream's eager end of turn, and goes on before its end of
// turn: the answer started on the eager end of turn is abandoned (its run
// cancelled, counted as the turn's wasted work, nothing of it committed,
// shown or played), and the whole sentence is answered once, on the
// provider's end of turn.
func TestBrowserCallTurnResumedAbandonsTheEagerAnswer(t *testing.T) {
	t.Parallel()
	need(t, "chromium", "chromium")
	const (
		first   = "I would like to book a table"
		rest    = "for two on Friday evening"
		whole   = first + " " + rest
		eager   = 150 * time.Millisecond
		endTurn = 900 * time.Millisecond
		// The abandoned answer is long, the heard one short: a page that
		// heard the first would have heard far more than the second.
		abandoned = "Sure. For how many people, and at what time would you like the table? We have room all week."
		answer    = "Friday evening for two is booked."
	)
	b := newBox(t, config.Rooms{}, func(cfg *config.Config) {
		a := cfg.Agents["frontdesk"]
		a.Voice = &config.AgentVoice{STT: config.ModelChain{"openai/flux-general-en"}, STTMode: "deepgram",
			TurnDetection: config.TurnDetectionProvider, Eagerness: "high",
			MinEndpointDelay: 2500 * time.Millisecond, MaxEndpointDelay: 3500 * time.Millisecond}
		cfg.Agents["frontdesk"] = a
	})
	b.model.SetLive(providertest.Live{EagerEndOfTurn: eager, EndOfTurn: endTurn})
	wav, pauseAt, speechEnd := pausedSpeechWAV(t, first, rest, 1.5)
	// The transcript of the audio so far: the first part until the caller
	// went on well into the rest (the stream's audio starts about where
	// the speech does).
	short := pauseAt + (speechEnd-pauseAt)/2
	b.model.RespondTranscripts(func(wav []byte) string {
		pcm, rate := wavPCM(t, wav)
		if time.Duration(len(pcm))*time.Second/time.Duration(rate) < short {
			return first
		}
		return whole
	})
	b.model.Respond(func(req *openai.ChatCompletionRequest) providertest.Reply {
		if strings.Contains(req.Messages[0].Content, `"operations"`) {
			return providertest.Reply{Content: extraction}
		}
		switch req.Messages[len(req.Messages)-1].Content {
		case first:
			return providertest.Reply{Content: abandoned}
		case whole:
			return providertest.Reply{Content: answer}
		}
		return providertest.Reply{Content: "Neither the first words nor the whole sentence."}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	p := startCallPage(ctx, t, b, rooms.BackendEmbedded, wav, "+34600111555")
	poll.Until(t, "the answer in the page's transcript", 60*time.Second, func() bool {
		return p.state().has(voice.RoleAssistant, answer)
	})
	s := p.state()
	if len(s.Transcript) != 2 || !s.has(voice.RoleUser, whole) {
		t.Fatalf("the page shows %+v", s.Transcript)
	}
	long := len(answer) * providertest.SpeechMsPerChar
	if s.VoicedMs < long/3 || s.VoicedMs > long*3/2 {
		t.Fatalf("the page heard %d ms of the agent; the answer lasts %d ms, the abandoned one %d",
			s.VoicedMs, long, len(abandoned)*providertest.SpeechMsPerChar)
	}
	if err := p.br.Navigate(ctx, "about:blank"); err != nil {
		t.Fatal(err)
	}
	var rec voice.CallRecord
	poll.Until(t, "the call to end after the page left", 30*time.Second, func() bool {
		r, err := b.calls.Get(ctx, s.CallID)
		rec = r
		return err == nil && r.Status == "ended"
	})
	if len(rec.Transcript) != 2 || rec.Transcript[0].Text != whole || rec.Transcript[1].Text != answer || rec.Transcript[1].Cut {
		t.Fatalf("the call's transcript %+v", rec.Transcript)
	}

	sessions := b.model.LiveSessions()
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
	// The model was asked for the whole sentence once, and for the first
	// words (the eager answer) once: the box hears the caller go on before
	// the provider's TurnResumed comes back, and forgets the eager end of
	// turn then, so no second eager answer starts on it. The answer to the
	// first words must be abandoned.
	eagerAnswers, answers := 0, 0
	for _, r := range b.model.ChatRequests() {
		if strings.Contains(r.Messages[0].Content, `"operations"`) {
			continue
		}
		switch last := r.Messages[len(r.Messages)-1].Content; last {
		case first:
			eagerAnswers++
		case whole:
			answers++
		default:
			t.Fatalf("the model was asked %q", last)
		}
	}
	if eagerAnswers != 1 || answers != 1 {
		t.Fatalf("the model was asked for the first words %d times, for the whole sentence %d", eagerAnswers, answers)
	}
	if len(rec.Metrics) != 1 {
		t.Fatalf("turn metrics %+v", rec.Metrics)
	}
	m := rec.Metrics[0]
	raw, _ := json.Marshal(m)
	t.Logf("turn metrics: %s", raw)
	wasted, _ := m["wasted"].([]any)
	if m["endpoint"] != "turn" || m["preemptive"] != true || len(wasted) != eagerAnswers {
		t.Fatalf("turn metrics %s", raw)
	}
	for _, w := range wasted {
		if w.(map[string]any)["kind"] != "generation" {
			t.Fatalf("turn metrics %s", raw)
		}
	}
	runID, _ := m["runId"].(string)
	var run struct {
		Status string `json:"status"`
	}
	// The abandoned answers' runs are cancelled; the one heard is not.
	var list []struct {
		Status   string         `json:"status"`
		Metadata map[string]any `json:"metadata"`
	}
	poll.Until(t, "the abandoned run marked", 10*time.Second, func() bool {
		if st, code := b.do("GET", "/api/runs?agent=frontdesk&status=cancelled", nil, &list); st != 200 {
			t.Fatalf("GET runs: %d %s", st, code)
		}
		cancelled := 0
		for _, r := range list {
			if v, ok := r.Metadata["voice"].(map[string]any); ok && v["preemptive"] == "abandoned" && r.Status == "cancelled" {
				cancelled++
			}
		}
		return cancelled == eagerAnswers
	})
	poll.Until(t, "the heard answer's run to succeed", 10*time.Second, func() bool {
		if st, code := b.do("GET", "/api/runs/"+runID, nil, &run); st != 200 {
			t.Fatalf("GET the heard answer's run: %d %s", st, code)
		}
		if run.Status == "cancelled" || run.Status == "failed" {
			t.Fatalf("the heard answer's run %s", run.Status)
		}
		return run.Status == "succeeded"
	})
}

// pausedSpeechWAV records first and rest with espeak-ng, one after the
// other with the silence espeak leaves between two utterances (about a
// third of a second), and lays them out as the fake microphone plays them
// (see speechWAV); pauseAt and end are where that pause and the speech
// end, counted from the speech's start.
func pausedSpeechWAV(t *testing.T, first, rest string, lead float64) (wav string, pauseAt, end time.Duration) {
	t.Helper()
	need(t, "espeak-ng", "espeak-ng")
	need(t, "sox", "sox")
	dir := t.TempDir()
	var parts []string
	for i, text := range []string{first, rest} {
		raw := filepath.Join(dir, fmt.Sprintf("espeak-%d.wav", i))
		if b, err := exec.Command("espeak-ng", "-v", "en-us", "-s", "150", "-w", raw, text).CombinedOutput(); err != nil {
			t.Fatalf("espeak-ng: %v: %s", err, b)
		}
		parts = append(parts, raw)
	}
	wav = filepath.Join(dir, "speech.wav")
	if b, err := exec.Command("sox", append(parts, "-r", "48000", "-c", "1", "-b", "16", wav, "pad", formatSeconds(lead), "30")...).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v: %s", err, b)
	}
	data, err := os.ReadFile(wav)
	if err != nil {
		t.Fatal(err)
	}
	pcm, rate := wavPCM(t, data)
	// Loud 20 ms windows (RMS over 300, as the scripted provider hears
	// speech): the speech's start and end, and the silences inside it.
	win := rate / 50
	var start, last time.Duration = -1, -1
	var pause time.Duration
	for i := 0; i+win <= len(pcm); i += win {
		var sum float64
		for _, v := range pcm[i : i+win] {
			sum += float64(v) * float64(v)
		}
		if math.Sqrt(sum/float64(win)) <= 300 {
			continue
		}
		at := time.Duration(i) * time.Second / time.Duration(rate)
		if start < 0 {
			start = at
		} else if gap := at - last - 20*time.Millisecond; gap > 0 {
			switch {
			case gap > pause:
				if pause >= 120*time.Millisecond {
					t.Fatalf("the recorded sentence has two pauses (%s, %s)", pause, gap)
				}
				pause, pauseAt = gap, last+20*time.Millisecond-start
			case gap >= 120*time.Millisecond:
				t.Fatalf("the recorded sentence has two pauses (%s, %s)", pause, gap)
			}
		}
		last = at
	}
	// An eager end of turn in the pause, and no end of turn.
	if pause < 250*time.Millisecond || pause > 600*time.Millisecond {
		t.Fatalf("the recorded pause is %s, want 250 to 600 ms", pause)
	}
	return wav, pauseAt, last + 20*time.Millisecond - start
}
