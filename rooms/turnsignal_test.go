package rooms_test

import (
	"context"
	"encoding/json"
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
// own endpoint (1.5 s on this agent) would have ended it. The model was
// asked once, and the page heard the answer and shows it once.
func TestBrowserCallProviderEndsTheTurn(t *testing.T) {
	t.Parallel()
	const (
		question    = "What are your opening hours?"
		answer      = "We are open from nine to five on weekdays."
		endOfTurn   = 300 * time.Millisecond
		boxEndpoint = 1500 * time.Millisecond
	)
	for _, mode := range []string{"realtime", "flux"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			need(t, "chromium", "chromium")
			b := newBox(t, config.Rooms{}, func(cfg *config.Config) {
				a := cfg.Agents["frontdesk"]
				a.Voice = &config.AgentVoice{STTMode: mode, TurnDetection: config.TurnDetectionProvider,
					MinEndpointDelay: boxEndpoint, MaxEndpointDelay: 2500 * time.Millisecond}
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
			var ended time.Duration // where the provider ended the turn, on the stream's audio
			var events []string
			for _, ev := range ls.Turns {
				if ev.Event != "Update" {
					events = append(events, ev.Event)
				}
				if ev.Event == "EndOfTurn" || ev.Event == "input_audio_buffer.speech_stopped" {
					ended = ev.Audio
				}
			}
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
					t.Fatal("the box ended a turn the provider ended")
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
