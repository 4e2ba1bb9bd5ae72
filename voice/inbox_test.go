package voice

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// heardSteps records what a listener heard: each frame's first sample, -1
// for news (a nil frame).
type heardSteps struct {
	b     *inbox
	steps []int
	at    []time.Time
}

func (h *heardSteps) step(f []int16, now time.Time) bool {
	v := -1
	if f != nil {
		if len(f) != h.b.samples {
			panic("a frame of the wrong length")
		}
		v = int(f[0])
	}
	h.steps = append(h.steps, v)
	h.at = append(h.at, now)
	return true
}

// heard is what the listener heard so far.
func (h *heardSteps) heard() []int {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	return append([]int(nil), h.steps...)
}

func constant(n int, v int16) []int16 {
	p := make([]int16, n)
	for i := range p {
		p[i] = v
	}
	return p
}

// Caller audio is heard as it arrives, on the goroutine that hears it, in
// 20 ms frames whatever the pieces' lengths; what came before the listener
// started is heard as it starts, at most a second of it (the oldest is
// dropped and counted).
func TestInboxHearsFramesAsTheyArrive(t *testing.T) {
	b := newInbox(clock.NewMock(), 8000, time.Minute)
	h := &heardSteps{b: b}
	for i := range inboxFrames + 2 {
		b.hear(constant(160, int16(i)))
	}
	if got := h.heard(); len(got) != 0 {
		t.Fatalf("heard %v before the listener started", got)
	}
	b.start(h.step, nil)
	got := h.heard()
	if len(got) != inboxFrames || got[0] != 2 || got[inboxFrames-1] != inboxFrames+1 {
		t.Fatalf("heard %d early frames from %v, want the last %d", len(got), got[:1], inboxFrames)
	}
	if b.dropped.Load() != 2 || b.received.Load() != inboxFrames+2 {
		t.Fatalf("dropped %d of %d, want 2", b.dropped.Load(), b.received.Load())
	}

	// A frame and a half, then the other half: two frames, the second
	// made of both pieces.
	piece := append(constant(160, 500), constant(80, 600)...)
	b.hear(piece)
	if got := h.heard(); got[len(got)-1] != 500 || len(got) != inboxFrames+1 {
		t.Fatalf("after a frame and a half: %v", got[inboxFrames:])
	}
	b.hear(constant(80, 700))
	got = h.heard()
	if len(got) != inboxFrames+2 || got[len(got)-1] != 600 {
		t.Fatalf("after the other half: %v", got[inboxFrames:])
	}

	// On hold nothing the caller's side sends is heard.
	b.hold(true)
	b.hear(constant(160, 800))
	if n := len(h.heard()); n != inboxFrames+2 {
		t.Fatalf("heard %d frames on hold", n-inboxFrames-2)
	}
}

// Nothing heard for longer than a frame and the slack: the listen
// goroutine has the listener hear silence, a frame every 20 ms of the
// clock; a frame that arrives again is heard, and news is heard as a nil
// frame.
func TestInboxHearsSilenceInAGapAndNews(t *testing.T) {
	clk := clock.NewMock()
	b := newInbox(clk, 8000, time.Minute)
	h := &heardSteps{b: b}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.start(h.step, nil)
	served := make(chan error, 1)
	go func() { served <- b.serve(ctx, func() bool { return true }) }()
	b.hear(constant(160, 9))

	waitHeard := func(n int) []int {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			if got := h.heard(); len(got) >= n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("heard %v, want %d steps", h.heard(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	clk.Add(FrameDuration + gapSlack - time.Millisecond)
	if got := h.heard(); len(got) != 1 {
		t.Fatalf("heard %v before the gap", got)
	}
	clk.Add(time.Millisecond)
	if got := waitHeard(2); got[1] != 0 {
		t.Fatalf("the gap's first frame is %d, not silence", got[1])
	}
	for i := 3; i <= 5; i++ {
		clk.Add(FrameDuration)
		waitHeard(i)
	}
	b.mu.Lock()
	for i := 2; i < len(h.at); i++ {
		if d := h.at[i].Sub(h.at[1]); d != time.Duration(i-1)*FrameDuration {
			t.Errorf("silence frame %d heard %v after the first", i, d)
		}
	}
	b.mu.Unlock()

	b.hear(constant(160, 11))
	if got := h.heard(); got[len(got)-1] != 11 {
		t.Fatalf("the frame after the gap was not heard: %v", got)
	}
	b.wake()
	if got := waitHeard(7); got[6] != -1 {
		t.Fatalf("news was heard as %d", got[6])
	}
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("serve ended with %v", err)
	}
	b.hear(constant(160, 13))
	if got := h.heard(); len(got) != 7 {
		t.Fatalf("heard %v after the listener stopped", got[7:])
	}
}

// A transport's reader that is behind (SharedReader): a frame missing at
// its time is waited for, not heard as silence, while the reader has not
// read past that time; the late frames are then heard as they come. Once
// the reader is caught up a gap is silence again, and a reader that stays
// behind for readWait gets silence anyway.
func TestInboxWaitsForAReaderBehind(t *testing.T) {
	clk := clock.NewMock()
	b := newInbox(clk, 8000, time.Minute)
	h := &heardSteps{b: b}
	var caught atomic.Bool
	var asked atomic.Int64
	readBy := func(time.Time) bool { asked.Add(1); return caught.Load() }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.start(h.step, readBy)
	go func() { _ = b.serve(ctx, func() bool { return true }) }()

	// advance moves the clock on by d and waits until the listen
	// goroutine asked the reader again or the listener heard more.
	advance := func(d time.Duration) []int {
		t.Helper()
		a, n := asked.Load(), len(h.heard())
		clk.Add(d)
		for deadline := time.Now().Add(10 * time.Second); ; {
			if got := h.heard(); asked.Load() > a || len(got) > n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %v: neither asked the reader nor heard more than %v", d, h.heard())
			}
			time.Sleep(time.Millisecond)
		}
	}

	b.hear(constant(160, 9))
	if got := advance(FrameDuration + gapSlack); len(got) != 1 {
		t.Fatalf("heard %v while the reader was behind", got)
	}
	for range 20 {
		if got := advance(readRecheck); len(got) != 1 {
			t.Fatalf("heard %v while the reader was behind", got)
		}
	}
	// The reader catches up: the late frames, no silence before them.
	for range 3 {
		b.hear(constant(160, 10))
	}
	if got := h.heard(); len(got) != 4 || got[1] != 10 || got[3] != 10 {
		t.Fatalf("heard %v, want the frame then the three late ones", got)
	}

	caught.Store(true)
	if got := advance(FrameDuration + gapSlack); len(got) != 5 || got[4] != 0 {
		t.Fatalf("a gap with the reader caught up: heard %v, want silence last", got)
	}

	// A reader that stays behind: silence after readWait.
	caught.Store(false)
	b.hear(constant(160, 12))
	last := clk.Now()
	got := advance(FrameDuration + gapSlack)
	for len(got) == 6 {
		got = advance(readRecheck)
	}
	if waited := clk.Now().Sub(last) - FrameDuration - gapSlack; waited < readWait || got[6] != 0 {
		t.Fatalf("heard %v %v after the frame's time, want silence after %v", got[6:], waited, readWait)
	}
}

// No caller audio for the media timeout ends serve with ErrMediaTimeout,
// and not while the call is on hold.
func TestInboxMediaTimeout(t *testing.T) {
	clk := clock.NewMock()
	b := newInbox(clk, 8000, time.Second)
	h := &heardSteps{b: b}
	b.start(h.step, nil)
	served := make(chan error, 1)
	go func() { served <- b.serve(context.Background(), func() bool { return true }) }()
	b.hold(true)
	for range 100 {
		clk.Add(FrameDuration)
	}
	select {
	case err := <-served:
		t.Fatalf("serve ended on hold: %v", err)
	default:
	}
	b.hold(false)
	for deadline := time.Now().Add(10 * time.Second); ; {
		clk.Add(FrameDuration)
		select {
		case err := <-served:
			if !errors.Is(err, ErrMediaTimeout) {
				t.Fatalf("serve ended with %v", err)
			}
			if since := clk.Now().Sub(time.Unix(0, b.lastRx.Load())); since < time.Second {
				t.Fatalf("timed out %v after the last audio", since)
			}
			return
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no media timeout")
		}
	}
}

// BenchmarkInboxHear is a caller frame's way from the transport to the
// listener.
func BenchmarkInboxHear(b *testing.B) {
	in := newInbox(clock.New(), 8000, time.Minute)
	n := 0
	in.start(func([]int16, time.Time) bool { n++; return true }, nil)
	frame := make([]int16, 160)
	for b.Loop() {
		in.hear(frame)
	}
	if n == 0 {
		b.Fatal("nothing heard")
	}
}
