package bench

import (
	"strings"
	"testing"

	"github.com/zaf/g711"

	"github.com/stackbone/box/voice"
)

// The scripted transcribers know the caller's words from the audio alone:
// the whole utterance, its start up to a pause (a speculative or an
// endpointed piece) and a stretch after a pause (what a provider's own
// endpointing sends after it settled the piece before), over G.711 and
// at the Realtime wire's 24 kHz.
func TestLatencyScriptIsHeardFromItsAudio(t *testing.T) {
	for id, u := range latencyScript {
		pcm := u.pcm(id)
		for i, v := range pcm { // the SIP line
			pcm[i] = g711.DecodeUlawFrame(g711.EncodeUlawFrame(v))
		}
		// Where each part starts and ends in the audio (whole 20 ms frames).
		var bounds [][2]int
		at := 0
		for k, p := range u.parts {
			if k > 0 {
				at += u.pauses[k-1] / 20 * latencyFrame
			}
			bounds = append(bounds, [2]int{at, at + p.ms/20*latencyFrame})
			at += p.ms / 20 * latencyFrame
		}
		for _, rate := range []int{latencyRate, voice.RealtimeRate} {
			at := func(pcm []int16) []int16 { return voice.Resample(pcm, latencyRate, rate) }
			if got := heard(at(pcm), rate); got != u.text() {
				t.Fatalf("utterance %d at %d Hz: heard %q, want %q", id, rate, got, u.text())
			}
			for k, p := range u.parts {
				var before []string
				for _, q := range u.parts[:k+1] {
					before = append(before, q.text)
				}
				if got := heard(at(pcm[:bounds[k][1]]), rate); got != strings.Join(before, " ") {
					t.Fatalf("utterance %d to part %d at %d Hz: heard %q", id, k, rate, got)
				}
				if k == 0 {
					continue
				}
				// From half a frame before the part: frames of quiet and tone.
				if got := heard(at(pcm[bounds[k][0]-latencyFrame/2:]), rate); !strings.HasPrefix(got, p.text) {
					t.Fatalf("utterance %d from part %d at %d Hz: heard %q, want it to start %q", id, k, rate, got, p.text)
				}
			}
		}
	}
	if got := heard(make([]int16, latencyRate), latencyRate); got != "" {
		t.Fatalf("silence heard as %q", got)
	}
}
