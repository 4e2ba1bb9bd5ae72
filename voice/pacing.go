package voice

import (
	"math"
	"sync/atomic"
	"time"
)

// The pacing histogram: how far the interval between a call's agent
// packets strayed from 20 ms, in 100 µs buckets up to 50 ms (the last
// bucket holds everything beyond). The transports (SIP, the embedded
// browser peer) record into one per server, the figure of their load
// commands and metrics.
const (
	PacingBucket  = 100 * time.Microsecond
	PacingBuckets = 501
)

// Pacing counts packets by pacing error; safe for concurrent use.
type Pacing struct {
	b [PacingBuckets]atomic.Int64
}

// Record counts one packet sent d after the previous one was due.
func (p *Pacing) Record(d time.Duration) {
	if d < 0 {
		d = -d
	}
	p.b[min(int(d/PacingBucket), PacingBuckets-1)].Add(1)
}

// Counts is a snapshot of the histogram.
func (p *Pacing) Counts() PacingCounts {
	var c PacingCounts
	for i := range p.b {
		c[i] = p.b[i].Load()
	}
	return c
}

// PacingCounts is a pacing histogram's snapshot: bucket i holds the
// packets whose error was in [i, i+1) * PacingBucket.
type PacingCounts [PacingBuckets]int64

// Jitter is the p-th percentile (0-100) of the pacing error, to the
// bucket's upper edge; 0 without samples.
func (c PacingCounts) Jitter(p float64) time.Duration {
	return Percentile(c[:], PacingBucket, p)
}

// Between counts the packets whose pacing error fell in [lo, hi), to
// the bucket.
func (c PacingCounts) Between(lo, hi time.Duration) int64 {
	var n int64
	for i, v := range c {
		if at := time.Duration(i) * PacingBucket; at >= lo && at < hi {
			n += v
		}
	}
	return n
}

// N is the number of packets counted.
func (c PacingCounts) N() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// Sub is the difference of two snapshots, for a window of time.
func (c PacingCounts) Sub(earlier PacingCounts) PacingCounts {
	for i := range c {
		c[i] -= earlier[i]
	}
	return c
}

// Percentile is the p-th percentile (0-100) of a histogram of buckets of
// the given width, to the bucket's upper edge; 0 without samples.
func Percentile(buckets []int64, width time.Duration, p float64) time.Duration {
	var total int64
	for _, n := range buckets {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(p / 100 * float64(total)))
	var seen int64
	for i, n := range buckets {
		if seen += n; seen >= rank {
			return time.Duration(i+1) * width
		}
	}
	return time.Duration(len(buckets)) * width
}
