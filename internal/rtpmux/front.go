package rtpmux

import (
	"sync/atomic"
	"time"
)

// Front is how far a socket's reader has got: every packet that arrived
// on the socket before its time has been read and handed on. A reader
// that carries many calls can fall behind (the machine overloaded): a
// call's next packet then waits in the socket behind other calls' while
// its time passes, and must not be taken for a packet that never came.
type Front struct {
	// at is the time in Unix nanoseconds; negative, the reader waits on
	// an empty socket since -at (it has read everything); 0, not known.
	at atomic.Int64
	// short is when the batch being handed on was read, if it did not
	// fill (the socket was empty then); 0 when it filled (the reader's own).
	short int64
}

// ReadBy says whether every packet that arrived by t has been read and
// handed on (true where the reader does not tell).
func (f *Front) ReadBy(t time.Time) bool {
	at := f.at.Load()
	return at <= 0 || at >= t.UnixNano()
}

// handed is the reader's, before each read: the last batch was handed on.
func (f *Front) handed() {
	if f.short != 0 {
		f.at.Store(f.short)
		f.short = 0
	}
}

// empty is the reader's: the socket had nothing to read at now.
func (f *Front) empty(now int64) { f.at.Store(-now) }

// read is the reader's: it read n packets at now, full when the batch
// filled (more may wait).
func (f *Front) read(now int64, full bool) {
	if at := f.at.Load(); at <= 0 {
		// Handing on what came after the wait (or the first batch).
		f.at.Store(max(-at, 1))
	}
	if !full {
		f.short = now
	}
}
