package bench

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/stackbone/box/internal/pace"
)

// BenchmarkPacers compares three ways to pace 20 ms frames on many calls at
// once, alone and beside a CPU hog: a time.Ticker per call, which drops the
// ticks a late receiver misses, so a stall of the process loses those
// frames on every call; an absolute schedule per call (a goroutine and a
// timer each) that, after a stall, sends the frames whose time has come
// back to back (at most 5, then skips ahead), so a stall delays audio
// without losing it; and the same schedule kept by shared pacers (package
// pace, one per processor: what the call controller's playout runs on),
// which wake once for the frames of all calls due within a millisecond.
// It reports the share of the frames due that each sent and the CPU time
// per frame. Run it alone:
//
//	go test -run '^$' -bench Pacers -benchtime 1x ./bench/
func BenchmarkPacers(b *testing.B) {
	const calls, window = 200, 6 * time.Second
	for _, hog := range []bool{false, true} {
		for _, way := range []string{"ticker", "absolute", "shared"} {
			name := way
			if hog {
				name += "/hog"
			}
			b.Run(name, func(b *testing.B) {
				for range b.N {
					stop := func() {}
					if hog {
						var err error
						if stop, err = startHog(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
					cpu0 := processCPU()
					sent := runPacers(way, calls, window)
					cpu := processCPU() - cpu0
					stop()
					b.ReportMetric(100*float64(sent)/float64(calls*int(window/frame)), "%sent")
					if !hog {
						b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(sent, 1)), "cpu-ns/frame")
					}
				}
			})
		}
	}
}

const frame = 20 * time.Millisecond

// runPacers paces calls streams of frames the given way for window and
// returns the frames they sent.
func runPacers(way string, calls int, window time.Duration) int {
	end := time.Now().Add(window)
	if way == "shared" {
		var sent atomic.Int64
		g := pace.NewGroup(runtime.GOMAXPROCS(0), clock.New(), frame, time.Millisecond)
		var wg sync.WaitGroup
		for range calls {
			wg.Add(1)
			g.Add(&countFrames{end: end, sent: &sent, done: wg.Done})
		}
		wg.Wait()
		return int(sent.Load())
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := 0
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			if way == "absolute" {
				next := time.Now().Add(frame)
				t := time.NewTimer(frame)
				defer t.Stop()
				for {
					<-t.C
					now := time.Now() // the channel holds when the timer was due
					if now.After(end) {
						break
					}
					var due int
					due, next = pace.Due(next, now, frame)
					n += due
					t.Reset(time.Until(next))
				}
			} else {
				t := time.NewTicker(frame)
				defer t.Stop()
				for range t.C {
					if time.Now().After(end) {
						break
					}
					n++
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}

// countFrames is a stream of the shared pacers that counts its frames until
// end.
type countFrames struct {
	end  time.Time
	sent *atomic.Int64
	done func()
}

func (c *countFrames) Frame() bool {
	if time.Now().After(c.end) {
		c.done()
		return false
	}
	c.sent.Add(1)
	return true
}
