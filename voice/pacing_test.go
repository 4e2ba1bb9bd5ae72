package voice

import (
	"testing"
	"time"
)

// Packets are counted by how far off their time they went, either way,
// and Between counts those in a range to the bucket.
func TestPacingCountsByRange(t *testing.T) {
	var p Pacing
	for _, d := range []time.Duration{0, 300 * time.Microsecond, -6 * time.Millisecond, 7 * time.Millisecond,
		20 * time.Millisecond, -20 * time.Millisecond, 45 * time.Millisecond, time.Second} {
		p.Record(d)
	}
	c := p.Counts()
	if c.N() != 8 {
		t.Fatalf("counted %d packets, want 8", c.N())
	}
	for _, r := range []struct {
		lo, hi time.Duration
		want   int64
	}{
		{0, 5 * time.Millisecond, 2},
		{5 * time.Millisecond, 10 * time.Millisecond, 2},
		{19800 * time.Microsecond, 20200 * time.Microsecond, 2},
		{40 * time.Millisecond, time.Hour, 2},
	} {
		if got := c.Between(r.lo, r.hi); got != r.want {
			t.Errorf("between %v and %v: %d, want %d", r.lo, r.hi, got, r.want)
		}
	}
	if got := c.Jitter(50); got != 7100*time.Microsecond {
		t.Errorf("median %v, want 7.1 ms (the bucket's upper edge)", got)
	}
}
