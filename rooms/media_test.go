package rooms

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stackbone/box/voice"
)

// Caller audio arrives in packets of any length; the controller reads
// 20 ms frames, silence fills a gap, and the media ends with io.EOF or a
// media timeout.
func TestPeerMediaFramesGapsAndEnds(t *testing.T) {
	m := newPeerMedia(8000, 300*time.Millisecond, func([]int16) error { return nil })
	speech := make([]int16, 400) // 50 ms: two frames and a rest
	for i := range speech {
		speech[i] = 1000
	}
	m.push(speech)
	for i := 0; i < 2; i++ {
		f, err := m.ReadFrame()
		if err != nil || len(f) != 160 || f[0] != 1000 {
			t.Fatalf("frame %d: %d samples, %v", i, len(f), err)
		}
	}
	// Nothing more arrives: silence after the slack, then at the frame rate.
	start := time.Now()
	f, err := m.ReadFrame()
	if err != nil || len(f) != 160 || f[0] != 0 {
		t.Fatalf("gap frame: %v %v", f[:1], err)
	}
	if d := time.Since(start); d < voice.FrameDuration || d > voice.FrameDuration+gapSlack+50*time.Millisecond {
		t.Fatalf("the gap was filled after %s", d)
	}
	start = time.Now()
	if _, err := m.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*voice.FrameDuration+10*time.Millisecond {
		t.Fatalf("the next silent frame took %s", d)
	}
	// The rest of the packet completes a frame once more audio comes.
	m.push(speech[:80])
	if f, err := m.ReadFrame(); err != nil || f[0] != 1000 || f[159] != 1000 {
		t.Fatalf("joined frame: %v", err)
	}
	// Nothing for the media timeout.
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, err := m.ReadFrame()
		if errors.Is(err, voice.ErrMediaTimeout) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("want a media timeout, got %v", err)
		}
	}
	m.stop()
	if _, err := m.ReadFrame(); err != io.EOF {
		t.Fatalf("after stop: %v", err)
	}
}

// A reader that falls behind loses the oldest audio, never blocks the RTP
// reader.
func TestPeerMediaDropsOldestWhenBehind(t *testing.T) {
	m := newPeerMedia(8000, 0, func([]int16) error { return nil })
	for i := 0; i < 60; i++ {
		f := make([]int16, 160)
		f[0] = int16(i)
		m.push(f)
	}
	if m.dropped.Load() != 10 {
		t.Fatalf("dropped %d, want 10", m.dropped.Load())
	}
	if f, _ := m.ReadFrame(); f[0] != 10 {
		t.Fatalf("oldest kept frame %d, want 10", f[0])
	}
}
