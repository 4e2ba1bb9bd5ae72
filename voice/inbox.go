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

// readWait is how long past its time a frame is waited for while the
// transport's reader is behind (SharedReader) before the call hears
// silence anyway; readRecheck is how often the reader is asked meanwhile.
const (
	readWait    = time.Second
	readRecheck = 10 * time.Millisecond
)

// inboxFrames is how many caller frames may wait (1 s) for the listener to
// start (its live transcription stream opening) before the oldest is
// dropped.
const inboxFrames = 50

// inbox is the caller's audio on its way from the transport to the call's
// listener, the one way in of every transport: decoded PCM of any length
// (Call.Hear) cut into 20 ms frames, each heard by the listener on the
// transport's own goroutine as it arrives (no hand-off per frame); silence
// for gaps and the news of a transcript are heard on the call's listen
// goroutine (serve), which also hands ended utterances to the turns and
// ends the call on the media timeout. The listener's steps take turns
// under mu.
type inbox struct {
	clock   Clock
	samples int // per frame
	timeout time.Duration

	lastRx   atomic.Int64 // clock unix nanos of the last caller audio (or the start)
	held     atomic.Bool
	received atomic.Int64 // caller frames heard
	dropped  atomic.Int64 // caller frames dropped before the listener started

	woken atomic.Bool   // news for the listener (wake)
	fired atomic.Bool   // the gap timer fired
	kick  chan struct{} // the listen goroutine has something to do

	mu      sync.Mutex
	rest    []int16   // a piece shorter than a frame, for the next
	early   [][]int16 // frames heard before the listener started
	step    func(frame []int16, now time.Time) bool
	readBy  func(t time.Time) bool // SharedReader's, nil: frames are heard as they arrive
	stopped bool                   // the listener stopped: what comes is not heard
	quiet   []int16
	due     time.Time // when a gap's silence is heard, without a frame before
	timer   *clock.Timer
	fireAt  time.Time // when timer fires, while armed
	armed   bool
}

// rearmWithin is how near its firing the gap timer is moved on to the
// frame clock's next due time. A frame every 20 ms moves it on about one
// frame in three rather than stopping and starting it on every frame, and
// it fires only when the caller's frames are late.
const rearmWithin = 30 * time.Millisecond

func newInbox(clk Clock, rate int, timeout time.Duration) *inbox {
	b := &inbox{clock: clk, samples: rate * int(FrameDuration/time.Millisecond) / 1000, timeout: timeout,
		kick: make(chan struct{}, 1)}
	b.quiet = make([]int16, b.samples)
	b.touch()
	return b
}

// hear cuts pcm into frames and has the listener hear each; on hold the
// caller's side may play music, which is not the caller speaking, so it is
// not heard. The listener copies what it keeps of a frame.
func (b *inbox) hear(pcm []int16) {
	now := b.clock.Now()
	b.lastRx.Store(now.UnixNano())
	if b.held.Load() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.rest) > 0 {
		n := min(b.samples-len(b.rest), len(pcm))
		b.rest, pcm = append(b.rest, pcm[:n]...), pcm[n:]
		if len(b.rest) < b.samples {
			return
		}
		b.frame(b.rest, now)
		b.rest = b.rest[:0]
	}
	for len(pcm) >= b.samples {
		b.frame(pcm[:b.samples], now)
		pcm = pcm[b.samples:]
	}
	b.rest = append(b.rest, pcm...)
}

// frame has the listener hear one caller frame that arrived at now (under
// b.mu), or keeps it until the listener starts.
func (b *inbox) frame(f []int16, now time.Time) {
	b.received.Add(1)
	switch {
	case b.stopped:
	case b.step == nil:
		if len(b.early) == inboxFrames {
			b.early = b.early[1:]
			b.dropped.Add(1)
		}
		b.early = append(b.early, append([]int16(nil), f...))
	default:
		b.due = now.Add(FrameDuration + gapSlack)
		b.hand(f, now)
		b.arm(now)
	}
}

// hand gives the listener a frame (nil: news only); a listener that says
// the call ended hears nothing more (under b.mu).
func (b *inbox) hand(f []int16, now time.Time) {
	if !b.step(f, now) {
		b.stopLocked()
		b.poke()
	}
}

// start gives the listener its step and has it hear what came before
// (under nothing: it takes b.mu); readBy, when not nil, is the
// transport's reader's (SharedReader).
func (b *inbox) start(step func(frame []int16, now time.Time) bool, readBy func(time.Time) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return
	}
	b.step, b.readBy = step, readBy
	now := b.clock.Now()
	b.due = now.Add(FrameDuration + gapSlack)
	for _, f := range b.early {
		if b.stopped {
			break
		}
		b.hand(f, now)
	}
	b.early = nil
	if !b.stopped {
		b.arm(now)
	}
}

// poke makes the listen goroutine look at its news; it never blocks.
func (b *inbox) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// wake tells the listener there is news (a transcript arrived): it looks
// at the endpoint again, on the listen goroutine. It never blocks.
func (b *inbox) wake() {
	b.woken.Store(true)
	b.poke()
}

// gap is the gap timer's function.
func (b *inbox) gap() {
	b.fired.Store(true)
	b.poke()
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

// serve is the listen goroutine's side until ctx ends, the listener says
// the call ended, or no caller audio came for the media timeout (not while
// on hold: ErrMediaTimeout): it has the listener hear the news (a nil
// frame) and a gap's silence, a frame every 20 ms, and calls handOff with
// what the listener queued (outside b.mu, so handOff may block).
func (b *inbox) serve(ctx context.Context, handOff func() bool) error {
	stopCtx := context.AfterFunc(ctx, b.poke)
	defer stopCtx()
	defer b.stop()
	for {
		select {
		case <-b.kick:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.news(); err != nil {
			return err
		}
		if !handOff() {
			return context.Canceled
		}
		b.mu.Lock()
		stopped := b.stopped
		b.mu.Unlock()
		if stopped {
			return context.Canceled
		}
	}
}

// news has the listener hear what the listen goroutine was poked for.
func (b *inbox) news() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.step == nil {
		return nil
	}
	now := b.clock.Now()
	if b.woken.Swap(false) {
		b.hand(nil, now)
	}
	if b.fired.Swap(false) {
		b.armed = false
	}
	for !b.stopped && !b.due.After(now) {
		if b.timeout > 0 && !b.held.Load() && now.Sub(time.Unix(0, b.lastRx.Load())) >= b.timeout {
			b.stopLocked()
			return ErrMediaTimeout
		}
		if b.readBy != nil && now.Sub(b.due) < readWait && !b.readBy(b.due) {
			// The reader is behind: the frame may wait in its socket.
			b.armAt(now, now.Add(readRecheck))
			return nil
		}
		// A gap: silence on the frame clock. Far behind it (the listen
		// goroutine was late), the clock restarts rather than a burst of
		// silence being heard.
		if now.Sub(b.due) > gapSlack {
			b.due = now
		}
		b.due = b.due.Add(FrameDuration)
		clear(b.quiet)
		b.hand(b.quiet, now)
	}
	if !b.stopped {
		b.arm(now)
	}
	return nil
}

// stop lets go of the listener and the gap timer: nothing more is heard.
func (b *inbox) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopLocked()
}

func (b *inbox) stopLocked() {
	b.stopped, b.step, b.early = true, nil, nil
	if b.timer != nil {
		b.timer.Stop()
	}
	b.armed = false
}

// arm makes the gap timer fire by b.due (under b.mu).
func (b *inbox) arm(now time.Time) { b.armAt(now, b.due) }

// armAt makes the gap timer fire by at (under b.mu): it is left as it is
// while it fires no later than that and not within rearmWithin of now.
func (b *inbox) armAt(now, at time.Time) {
	wait := at.Sub(now)
	switch {
	case b.timer == nil:
		b.timer = b.clock.AfterFunc(wait, b.gap)
	case b.armed && !b.fireAt.After(at) && b.fireAt.Sub(now) > rearmWithin:
		return
	default:
		b.timer.Reset(wait)
	}
	b.fireAt, b.armed = at, true
}
