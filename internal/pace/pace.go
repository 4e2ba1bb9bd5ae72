// Package pace plays many real-time media streams from one goroutine, each
// on its own fixed schedule of frames (20 ms of audio, say).
//
// One goroutine per stream, each waking for each of its frames, costs a
// wake-up of the scheduler per frame (50 a second per call) and spreads
// the packets so thinly that each send may have to wake an idle processor
// of its own. A Pacer instead wakes for all its streams' frames due within
// Early of each other and writes them back to back. A stream keeps its
// place among the others, so its frames still go out a period apart.
//
// After a stall (the process descheduled, a busy machine) the frames that
// came due go out back to back, up to MaxCatchUp, so a stall delays a
// stream instead of dropping frames; beyond that its schedule skips ahead.
// A stream can also be started at once, off its schedule (a talkspurt
// whose first audio just became playable), and its schedule continues
// from there.
package pace

import (
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// MaxCatchUp is how many overdue frames of a stream play back to back
// after a stall.
const MaxCatchUp = 5

// Stream is what a Pacer plays.
type Stream interface {
	// Frame writes the stream's next frame; false takes the stream off
	// the schedule (it ended). It runs on the pacer's goroutine and must
	// not block for long: every stream of the pacer waits for it.
	Frame() bool
}

// Starter is a Stream that can be started off its schedule: after the
// stream's wake func was called, Start runs on the pacer's goroutine and
// says whether a frame goes out now, the schedule continuing from now.
type Starter interface {
	Start() bool
}

// Flusher sends what was written into it since its last Flush.
type Flusher interface{ Flush() }

// Batched is a Stream whose frames are queued in a batch (Batch, nil when
// they are not) that goes out once the pacer's round ends: the frames of
// all streams due together leave in one system call.
type Batched interface {
	Batch() Flusher
}

// Pacer plays its streams from one goroutine, which runs while it has
// streams; it is safe for concurrent use.
type Pacer struct {
	clk           clock.Clock
	period, early time.Duration
	kick          chan struct{}

	// mu guards the schedule and is held while a round plays, so a
	// stream taken off it is not played again once its stop returns.
	mu      sync.Mutex
	streams schedule
	running bool

	wmu   sync.Mutex
	woken []*entry // streams to start (their wake was called)

	batches []Flusher // of the round playing (under mu)
}

type entry struct {
	s     Stream
	next  time.Time // when its next frame is due
	i     int       // in the schedule; -1 once off it
	woken bool      // in Pacer.woken (under wmu)
}

// New returns a Pacer of frames every period; a frame may go out up to
// early before it is due, with others due then.
func New(clk clock.Clock, period, early time.Duration) *Pacer {
	return &Pacer{clk: clk, period: period, early: early, kick: make(chan struct{}, 1)}
}

// Add puts s on the schedule, its first frame due one period from now.
// wake asks for s to be started off its schedule (see Starter; it never
// blocks); after stop returns, s is not played again.
func (p *Pacer) Add(s Stream) (wake, stop func()) {
	e := &entry{s: s, next: p.clk.Now().Add(p.period)}
	p.mu.Lock()
	p.streams.push(e)
	if !p.running {
		p.running = true
		go p.run()
	}
	p.mu.Unlock()
	p.signal()
	wake = func() {
		p.wmu.Lock()
		if !e.woken {
			e.woken = true
			p.woken = append(p.woken, e)
		}
		p.wmu.Unlock()
		p.signal()
	}
	stop = func() {
		p.mu.Lock()
		if e.i >= 0 {
			p.streams.remove(e.i)
		}
		p.mu.Unlock()
	}
	return wake, stop
}

func (p *Pacer) signal() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run plays rounds until no stream is left.
func (p *Pacer) run() {
	timer := p.clk.Timer(p.period)
	defer timer.Stop()
	for {
		p.mu.Lock()
		if len(p.streams) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.start(p.clk.Now())
		p.due(p.clk.Now())
		p.flush()
		var wait time.Duration
		if len(p.streams) > 0 {
			wait = p.streams[0].next.Sub(p.clk.Now())
		}
		p.mu.Unlock()
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-p.kick:
			}
		}
	}
}

// start (under mu) starts the woken streams that have a frame to start.
func (p *Pacer) start(now time.Time) {
	p.wmu.Lock()
	woken := p.woken
	p.woken = nil
	for _, e := range woken {
		e.woken = false
	}
	p.wmu.Unlock()
	for _, e := range woken {
		st, ok := e.s.(Starter)
		if e.i < 0 || !ok || !st.Start() {
			continue
		}
		// The schedule is set before the frame goes out, so it counts
		// from the time the frame was due, not from after the write.
		e.next = now.Add(p.period)
		if p.frame(e.s) {
			p.streams.fix(e.i)
		} else {
			p.streams.remove(e.i)
		}
	}
}

// due (under mu) plays every frame due by now+early.
func (p *Pacer) due(now time.Time) {
	horizon := now.Add(p.early)
	for len(p.streams) > 0 && !p.streams[0].next.After(horizon) {
		e := p.streams[0]
		var n int
		n, e.next = Due(e.next, horizon, p.period)
		ok := true
		for range n {
			if ok = p.frame(e.s); !ok {
				break
			}
		}
		if ok {
			p.streams.fix(0)
		} else {
			p.streams.remove(0)
		}
	}
}

// frame (under mu) plays one frame of s, noting its batch.
func (p *Pacer) frame(s Stream) bool {
	ok := s.Frame()
	if b, is := s.(Batched); is {
		if f := b.Batch(); f != nil && !slices.Contains(p.batches, f) {
			p.batches = append(p.batches, f)
		}
	}
	return ok
}

// flush (under mu) sends the batches the round wrote into.
func (p *Pacer) flush() {
	for i, f := range p.batches {
		f.Flush()
		p.batches[i] = nil
	}
	p.batches = p.batches[:0]
}

// Due says how many frames are due at now when the next one was due at
// next (at most MaxCatchUp), and when the following one is due: on the
// same grid of period, or a period from now when the stall was longer
// than the catch-up.
func Due(next, now time.Time, period time.Duration) (int, time.Time) {
	n := 0
	for !next.After(now) && n < MaxCatchUp {
		n++
		next = next.Add(period)
	}
	if !next.After(now) {
		next = now.Add(period)
	}
	return n, next
}

// schedule orders a pacer's streams by when their next frame is due: a
// binary heap on the entries themselves (container/heap's interface calls
// were a percent of a loaded box, as every frame moves its stream down).
type schedule []*entry

func (h schedule) less(i, j int) bool { return h[i].next.Before(h[j].next) }

func (h schedule) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}

func (h *schedule) push(e *entry) {
	e.i = len(*h)
	*h = append(*h, e)
	h.up(e.i)
}

// fix restores the order after entry i's time changed.
func (h schedule) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

// remove takes entry i off the schedule.
func (h *schedule) remove(i int) {
	old := *h
	n := len(old) - 1
	e := old[i]
	if i != n {
		old.swap(i, n)
	}
	old[n] = nil
	*h = old[:n]
	if i != n {
		h.fix(i)
	}
	e.i = -1
}

func (h schedule) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves entry i down to its place; false when it stayed.
func (h schedule) down(i int) bool {
	i0, n := i, len(h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > i0
}

// Group is a set of pacers that spreads streams over them in turn: one per
// processor, say, so one stream's slow write holds up only its pacer's.
type Group struct {
	pacers []*Pacer
	mu     sync.Mutex
	n      int
}

// NewGroup returns n pacers (at least one) as New makes them.
func NewGroup(n int, clk clock.Clock, period, early time.Duration) *Group {
	g := &Group{pacers: make([]*Pacer, max(n, 1))}
	for i := range g.pacers {
		g.pacers[i] = New(clk, period, early)
	}
	return g
}

// Add adds s to the next pacer of the group (see Pacer.Add).
func (g *Group) Add(s Stream) (wake, stop func()) {
	g.mu.Lock()
	p := g.pacers[g.n%len(g.pacers)]
	g.n++
	g.mu.Unlock()
	return p.Add(s)
}
