package rtpmux

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Sender queues packets for many peers on one IPv4 UDP socket and sends
// them in batches, as many as one system call takes (sendmmsg on Linux):
// at Flush (the end of a pacer's round), when a batch fills, or at the
// latest backstop after the first packet queued. The mux's sockets send
// through one each; so do the browser calls' shared port (package rooms).
type Sender struct {
	io batchIO

	// Writers fill one batch under mu while the other goes out under
	// sendMu, so queueing a packet never waits for a system call (a
	// sendmmsg can take milliseconds on a loaded machine).
	mu      sync.Mutex
	batches [2]*outBatch
	cur     int  // the batch being filled (under mu)
	armed   bool // the backstop timer is set (under mu)
	timer   *time.Timer
	sendMu  sync.Mutex
	pending atomic.Int32 // packets in the batch being filled

	sent, sendCalls, failures atomic.Int64
}

// NewSender sends in batches on conn, an IPv4 socket.
func NewSender(conn *net.UDPConn) (*Sender, error) {
	bio, err := newBatchIO(conn)
	if err != nil {
		return nil, err
	}
	s := &Sender{io: bio}
	for i := range s.batches {
		s.batches[i] = newOutBatch()
	}
	s.timer = time.AfterFunc(time.Hour, s.Flush)
	s.timer.Stop()
	return s, nil
}

// SenderStats counts what a Sender sent.
type SenderStats struct {
	Sent, SendCalls, Failures int64
}

// Stats counts the packets sent, the system calls that sent them and the
// packets that could not go, so far.
func (s *Sender) Stats() SenderStats {
	return SenderStats{Sent: s.sent.Load(), SendCalls: s.sendCalls.Load(), Failures: s.failures.Load()}
}

// Queue copies b (at most 1,500 bytes) into the next slot, for to (an
// IPv4 address); a full batch goes out at once.
func (s *Sender) Queue(b []byte, to netip.AddrPort) error {
	if len(b) > slot {
		return fmt.Errorf("rtpmux: a %d-byte packet is over %d", len(b), slot)
	}
	if !to.Addr().Unmap().Is4() {
		return fmt.Errorf("rtpmux: %v is not an IPv4 address", to)
	}
	s.mu.Lock()
	for s.batches[s.cur].len() == batch {
		// Full: send it here, after the send in progress if any.
		s.mu.Unlock()
		s.sendMu.Lock()
		s.mu.Lock()
		full := s.batches[s.cur].len() == batch
		s.mu.Unlock()
		if full {
			s.send()
		}
		s.sendMu.Unlock()
		s.mu.Lock()
	}
	s.batches[s.cur].add(b, to)
	s.pending.Add(1)
	if !s.armed {
		s.armed = true
		s.timer.Reset(backstop)
	}
	s.mu.Unlock()
	return nil
}

// Flush sends the packets queued (pace.Flusher). When another goroutine
// is sending, it returns at once: that one sends what was queued
// meanwhile once its batch is out (or the backstop does).
func (s *Sender) Flush() {
	if s.pending.Load() == 0 || !s.sendMu.TryLock() {
		return
	}
	for s.pending.Load() > 0 {
		s.send()
	}
	s.sendMu.Unlock()
}

// Stop stops the backstop; what is queued afterwards goes out only at a
// Flush.
func (s *Sender) Stop() { s.timer.Stop() }

// send (under sendMu) sends the batch being filled.
func (s *Sender) send() {
	s.mu.Lock()
	o := s.batches[s.cur]
	// The other batch is empty: only a holder of sendMu sends, and it
	// empties what it sent before it lets go.
	s.cur ^= 1
	s.pending.Store(0)
	if s.armed {
		s.armed = false
		s.timer.Stop()
	}
	s.mu.Unlock()
	for i := 0; i < o.len(); {
		n, err := s.sendBatch(o, i)
		s.sendCalls.Add(1)
		if n > 0 {
			s.sent.Add(int64(n))
			i += n
			continue
		}
		// The first packet could not go (its peer unreachable, say): drop
		// it and send the rest.
		s.failures.Add(1)
		if errors.Is(err, net.ErrClosed) {
			s.failures.Add(int64(o.len() - i - 1))
			break
		}
		i++
	}
	o.reset()
}
