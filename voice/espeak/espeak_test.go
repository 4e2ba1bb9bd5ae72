package espeak_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stackbone/box/voice"
	"github.com/stackbone/box/voice/espeak"
)

func TestSpeaksWithWordTimings(t *testing.T) {
	eng, err := espeak.Open("en-us")
	if errors.Is(err, espeak.ErrUnavailable) {
		t.Skipf("espeak-ng is not installed here: %v (scripts/test installs it)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	text := "Your appointment is on Tuesday at four."
	seg, err := eng.Synthesize(context.Background(), text, 8000)
	if err != nil {
		t.Fatal(err)
	}
	if secs := float64(len(seg.PCM)) / 8000; secs < 1 || secs > 6 {
		t.Fatalf("%.1f s of audio for one sentence", secs)
	}
	if voice.Level(seg.PCM) < -40 {
		t.Fatalf("the audio is silent: %.1f dBFS", voice.Level(seg.PCM))
	}
	var words []string
	last := -1
	for _, w := range seg.Words {
		if w.Start < last || w.End < w.Start || w.End > len(seg.PCM) {
			t.Fatalf("timings out of order: %+v", seg.Words)
		}
		last = w.Start
		words = append(words, w.Text)
	}
	if got := strings.Join(words, " "); got != "Your appointment is on Tuesday at four" {
		t.Fatalf("words %q", got)
	}
}
