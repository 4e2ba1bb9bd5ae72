package wire

import (
	"sync"
	"time"
)

// DefaultKeepAlive is how often a stream carries a keep-alive while nothing
// else is written (config http.streamKeepAlive).
const DefaultKeepAlive = 15 * time.Second

// KeepAlive writes a stream's keep-alives while its turn writes nothing:
// the wait for a slow provider's first token, a tool that runs long. Every
// write of the stream goes through Do, so a keep-alive never lands in the
// middle of an event; a keep-alive goes out when the stream was silent for
// the whole interval.
type KeepAlive struct {
	mu    sync.Mutex
	every time.Duration
	last  time.Time
	ping  func() error
	stop  chan struct{}
	done  chan struct{}
}

// StartKeepAlive calls ping (under the stream's lock) after every interval
// of silence until Stop. every 0 is DefaultKeepAlive; negative sends none.
// A ping error (the client went away) ends the keep-alives; the stream
// records it as its own write error.
func StartKeepAlive(every time.Duration, ping func() error) *KeepAlive {
	if every == 0 {
		every = DefaultKeepAlive
	}
	k := &KeepAlive{every: every, last: time.Now(), ping: ping, stop: make(chan struct{}), done: make(chan struct{})}
	if every < 0 {
		close(k.done)
		return k
	}
	go k.run()
	return k
}

func (k *KeepAlive) run() {
	defer close(k.done)
	t := time.NewTimer(k.every)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-t.C:
		}
		k.mu.Lock()
		wait := k.every - time.Since(k.last)
		var err error
		if wait <= 0 {
			err = k.ping()
			k.last, wait = time.Now(), k.every
		}
		k.mu.Unlock()
		if err != nil {
			return
		}
		t.Reset(wait)
	}
}

// Do runs one write of the stream.
func (k *KeepAlive) Do(write func() error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last = time.Now()
	return write()
}

// Stop ends the keep-alives and waits for one in flight; after it the
// stream is the caller's alone.
func (k *KeepAlive) Stop() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
}
