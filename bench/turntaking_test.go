package bench

import (
	"context"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/stackbone/box/provider/providertest"
)

// The bench's callers cover every class the report prints, at least 60
// behaviours, each with words to say; overlaps say when they talk over.
func TestTurnTakingBehaviours(t *testing.T) {
	bs := ttBehaviours()
	if len(bs) < 60 {
		t.Fatalf("%d behaviours, want at least 60", len(bs))
	}
	seen := map[string]int{}
	for _, b := range bs {
		seen[b.Class]++
		if !slices.Contains(ttClasses, b.Class) {
			t.Errorf("%q: class %q is not reported", b.Name, b.Class)
		}
		if partsText(b.Turn) == "" || (b.Overlap != nil) != (b.Kind != "") {
			t.Errorf("behaviour %+v", b)
		}
	}
	for _, c := range ttClasses {
		if seen[c] == 0 {
			t.Errorf("class %q has no behaviour", c)
		}
	}
}

// The bench's transcriber hears the words whose audio a request covers:
// none still being said, none from before the audio began, and the
// words of a part cut off mid-sentence without the closing mark.
func TestTurnTakingTranscriberHearsTheAudioItIsSent(t *testing.T) {
	s := &ttSlot{}
	now := time.Now()
	a := ttAudio{words: []ttWord{{"My", 0, 1600}, {"name", 1600, 3200}, {"is", 3200, 4800}, {"Ana", 14400, 16000}, {"Lopez.", 16000, 19200}}}
	// Said from 1 s ago: "My name is" ended 0.4 s ago, "Ana" begins 0.8 s
	// from now.
	s.said(a, now.Add(-time.Second))
	wav := func(seconds float64) []byte { return providertest.WAV(make([]byte, int(seconds*16000)), 8000) }
	if got := s.heard(wav(1.1)); got != "My name is" {
		t.Fatalf("the utterance so far is heard as %q", got)
	}
	if got := s.heard(wav(0.3)); got != "" {
		t.Fatalf("audio that began after the words is heard as %q", got)
	}
	// Said from 2.2 s ago: "Ana" ended 0.2 s ago, "Lopez." ends 0.2 s from
	// now.
	s = &ttSlot{}
	s.said(a, now.Add(-2200*time.Millisecond))
	if got := s.heard(wav(0.5)); got != "Ana" {
		t.Fatalf("audio of a word said and one still being said is heard as %q", got)
	}
}

// Each behaviour renders: espeak-ng speech with each word's place, sounds,
// noise under a noisy line's words.
func TestTurnTakingBehavioursRender(t *testing.T) {
	for _, tool := range []string{"espeak-ng", "sox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (the test command installs it): the callers cannot be rendered", tool)
		}
	}
	ctx := context.Background()
	r, err := newTTRenderer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	a, err := r.render(ctx, parts("My name is | 1200 | Ana Lopez."))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.words) != 5 || a.words[3].start-a.words[2].end < 1200*8 || a.speechEnd != len(a.pcm) {
		t.Fatalf("words %+v, speech end %d of %d samples", a.words, a.speechEnd, len(a.pcm))
	}
	for i, w := range a.words {
		if w.end <= w.start || (i > 0 && w.start < a.words[i-1].end) {
			t.Fatalf("word %d %+v out of order in %+v", i, w, a.words)
		}
	}
	// The pause is silent, the words are not.
	if rms(a.pcm[a.words[2].end+800:a.words[3].start-800]) > 1 || rms(a.pcm[a.words[3].start:a.words[4].end]) < 1000 {
		t.Fatal("the pause holds sound or the words are silent")
	}
	noisy := r.withNoise(a.pcm, "babble", 10, 0)
	if n := rms(noisy[a.words[2].end+800 : a.words[3].start-800]); n < 200 || n > 2000 {
		t.Fatalf("babble at 10 dB SNR has an RMS of %.0f in the pause, speech %d", n, speechRMS)
	}
	if c := r.sound("cough"); rms(c) < speechRMS {
		t.Fatalf("a cough at RMS %.0f, quieter than speech", rms(c))
	}
}
