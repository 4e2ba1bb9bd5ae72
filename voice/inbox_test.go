package voice

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// A frame the listener gives back is filled again by the next one heard
// (no new memory per frame), with the new samples; a gap's silence in a
// given-back frame is silence, not the old samples.
func TestInboxReusesGivenBackFrames(t *testing.T) {
	clk := clock.NewMock()
	b := newInbox(clk, 8000, time.Minute)
	ctx := context.Background()
	pcm := func(v int16) []int16 {
		p := make([]int16, 160)
		for i := range p {
			p[i] = v
		}
		return p
	}
	b.hear(pcm(7))
	f1, err := b.read(ctx)
	if err != nil || len(f1) != 160 || f1[0] != 7 || f1[159] != 7 {
		t.Fatalf("first frame %v %v", f1[:1], err)
	}
	b.recycle(f1)
	b.hear(pcm(9))
	f2, err := b.read(ctx)
	if err != nil || len(f2) != 160 || f2[0] != 9 || f2[159] != 9 {
		t.Fatalf("second frame %v %v", f2[:1], err)
	}
	if &f2[0] != &f1[0] {
		t.Error("the second frame did not reuse the given-back one")
	}
	b.recycle(f2)

	// Nothing heard for longer than a frame and the slack: silence.
	got := make(chan []int16)
	go func() {
		f, _ := b.read(ctx)
		got <- f
	}()
	var gap []int16
	for deadline := time.Now().Add(5 * time.Second); gap == nil; {
		clk.Add(10 * time.Millisecond)
		select {
		case gap = <-got:
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no silence frame")
		}
	}
	if len(gap) != 160 {
		t.Fatalf("silence of %d samples", len(gap))
	}
	for i, v := range gap {
		if v != 0 {
			t.Fatalf("silence sample %d is %d", i, v)
		}
	}
	if &gap[0] != &f2[0] {
		t.Error("the silence frame did not reuse the given-back one")
	}
}

// BenchmarkInboxHandOff is a caller frame's way from the transport to a
// waiting listener and back (the benchmark's own hand-back included).
func BenchmarkInboxHandOff(b *testing.B) {
	in := newInbox(clock.New(), 8000, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	took := make(chan struct{})
	go func() {
		for {
			f, err := in.read(ctx)
			if err != nil {
				return
			}
			if f != nil {
				in.recycle(f)
				took <- struct{}{}
			}
		}
	}()
	frame := make([]int16, 160)
	for b.Loop() {
		in.hear(frame)
		<-took
	}
}
