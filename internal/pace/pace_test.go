package pace

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/stackbone/box/internal/poll"
)

const ms = time.Millisecond

// stream records the (mock) time of each frame it played.
type stream struct {
	clk   *clock.Mock
	mu    sync.Mutex
	at    []time.Duration
	last  int  // frames to play before it ends (0: no end)
	start bool // what Start answers
}

func (s *stream) Frame() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Duration(s.clk.Now().UnixNano()))
	return s.last == 0 || len(s.at) < s.last
}

func (s *stream) played() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

type starter struct{ *stream }

func (s starter) Start() bool { return s.start }

// grid is the times from first every 20 ms up to end.
func grid(first, end time.Duration) []time.Duration {
	var out []time.Duration
	for t := first; t <= end; t += 20 * ms {
		out = append(out, t)
	}
	return out
}

// Each stream plays on its own 20 ms schedule from when it joined; a frame
// due within early of another's goes out with it, and keeps that place.
func TestStreamsPlayOnTheirOwnSchedules(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Unix(0, 0))
	p := New(clk, 20*ms, ms)
	a, b, c := &stream{clk: clk}, &stream{clk: clk}, &stream{clk: clk}
	_, stopA := p.Add(a)
	clk.Add(3 * ms)
	p.Add(b)
	clk.Add(ms / 2)
	p.Add(c) // due at 23.5 ms: within early of b's 23 ms
	const end = 200 * ms
	for now := 3*ms + ms/2; now < end; {
		step := ms / 2
		clk.Add(step)
		now += step
		want := len(grid(20*ms, now)) + 2*len(grid(23*ms, now))
		poll.Until(t, "the frames due by "+now.String(), 5*time.Second, func() bool {
			return len(a.played())+len(b.played())+len(c.played()) == want
		})
	}
	if got, want := a.played(), grid(20*ms, end); !slices.Equal(got, want) {
		t.Errorf("a played at %v, want %v", got, want)
	}
	for _, s := range []*stream{b, c} {
		if got, want := s.played(), grid(23*ms, end); !slices.Equal(got, want) {
			t.Errorf("played at %v, want %v", got, want)
		}
	}
	stopA()
	clk.Add(40 * ms)
	poll.Until(t, "b's frames after a stopped", 5*time.Second, func() bool { return len(b.played()) == len(grid(23*ms, end+40*ms)) })
	if n := len(a.played()); n != len(grid(20*ms, end)) {
		t.Errorf("a played %d frames after it was stopped", n-len(grid(20*ms, end)))
	}
}

// A woken Starter plays at once and its schedule continues from then; one
// whose Start declines stays on its schedule; a stream whose Frame says it
// ended is not played again, and the pacer's goroutine ends with its last
// stream.
func TestWakeStartsAStreamAtOnce(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Unix(0, 0))
	p := New(clk, 20*ms, ms)
	s := starter{&stream{clk: clk, start: true}}
	d := starter{&stream{clk: clk, start: false}}
	wake, _ := p.Add(s)
	wakeD, _ := p.Add(d)
	clk.Add(10 * ms)
	wake()
	wakeD()
	poll.Until(t, "the started frame", 5*time.Second, func() bool { return len(s.played()) == 1 })
	for range 10 {
		clk.Add(5 * ms)
	}
	poll.Until(t, "the frames up to 60 ms", 5*time.Second, func() bool {
		return len(s.played()) == 3 && len(d.played()) == 3
	})
	if got, want := s.played(), []time.Duration{10 * ms, 30 * ms, 50 * ms}; !slices.Equal(got, want) {
		t.Errorf("started stream played at %v, want %v", got, want)
	}
	if got, want := d.played(), []time.Duration{20 * ms, 40 * ms, 60 * ms}; !slices.Equal(got, want) {
		t.Errorf("declining stream played at %v, want %v", got, want)
	}
	s.mu.Lock()
	s.last = 4
	s.mu.Unlock()
	d.mu.Lock()
	d.last = 4
	d.mu.Unlock()
	for range 10 {
		clk.Add(5 * ms)
	}
	poll.Until(t, "the pacer to stop with its last stream", 5*time.Second, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !p.running
	})
	if len(s.played()) != 4 || len(d.played()) != 4 {
		t.Errorf("ended streams played %d and %d frames, want 4 each", len(s.played()), len(d.played()))
	}
}

// A stall of the process does not lose frames: the frames that came due
// go out at once, up to a bound, and after a longer stall the schedule
// skips ahead instead of bursting.
func TestDueCatchesUpAfterAStall(t *testing.T) {
	const frame = 20 * ms
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		late     time.Duration
		due      int
		nextFrom time.Duration // the next frame's time after t0
	}{
		{late: 0, due: 1, nextFrom: frame},                                  // on time
		{late: -5 * ms, due: 0, nextFrom: 0},                                // woken early
		{late: 4*frame + 3*ms, due: 5, nextFrom: 5 * frame},                 // 83 ms stall: all five, same grid
		{late: time.Second, due: MaxCatchUp, nextFrom: time.Second + frame}, // 1 s stall: five, then from now
	} {
		due, next := Due(t0, t0.Add(tc.late), frame)
		if due != tc.due || !next.Equal(t0.Add(tc.nextFrom)) {
			t.Errorf("%s late: %d due, next at +%s; want %d, +%s", tc.late, due, next.Sub(t0), tc.due, tc.nextFrom)
		}
	}
}

// batch records, at each flush, how many frames were written into it
// since the last.
type batch struct {
	mu      sync.Mutex
	pending int
	flushes []int
}

func (b *batch) Flush() {
	b.mu.Lock()
	b.flushes = append(b.flushes, b.pending)
	b.pending = 0
	b.mu.Unlock()
}

func (b *batch) rounds() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.flushes)
}

type batched struct {
	*stream
	b *batch
}

func (s batched) Frame() bool {
	s.b.mu.Lock()
	s.b.pending++
	s.b.mu.Unlock()
	return s.stream.Frame()
}

func (s batched) Batch() Flusher { return s.b }

// Streams due together that write into one batch flush it once, after
// all their frames of the round; a stream due later flushes it again.
func TestARoundFlushesEachBatchOnceAfterItsFrames(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Unix(0, 0))
	p := New(clk, 20*ms, ms)
	b := &batch{}
	for range 3 {
		p.Add(batched{stream: &stream{clk: clk}, b: b})
	}
	clk.Add(5 * ms)
	late := batched{stream: &stream{clk: clk}, b: b}
	p.Add(late) // due at 25 ms: a round of its own
	clk.Add(15 * ms)
	poll.Until(t, "the first round's flush", 5*time.Second, func() bool { return len(b.rounds()) == 1 })
	clk.Add(5 * ms)
	poll.Until(t, "the late stream's flush", 5*time.Second, func() bool { return len(b.rounds()) == 2 })
	if got := b.rounds(); !slices.Equal(got, []int{3, 1}) {
		t.Fatalf("flushes carried %v frames, want [3 1]", got)
	}
}

// The schedule stays a heap with every entry knowing its place through
// pushes, moves and removals anywhere in it, and gives its entries back
// in time order.
func TestScheduleKeepsItsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Now()
	at := func() time.Time { return base.Add(time.Duration(rng.IntN(1000)) * time.Microsecond) }
	var h schedule
	var all []*entry
	check := func(step int) {
		for i, e := range h {
			if e.i != i {
				t.Fatalf("step %d: entry at %d says %d", step, i, e.i)
			}
			if i > 0 && h.less(i, (i-1)/2) {
				t.Fatalf("step %d: entry %d is due before its parent", step, i)
			}
		}
	}
	for step := range 5000 {
		switch op := rng.IntN(4); {
		case op < 2 || len(h) == 0:
			e := &entry{next: at()}
			h.push(e)
			all = append(all, e)
		case op == 2:
			e := h[rng.IntN(len(h))]
			e.next = at()
			h.fix(e.i)
		default:
			e := h[rng.IntN(len(h))]
			h.remove(e.i)
			if e.i != -1 {
				t.Fatalf("step %d: a removed entry says %d", step, e.i)
			}
		}
		check(step)
	}
	var last time.Time
	for len(h) > 0 {
		e := h[0]
		if e.next.Before(last) {
			t.Fatal("entries out of time order")
		}
		last = e.next
		h.remove(0)
		check(-1)
	}
}
