package opus_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stackbone/box/internal/opus"
	"github.com/stackbone/box/voice"
)

// A tone survives a round trip through the codec at the call's rate, with
// its level and pitch.
func TestToneRoundTrip(t *testing.T) {
	c, err := opus.New(16000)
	if errors.Is(err, opus.ErrUnavailable) {
		t.Skip("built without -tags libopus")
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []int16
	for i := 0; i < 50; i++ {
		f := make([]int16, 320)
		for j := range f {
			f[j] = int16(8000 * math.Sin(2*math.Pi*440*float64(i*320+j)/16000))
		}
		pkt, err := c.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(pkt) == 0 || len(pkt) > 400 {
			t.Fatalf("packet of %d bytes", len(pkt))
		}
		pcm, err := c.Decode(pkt)
		if err != nil {
			t.Fatal(err)
		}
		if len(pcm) != 320 {
			t.Fatalf("decoded %d samples, want 320", len(pcm))
		}
		out = append(out, pcm...)
	}
	tail := out[len(out)/2:]
	if lvl := voice.Level(tail); lvl < -25 {
		t.Fatalf("decoded tone at %.1f dBFS", lvl)
	}
	// Zero crossings give the pitch: 440 Hz is 880 crossings a second.
	cross := 0
	for i := 1; i < len(tail); i++ {
		if (tail[i-1] < 0) != (tail[i] < 0) {
			cross++
		}
	}
	hz := float64(cross) / 2 / (float64(len(tail)) / 16000)
	if hz < 400 || hz > 480 {
		t.Fatalf("decoded pitch %.0f Hz, want 440", hz)
	}
}
