package roomstest

import (
	"testing"
	"time"
)

// FirstVoicedAfter finds what a scan of every arrival finds: the first
// voiced packet strictly after t, whatever t falls on.
func TestFirstVoicedAfterMatchesAScan(t *testing.T) {
	t0 := time.Now()
	c := &Client{epoch: t0.Add(-time.Second)}
	for i := range 500 {
		// Voiced in talkspurts: 40 packets of every 100; two packets share
		// each arrival time every so often.
		at := t0.Add(time.Duration(i-i/7) * 20 * time.Millisecond)
		c.arrivals = append(c.arrivals, arrival{at: int64(at.Sub(c.epoch)), voiced: i%100 >= 60})
	}
	scan := func(t time.Time) (time.Time, bool) {
		for _, a := range c.Arrivals() {
			if a.Voiced && a.At.After(t) {
				return a.At, true
			}
		}
		return time.Time{}, false
	}
	for ms := -40; ms < 9000; ms += 7 {
		q := t0.Add(time.Duration(ms) * time.Millisecond)
		got, ok := c.FirstVoicedAfter(q)
		want, wok := scan(q)
		if ok != wok || !got.Equal(want) {
			t.Fatalf("after %d ms: %v %v, a scan finds %v %v", ms, got.Sub(t0), ok, want.Sub(t0), wok)
		}
	}
}
