package voice

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// gapSlack is how late a caller frame may be before the call hears silence
// in its place: packets jitter by a few ms on loopback and by tens on a
// real network, and Opus DTX or SIP silence suppression send nothing at all
// during silence, but the VAD counts frames, so silence must keep flowing.
const gapSlack = 60 * time.Millisecond

// inboxFrames is how far the listener may fall behind (1 s) before the
// oldest caller frame is dropped rather than blocking the transport.
const inboxFrames = 50

// inbox is the caller's audio on its way from the transport to the call's
// listener, the one frame queue of every transport: decoded PCM of any
// length in (Call.Hear), 20 ms frames out at the pace they arrive, silence
// for gaps, and the media timeout. One goroutine hears, one reads.
type inbox struct {
	clock   Clock
	samples int // per frame
	timeout time.Duration

	mu   sync.Mutex // the hearing side
	rest []int16

	frames   chan []int16
	spare    chan []int16 // frames the listener is done with, for hear to fill again
	lastRx   atomic.Int64 // clock unix nanos of the last caller audio (or the start)
	held     atomic.Bool
	received atomic.Int64 // caller frames heard
	dropped  atomic.Int64 // caller frames dropped because the listener lagged

	woken atomic.Bool // news for the reader (wake)
	fired atomic.Bool // the gap timer fired

	// The reading side.
	due     time.Time
	timer   *clock.Timer
	fireAt  time.Time // when timer fires, while armed
	armed   bool
	stopCtx func() bool // the ctx watch of read's context
}

// rearmWithin is how near its firing the gap timer is moved on to the
// frame clock's next due time. A frame every 20 ms moves it on about one
// frame in three rather than stopping and starting it on every frame, and
// it fires only when the caller's frames are late.
const rearmWithin = 30 * time.Millisecond

func newInbox(clk Clock, rate int, timeout time.Duration) *inbox {
	b := &inbox{clock: clk, samples: rate * int(FrameDuration/time.Millisecond) / 1000, timeout: timeout,
		frames: make(chan []int16, inboxFrames), spare: make(chan []int16, inboxSpare)}
	b.touch()
	return b
}

// hear cuts pcm into frames for the listener; on hold the caller's side
// may play music, which is not the caller speaking, so it is not heard.
func (b *inbox) hear(pcm []int16) {
	b.touch()
	if b.held.Load() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Each frame is a slice the listener owns until it gives it back
	// (recycle); a piece shorter than a frame waits in rest (whose buffer
	// is kept) for the next.
	if len(b.rest) > 0 {
		n := min(b.samples-len(b.rest), len(pcm))
		b.rest, pcm = append(b.rest, pcm[:n]...), pcm[n:]
		if len(b.rest) < b.samples {
			return
		}
		b.send(append(b.frame(), b.rest...))
		b.rest = b.rest[:0]
	}
	for len(pcm) >= b.samples {
		b.send(append(b.frame(), pcm[:b.samples]...))
		pcm = pcm[b.samples:]
	}
	b.rest = append(b.rest, pcm...)
}

// inboxSpare is how many frames the listener's given-back frames may
// number: a frame is filled, queued, read and given back within a frame's
// time unless the listener lags.
const inboxSpare = 4

// frame is an empty frame to fill: a given-back one, else a new one.
func (b *inbox) frame() []int16 {
	select {
	case f := <-b.spare:
		return f[:0]
	default:
		return make([]int16, 0, b.samples)
	}
}

// recycle gives back a frame read returned once nothing holds it any more
// (the VAD copies what it keeps).
func (b *inbox) recycle(f []int16) {
	if cap(f) < b.samples {
		return
	}
	select {
	case b.spare <- f:
	default:
	}
}

// send queues a frame for the listener, dropping the oldest when it lags
// a whole queue behind (under b.mu).
func (b *inbox) send(f []int16) {
	b.received.Add(1)
	for {
		select {
		case b.frames <- f:
			return
		default:
			select {
			case old := <-b.frames:
				if old != nil {
					b.dropped.Add(1)
					b.recycle(old)
				}
			default:
			}
		}
	}
}

// nudge makes the reader look again: a nil frame on the queue, so it
// waits on the queue alone (a receive is cheaper than a select on the
// queue, its context, its news and its timer, 50 times a second). A full
// queue wakes the reader anyway.
func (b *inbox) nudge() {
	select {
	case b.frames <- nil:
	default:
	}
}

// wake tells the reader there is news (a transcript arrived): its read
// returns a nil frame. It never blocks.
func (b *inbox) wake() {
	b.woken.Store(true)
	b.nudge()
}

// gap is the gap timer's function.
func (b *inbox) gap() {
	b.fired.Store(true)
	b.nudge()
}

// touch records that the caller's transport is alive without audio (DTX
// keep-alives, RTCP, comfort noise).
func (b *inbox) touch() { b.lastRx.Store(b.clock.Now().UnixNano()) }

// hold suspends the media timeout and what the caller's side sends; the
// timeout counts again from the moment media should flow again.
func (b *inbox) hold(on bool) {
	if !on {
		b.touch()
	}
	b.held.Store(on)
}

// read returns the next 20 ms frame: the caller's, or silence when the
// caller's is later than gapSlack. It returns ErrMediaTimeout when nothing
// arrived for the media timeout (not while on hold) and ctx's error once
// ctx ended (ctx is the same on every read). News (wake) returns a nil
// frame and no error at once, so the reader can act on it between frames.
func (b *inbox) read(ctx context.Context) ([]int16, error) {
	if b.stopCtx == nil {
		b.stopCtx = context.AfterFunc(ctx, b.nudge)
	}
	for {
		if err := ctx.Err(); err != nil {
			b.stop()
			return nil, err
		}
		if b.woken.Swap(false) {
			return nil, nil
		}
		select {
		case f := <-b.frames:
			if f == nil {
				continue // a nudge: look again
			}
			b.due = b.clock.Now().Add(FrameDuration + gapSlack)
			return f, nil
		default:
		}
		now := b.clock.Now()
		if b.timeout > 0 && !b.held.Load() && now.Sub(time.Unix(0, b.lastRx.Load())) >= b.timeout {
			return nil, ErrMediaTimeout
		}
		if b.due.IsZero() {
			b.due = now.Add(FrameDuration + gapSlack)
		}
		wait := b.due.Sub(now)
		if wait <= 0 {
			// Far behind the frame clock (the reader was busy): restart it
			// rather than returning a burst of silence.
			if wait < -gapSlack {
				b.due = now
			}
			b.due = b.due.Add(FrameDuration)
			f := b.frame()[:b.samples]
			clear(f)
			return f, nil
		}
		b.arm(now)
		if f := <-b.frames; f != nil {
			b.due = b.clock.Now().Add(FrameDuration + gapSlack)
			return f, nil
		}
		// A nudge: the context ended, news, or the gap timer (a gap, or
		// set for an earlier due time): loop to look at each.
	}
}

// stop lets go of the gap timer and the context's watch.
func (b *inbox) stop() {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.armed = false
	if b.stopCtx != nil {
		b.stopCtx()
	}
}

// arm makes the gap timer fire by b.due: it is left as it is while it
// fires no later than that and not within rearmWithin of now.
func (b *inbox) arm(now time.Time) {
	if b.fired.Swap(false) {
		b.armed = false
	}
	wait := b.due.Sub(now)
	switch {
	case b.timer == nil:
		b.timer = b.clock.AfterFunc(wait, b.gap)
	case b.armed && !b.fireAt.After(b.due) && b.fireAt.Sub(now) > rearmWithin:
		return
	default:
		b.timer.Reset(wait)
	}
	b.fireAt, b.armed = b.due, true
}
