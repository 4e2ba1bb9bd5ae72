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

// liveSaid is what the caller says in the live speech-to-text calls.
const liveSaid = "I would like to book a table for two tonight."

// liveCall places one baresip call to an agent whose speech-to-text is
// live in mode, with the scripted provider behaving as live says and
// transcribing every utterance as liveSaid; it returns the caller turns
// committed to the call's record and the provider's live sessions.
func liveCall(t *testing.T, mode string, live providertest.Live) (*box, []string, []providertest.LiveSession) {
	t.Helper()
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
	b.model.SetLive(live)
	b.model.RespondTranscripts(func([]byte) string { return liveSaid })
	b.model.Script(providertest.Reply{Content: "Of course. At what time?"})
	mic := siptest.SpeechFile(t, t.TempDir(), liveSaid, 2.5, 6)
	ph := siptest.StartBaresip(t, "+34600111333", mic, "sip:100@"+b.sip.Addr())
	call := b.next(t)
	poll.Until(t, "the model to be asked", 40*time.Second, func() bool { return b.chatContains(liveSaid) })
	ph.CallEnded(t, 60*time.Second)
	rec := b.ended(t, call)
	var turns []string
	for _, e := range rec.Transcript {
		if e.Role == voice.RoleUser {
			turns = append(turns, e.Text)
		}
	}
	if len(turns) != 1 || turns[0] != liveSaid {
		t.Fatalf("caller turns %q, want the final transcript %q", turns, liveSaid)
	}
	if n := len(b.model.Uploads()); n != 0 {
		t.Fatalf("%d utterances went over HTTP transcription", n)
	}
	sessions := b.model.LiveSessions()
	for _, s := range sessions {
		if s.Protocol != mode {
			t.Fatalf("a %s session on a %s agent", s.Protocol, mode)
		}
	}
	return b, turns, sessions
}

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
			_, _, sessions := liveCall(t, mode, providertest.Live{})
			if len(sessions) != 1 {
				t.Fatalf("%d live sessions for one call, want one stream for the call", len(sessions))
			}
			s := sessions[0]
			if rms(s.Audio) < 300 || len(s.Interims) == 0 {
				t.Fatalf("the stream carried audio of RMS %.0f, %d interim transcripts sent", rms(s.Audio), len(s.Interims))
			}
			if s.LastAudio.Sub(s.FirstAudio) < 2*time.Second || fmt.Sprint(s.Finals) != "["+liveSaid+"]" {
				t.Fatalf("the stream's audio came over %s (want the call's length, as spoken), finals %q",
					s.LastAudio.Sub(s.FirstAudio), s.Finals)
			}
			switch mode {
			case "deepgram":
				if s.Query.Get("sample_rate") != "8000" {
					t.Fatalf("deepgram sample_rate %q, want the call's 8000", s.Query.Get("sample_rate"))
				}
			case "realtime":
				if !strings.Contains(strings.Join(s.Messages, "\n"), "input_audio_buffer.commit") {
					t.Fatal("the realtime session was never committed")
				}
			}
		})
	}
}

// The call's stream drops (the provider cuts the connection without a
// close frame) before the caller speaks: the call goes on, its turn is
// transcribed over a new stream of the same protocol, and the committed
// turn is still the provider's final.
func TestBaresipLiveStreamDropped(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	_, _, sessions := liveCall(t, "deepgram", providertest.Live{DropAfter: 400 * time.Millisecond, Connections: 1})
	if len(sessions) < 2 {
		t.Fatalf("%d live sessions, want the dropped one and a new one", len(sessions))
	}
	first := sessions[0]
	if !first.Ended || len(first.Finals) != 0 || len(first.Audio) > first.Rate {
		t.Fatalf("the first stream: ended %v, finals %q, %d samples", first.Ended, first.Finals, len(first.Audio))
	}
	voiced := false
	for _, s := range sessions[1:] {
		if rms(s.Audio) > 300 && slicesContain(s.Finals, liveSaid) {
			voiced = true
		}
	}
	if !voiced {
		t.Fatal("no later stream carried the caller's voice to its final")
	}
}

func slicesContain(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
