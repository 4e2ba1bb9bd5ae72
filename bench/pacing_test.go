package bench

import (
	"context"
	"sync"
	"testing"
	"time"
)

// BenchmarkPacers compares two ways to pace 20 ms frames on many calls at
// once, alone and beside a CPU hog: a time.Ticker per call (what the call
// controller's playout does), which drops the ticks a late receiver misses,
// so a stall of the process loses those frames on every call; and an
// absolute schedule per call that, after a stall, sends the frames whose
// time has come back to back (at most 5, then skips ahead), so a stall
// delays audio without losing it. It reports the share of the frames due
// that each pacer sent. Run it alone:
//
//	go test -run '^$' -bench Pacers -benchtime 1x ./bench/
func BenchmarkPacers(b *testing.B) {
	const calls, window = 200, 6 * time.Second
	for _, hog := range []bool{false, true} {
		for _, absolute := range []bool{false, true} {
			name := "ticker"
			if absolute {
				name = "absolute"
			}
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
					sent := pace(calls, window, absolute)
					stop()
					b.ReportMetric(100*float64(sent)/float64(calls*int(window/frame)), "%sent")
				}
			})
		}
	}
}

const frame = 20 * time.Millisecond

// pace runs calls pacers for window and returns the frames they sent.
func pace(calls int, window time.Duration, absolute bool) int {
	end := time.Now().Add(window)
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := 0
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			if absolute {
				next := time.Now().Add(frame)
				t := time.NewTimer(frame)
				defer t.Stop()
				for {
					<-t.C
					now := time.Now() // the channel holds when the timer was due
					if now.After(end) {
						break
					}
					for k := 0; !next.After(now) && k < 5; k++ {
						n++
						next = next.Add(frame)
					}
					if !next.After(now) {
						next = now.Add(frame)
					}
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
