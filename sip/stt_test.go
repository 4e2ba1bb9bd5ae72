package sip_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
	"github.com/stackbone/box/voice"
)

// A real softphone calls an agent whose speech-to-text is live (voice.sttMode
// realtime, then deepgram): the caller's audio reaches the scripted provider
// over the protocol's WebSocket, and the caller turn committed to the call's
// transcript, and sent to the model, is the provider's final transcript.
// The controller streams while the caller speaks (Listen): one stream for
// the call, opened at its start, carries the audio as it comes (spread over
// the call, not one burst at the end of the utterance), interims come back
// while the caller speaks, and nothing goes over HTTP transcription.
func TestBaresipLiveSpeechToText(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	for _, mode := range []string{"realtime", "deepgram"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			agents := `
agents:
  receptionist:
    model: openai/chat
    instructions: You answer the phone for a restaurant.
    greeting: Hello, this is the front desk.
    voice: {stt: openai/gpt-4o-transcribe, sttMode: ` + mode + `}
`
			cfg := config.SIP{Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
				Name: "local", Sources: []string{"127.0.0.1"}, Routes: []config.Route{{Number: "*", Agent: "receptionist"}},
			}}}}
			b := startBox(t, cfg, agents, nil)
			const said = "I would like to book a table for two tonight."
			b.model.ScriptTranscripts(said)
			b.model.Script(providertest.Reply{Content: "Of course. At what time?"})
			mic := siptest.SpeechFile(t, t.TempDir(), said, 2.5, 6)
			ph := siptest.StartBaresip(t, "+34600111333", mic, "sip:100@"+b.sip.Addr())
			call := b.next(t)
			poll.Until(t, "the model to be asked", 40*time.Second, func() bool { return b.chatContains(said) })
			ph.CallEnded(t, 60*time.Second)
			rec := b.ended(t, call)

			var turns []string
			for _, e := range rec.Transcript {
				if e.Role == voice.RoleUser {
					turns = append(turns, e.Text)
				}
			}
			if len(turns) != 1 || turns[0] != said {
				t.Fatalf("caller turns %q, want the final transcript %q", turns, said)
			}
			if n := len(b.model.Uploads()); n != 0 {
				t.Fatalf("%d utterances went over HTTP transcription", n)
			}
			var voiced, interims int
			sessions := b.model.LiveSessions()
			for _, s := range sessions {
				if s.Protocol != mode {
					t.Fatalf("a %s session on a %s agent", s.Protocol, mode)
				}
				if rms(s.Audio) > 300 {
					voiced++
				}
				interims += len(s.Interims)
				for _, f := range s.Finals {
					if f != said {
						t.Fatalf("the provider finalized %q", f)
					}
				}
			}
			if voiced == 0 || interims == 0 {
				t.Fatalf("%d live sessions, %d with the caller's voice, %d interim transcripts sent", len(sessions), voiced, interims)
			}
			if len(sessions) != 1 {
				t.Fatalf("%d live sessions for one call, want one stream for the call", len(sessions))
			}
			if s := sessions[0]; s.LastAudio.Sub(s.FirstAudio) < 2*time.Second || fmt.Sprint(s.Finals) != "["+said+"]" {
				t.Fatalf("the stream's audio came over %s (want the call's length, as spoken), finals %q",
					s.LastAudio.Sub(s.FirstAudio), s.Finals)
			}
			if s := sessions[0]; mode == "deepgram" && s.Query.Get("sample_rate") != "8000" {
				t.Fatalf("deepgram sample_rate %q, want the call's 8000", s.Query.Get("sample_rate"))
			}
			if s := sessions[0]; mode == "realtime" && !strings.Contains(strings.Join(s.Messages, "\n"), "input_audio_buffer.commit") {
				t.Fatal("the realtime session was never committed")
			}
		})
	}
}
