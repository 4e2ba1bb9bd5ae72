package rtpmux

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"
)

type sink struct {
	mu      sync.Mutex
	packets []rtp.Packet
	control int
}

func (s *sink) Packet(b []byte) {
	var p rtp.Packet
	if err := p.Unmarshal(append([]byte(nil), b...)); err != nil {
		return
	}
	s.mu.Lock()
	s.packets = append(s.packets, p)
	s.mu.Unlock()
}

func (s *sink) Control() { s.mu.Lock(); s.control++; s.mu.Unlock() }

func (s *sink) seqs() []uint16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint16
	for _, p := range s.packets {
		out = append(out, p.SequenceNumber)
	}
	return out
}

func peer(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func packet(seq uint16, ssrc uint32) []byte {
	p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: seq, SSRC: ssrc}, Payload: make([]byte, 160)}
	b, _ := p.Marshal()
	return b
}

func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Each call's packets reach its own sink by their source address, packets
// from no call are counted and dropped, and what the calls write goes out
// to each peer from the shared port, many packets per system call.
func TestPacketsReachTheirCallAndGoOutInBatches(t *testing.T) {
	m, err := Listen(net.IPv4(127, 0, 0, 1), 0, 2, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const calls = 40
	peers := make([]*net.UDPConn, calls)
	sinks := make([]*sink, calls)
	routes := make([]*Route, calls)
	for i := range calls {
		peers[i], sinks[i] = peer(t), &sink{}
		if routes[i], err = m.Route(peers[i].LocalAddr().(*net.UDPAddr), sinks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Route(peers[0].LocalAddr().(*net.UDPAddr), &sink{}); !errors.Is(err, ErrTaken) {
		t.Fatalf("a second route from one address: %v, want ErrTaken", err)
	}
	stranger := peer(t)
	for seq := range uint16(5) {
		for i, p := range peers {
			if _, err := p.WriteTo(packet(seq, uint32(i)), m.Addr()); err != nil {
				t.Fatal(err)
			}
		}
		_, _ = stranger.WriteTo(packet(seq, 999), m.Addr())
	}
	for i := range calls {
		until(t, "each call's five packets", func() bool { return len(sinks[i].seqs()) == 5 })
		for _, p := range sinks[i].packets {
			if p.SSRC != uint32(i) {
				t.Fatalf("call %d got a packet of SSRC %d", i, p.SSRC)
			}
		}
	}
	until(t, "the stranger's packets counted", func() bool { return m.Stats().Unrouted == 5 })

	// Three rounds of a frame per call, each flushed as a pacer's round
	// ends.
	for round := range uint16(3) {
		for i, r := range routes {
			p := &rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: round, SSRC: uint32(1000 + i)}, Payload: make([]byte, 160)}
			if err := r.WriteRTP(p); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range routes {
			r.Batch().Flush()
		}
	}
	buf := make([]byte, 1500)
	for i, p := range peers {
		for round := range uint16(3) {
			_ = p.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, from, err := p.ReadFromUDP(buf)
			if err != nil {
				t.Fatalf("peer %d round %d: %v", i, round, err)
			}
			if from.Port != m.Addr().Port {
				t.Fatalf("peer %d got a packet from port %d, not the shared %d", i, from.Port, m.Addr().Port)
			}
			var got rtp.Packet
			if err := got.Unmarshal(buf[:n]); err != nil || got.SSRC != uint32(1000+i) || got.SequenceNumber != round {
				t.Fatalf("peer %d got SSRC %d seq %d (%v), want %d/%d", i, got.SSRC, got.SequenceNumber, err, 1000+i, round)
			}
		}
	}
	st := m.Stats()
	if st.Sent != 3*calls || st.SendCalls > 3*2*2 {
		t.Fatalf("sent %d packets in %d system calls, want %d in at most %d", st.Sent, st.SendCalls, 3*calls, 12)
	}
}

// A packet written outside a pacer's round still goes out (the backstop),
// a moved route follows its peer, a closed one hears and sends nothing.
func TestRouteMovesAndCloses(t *testing.T) {
	m, err := Listen(net.IPv4(127, 0, 0, 1), 0, 1, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, b := peer(t), peer(t)
	s := &sink{}
	r, err := m.Route(a.LocalAddr().(*net.UDPAddr), s)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: 7}, Payload: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1500)
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := a.ReadFromUDP(buf); err != nil {
		t.Fatalf("a packet left unflushed never went: %v", err)
	}
	if err := r.Move(b.LocalAddr().(*net.UDPAddr)); err != nil {
		t.Fatal(err)
	}
	_, _ = a.WriteTo(packet(1, 1), m.Addr())
	_, _ = b.WriteTo(packet(2, 2), m.Addr())
	until(t, "the moved peer's packet", func() bool { return len(s.seqs()) == 1 })
	until(t, "the old address's packet dropped", func() bool { return m.Stats().Unrouted == 1 })
	if got := s.seqs(); got[0] != 2 {
		t.Fatalf("heard seq %v, want the moved peer's 2", got)
	}
	r.Close()
	_, _ = b.WriteTo(packet(3, 2), m.Addr())
	until(t, "a closed route's packet dropped", func() bool { return m.Stats().Unrouted == 2 })
	if err := r.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2}, Payload: []byte{1}}); err != nil {
		t.Fatal(err)
	}
	r.s.Flush()
	if st := m.Stats(); st.Sent != 1 {
		t.Fatalf("sent %d packets, want only the first", st.Sent)
	}
}

// A second mux asking for a pair in use fails instead of taking a share
// of its packets.
func TestAPairInUseIsRefused(t *testing.T) {
	m, err := Listen(net.IPv4(127, 0, 0, 1), 0, 2, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if o, err := Listen(net.IPv4(127, 0, 0, 1), m.Addr().Port, 2, slog.Default()); err == nil {
		o.Close()
		t.Fatalf("a second mux opened port %d", m.Addr().Port)
	}
}

// gate is a sink whose first packet holds the reader until released.
type gate struct {
	entered, release chan struct{}
	once             sync.Once
}

func (g *gate) Packet([]byte) {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
}

func (g *gate) Control() {}

// A route's ReadBy says whether the readers handed on every packet that
// arrived by a time: not while one is still handing on the batch a packet
// came in, and again once it waits on an empty socket.
func TestReadByFollowsTheReaders(t *testing.T) {
	m, err := Listen(net.IPv4(127, 0, 0, 1), 0, 2, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := peer(t)
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(g.release) }) }
	defer release()
	r, err := m.Route(p.LocalAddr().(*net.UDPAddr), g)
	if err != nil {
		t.Fatal(err)
	}
	until(t, "the readers waiting", func() bool { return r.ReadBy(time.Now()) })
	if _, err := p.WriteTo(packet(1, 1), m.Addr()); err != nil {
		t.Fatal(err)
	}
	sent := time.Now() // a loopback packet is in the socket when the write returns
	select {
	case <-g.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the packet never reached its route")
	}
	if r.ReadBy(sent) {
		t.Fatal("ReadBy is true while the packet's batch is being handed on")
	}
	release()
	until(t, "the batch handed on", func() bool { return r.ReadBy(time.Now()) })
}
