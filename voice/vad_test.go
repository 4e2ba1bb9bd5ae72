package voice

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func tone(freq float64, amp float64, ms, rate int, rng *rand.Rand, noise float64) []int16 {
	n := ms * rate / 1000
	out := make([]int16, n)
	for i := range out {
		v := amp*math.Sin(2*math.Pi*freq*float64(i)/float64(rate)) + noise*(rng.Float64()*2-1)
		out[i] = int16(max(-32768, min(32767, v)))
	}
	return out
}

func frames(pcm []int16, size int) [][]int16 {
	var out [][]int16
	for i := 0; i+size <= len(pcm); i += size {
		out = append(out, pcm[i:i+size])
	}
	return out
}

// energyVAD is the energy detector with the default settings, at 8 kHz.
func energyVAD(t testing.TB) *vad {
	t.Helper()
	v, err := newVAD(VADConfig{Detector: VADEnergy}, 8000)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Line noise alone, even loud, is never an utterance; speech over it is,
// and ends after the endpointing delay.
func TestVADIgnoresLineNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := energyVAD(t)
	// Five seconds of loud hiss with a 50 Hz hum.
	noise := tone(50, 1500, 5000, 8000, rng, 1200)
	for _, f := range frames(noise, 160) {
		if ev := v.Process(f); ev == vadSpeechStart || ev == vadSpeechEnd {
			t.Fatalf("line noise gave %v", ev)
		}
	}
	// One second of "speech" (a strong tone) over the same noise, then noise.
	var events []vadEvent
	speech := tone(300, 12000, 1000, 8000, rng, 1200)
	tail := tone(50, 1500, 1000, 8000, rng, 1200)
	for _, f := range frames(append(speech, tail...), 160) {
		if ev := v.Process(f); ev != vadNone {
			events = append(events, ev)
		}
	}
	if len(events) != 2 || events[0] != vadSpeechStart || events[1] != vadSpeechEnd {
		t.Fatalf("events %v, want start then end", events)
	}
	u := v.Utterance()
	if ms := len(u) * 1000 / 8000; ms < 900 || ms > 1400 {
		t.Fatalf("utterance of %d ms, want about the 1 s of speech", ms)
	}
	// A click is discarded.
	click := tone(300, 12000, 80, 8000, rng, 0)
	var got []vadEvent
	for _, f := range frames(append(click, tone(50, 1500, 800, 8000, rng, 1200)...), 160) {
		if ev := v.Process(f); ev != vadNone {
			got = append(got, ev)
		}
	}
	if len(got) != 2 || got[1] != vadDiscard {
		t.Fatalf("click gave %v", got)
	}
}

// The sliding sorted window gives the floor a full sort of the window
// gives, frame after frame, repeated levels included.
func TestVADFloorIsTenthPercentileOfWindow(t *testing.T) {
	e := &energyVoicing{}
	var window []float64
	for i := range 1000 {
		lvl := float64((i*7919)%97 - 90) // repeats and jumps
		e.track(lvl)
		window = append(window, lvl)
		if len(window) > floorWindow {
			window = window[1:]
		}
		sorted := slices.Sorted(slices.Values(window))
		if want := sorted[len(sorted)/10]; e.floor != want {
			t.Fatalf("frame %d: floor %v, want %v", i, e.floor, want)
		}
	}
}

// The frames the VAD holds are its own copies (the caller reuses its
// frame), in frames it let go of after an utterance: a second utterance
// comes out exactly as heard, whatever the caller did to its frames after.
func TestVADKeepsCopiesInReusedFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	v := energyVAD(t)
	all := tone(50, 300, 2000, 8000, rng, 200) // everything the line carried
	for _, f := range frames(all, 160) {
		v.Process(f)
	}
	utter := func(freq float64) (heard, got []int16) {
		pcm := append(tone(freq, 12000, 800, 8000, rng, 200), tone(50, 300, 1500, 8000, rng, 200)...)
		frame := make([]int16, 160) // one frame, reused as a transport does
		for _, f := range frames(pcm, 160) {
			all = append(all, f...)
			copy(frame, f)
			if v.Process(frame) == vadSpeechEnd {
				return all, v.Utterance()
			}
			clear(frame)
		}
		t.Fatal("no end of utterance")
		return nil, nil
	}
	for i, freq := range []float64{300, 440} {
		at := len(all) // the tone starts here; up to the pre-roll before it is kept
		heard, got := utter(freq)
		ok := false
		// The first utterance follows two seconds of quiet: its whole
		// pre-roll is there to keep.
		least := 0
		if i == 0 {
			least = preRollFrames
		}
		for k := least; k <= preRollFrames && !ok; k++ {
			start := at - k*160
			ok = len(got) >= 160*30 && slices.Equal(got, heard[start:start+len(got)])
		}
		if !ok {
			t.Fatalf("utterance %d: %d samples, not the audio heard (with at most the pre-roll before it)", i, len(got))
		}
		if len(v.free) == 0 {
			t.Fatalf("utterance %d: no frames kept for reuse", i)
		}
	}
}

// Level summed as integers is the floating-point sum of (s/32768)²
// exactly, to the bit, at the extremes and on any frame.
func TestLevelIsTheFloatingPointSum(t *testing.T) {
	byFloat := func(pcm []int16) float64 {
		var sum float64
		for _, s := range pcm {
			v := float64(s) / 32768
			sum += v * v
		}
		rms := math.Sqrt(sum / float64(len(pcm)))
		if rms < 1e-6 {
			return -120
		}
		return 20 * math.Log10(rms)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	frames := [][]int16{slices.Repeat([]int16{-32768}, 160), slices.Repeat([]int16{32767}, 48000), {1}, {-1, 0, 1}}
	for range 2000 {
		f := make([]int16, 1+rng.IntN(1000))
		scale := 1 << rng.IntN(16)
		for i := range f {
			f[i] = int16(rng.IntN(2*scale) - scale)
		}
		frames = append(frames, f)
	}
	for _, f := range frames {
		if got, want := Level(f), byFloat(f); got != want {
			t.Fatalf("%d samples: Level %v, the floating-point sum %v", len(f), got, want)
		}
	}
}

// BenchmarkLevel is one 20 ms frame's level at 8 kHz, taken for every
// caller frame by voice detection.
func BenchmarkLevel(b *testing.B) {
	f := speechFrames(20, 8000)[0]
	for b.Loop() {
		_ = Level(f)
	}
}
