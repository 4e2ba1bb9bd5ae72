// Package rtpmux carries the RTP of many calls on one UDP port, the way
// high-rate packet servers do: a few sockets bound to the same port
// (SO_REUSEPORT, one per processor), packets read in batches (recvmmsg) and
// handed to the call they came from by their source address, and the
// packets of every call due at the same moment sent in one system call
// (sendmmsg) when the pacer's round ends.
//
// A socket per call costs a read and a write system call per packet and a
// goroutine wake-up per packet read; here a batch of packets costs one
// system call and one wake-up. GSO (UDP_SEGMENT) does not apply: it splits
// one buffer into datagrams for one destination, and every call has its
// own.
package rtpmux

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pion/rtp"
	"golang.org/x/sys/unix"
)

// ErrTaken: another call's RTP already comes from that address, so
// packets from it could not be told apart (that call needs a port of its
// own).
var ErrTaken = errors.New("rtpmux: another call's RTP comes from that address")

// ErrClosed: the mux or the route was closed.
var ErrClosed = errors.New("rtpmux: closed")

const (
	// batch is how many packets one system call reads or sends at most.
	batch = 64
	// slot is the largest RTP packet a route sends.
	slot = 1500
	// sockBuf is each socket's kernel buffer, asked for both ways (the
	// kernel caps it at net.core.[rw]mem_max).
	sockBuf = 4 << 20
	// backstop is how long a packet written outside a pacer's round (a
	// transfer's leg, written as the caller's audio arrives) waits for the
	// next flush at most.
	backstop = 2 * time.Millisecond
)

// Sink receives a route's packets on the mux's reader goroutine: b is the
// whole RTP packet and valid only during the call, which must not block.
type Sink interface {
	Packet(b []byte)
	// Control is an RTCP packet from the route's peer.
	Control()
}

// Stats counts what went through a mux since it opened.
type Stats struct {
	Port                   int   // the shared RTP port
	Sent, SendCalls        int64 // RTP packets sent, sendmmsg calls
	Received, ReadCalls    int64 // RTP packets read, recvmmsg calls
	Unrouted, SendFailures int64 // packets from no known call, packets not sent
}

// Sub is the difference of two snapshots, for a window of time.
func (st Stats) Sub(earlier Stats) Stats {
	return Stats{
		Port: st.Port, Sent: st.Sent - earlier.Sent, SendCalls: st.SendCalls - earlier.SendCalls,
		Received: st.Received - earlier.Received, ReadCalls: st.ReadCalls - earlier.ReadCalls,
		Unrouted: st.Unrouted - earlier.Unrouted, SendFailures: st.SendFailures - earlier.SendFailures,
	}
}

// Mux is one shared RTP port (RTCP on the next) and its sockets.
type Mux struct {
	addr  *net.UDPAddr // the RTP port's local address
	socks []*socket
	rtcp  *net.UDPConn
	log   *slog.Logger

	mu     sync.RWMutex
	routes map[netip.AddrPort]*Route
	closed bool

	wg                            sync.WaitGroup
	received, readCalls, unrouted atomic.Int64
}

// socket is one of the mux's sockets bound to the shared port, with the
// packets queued to go out on it.
type socket struct {
	m    *Mux
	conn *net.UDPConn
	io   batchIO
	in   *inBatch
	*Sender
}

// Listen opens the shared port on ip: port 0 takes a free pair. n is how
// many sockets share it (one per processor; at least one).
func Listen(ip net.IP, port, n int, log *slog.Logger) (*Mux, error) {
	n = max(n, 1)
	var lastErr error
	for range 20 {
		m, err := listen(ip, port, n, log)
		if err == nil {
			return m, nil
		}
		lastErr = err
		if port != 0 {
			break
		}
	}
	return nil, lastErr
}

func listen(ip net.IP, port, n int, log *slog.Logger) (*Mux, error) {
	lc := net.ListenConfig{Control: reusePort}
	m := &Mux{routes: map[netip.AddrPort]*Route{}, log: log}
	host := ip.String()
	// The RTCP port is bound alone (no SO_REUSEPORT) and, for a port asked
	// for, first: a second process asking for the same pair fails there,
	// before it could join the RTP port's sockets and take their packets.
	bindRTCP := func() error {
		var err error
		if m.rtcp, err = net.ListenUDP("udp4", &net.UDPAddr{IP: ip, Port: port + 1}); err != nil {
			return fmt.Errorf("rtpmux: RTCP port %d: %w", port+1, err)
		}
		return nil
	}
	if port != 0 {
		if err := bindRTCP(); err != nil {
			return nil, err
		}
	}
	for i := range n {
		pc, err := lc.ListenPacket(context.Background(), "udp4", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			m.closeSockets()
			return nil, fmt.Errorf("rtpmux: listen on %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), err)
		}
		conn := pc.(*net.UDPConn)
		_ = conn.SetReadBuffer(sockBuf)
		_ = conn.SetWriteBuffer(sockBuf)
		bio, err := newBatchIO(conn)
		var snd *Sender
		if err == nil {
			snd, err = NewSender(conn)
		}
		if err != nil {
			conn.Close()
			m.closeSockets()
			return nil, fmt.Errorf("rtpmux: %w", err)
		}
		s := &socket{m: m, conn: conn, io: bio, in: newInBatch(), Sender: snd}
		m.socks = append(m.socks, s)
		if i == 0 {
			m.addr = conn.LocalAddr().(*net.UDPAddr)
			if port == 0 {
				// A port the kernel chose: no one else is on it.
				port = m.addr.Port
				if err := bindRTCP(); err != nil {
					m.closeSockets()
					return nil, err
				}
			}
		}
	}
	for _, s := range m.socks {
		m.wg.Add(1)
		go s.read()
	}
	m.wg.Add(1)
	go m.readRTCP()
	return m, nil
}

// reusePort lets the mux's sockets bind the same port; the kernel spreads
// peers over them by their address, each peer always to the same socket.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// Addr is the shared RTP port's address.
func (m *Mux) Addr() *net.UDPAddr { return m.addr }

// Stats counts the mux's packets and system calls so far.
func (m *Mux) Stats() Stats {
	st := Stats{Port: m.addr.Port, Received: m.received.Load(), ReadCalls: m.readCalls.Load(), Unrouted: m.unrouted.Load()}
	for _, s := range m.socks {
		st.Sent += s.sent.Load()
		st.SendCalls += s.sendCalls.Load()
		st.SendFailures += s.failures.Load()
	}
	return st
}

// Close stops the readers and closes the sockets; routes left write
// nothing.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.routes = map[netip.AddrPort]*Route{}
	m.mu.Unlock()
	m.closeSockets()
	m.wg.Wait()
	return nil
}

func (m *Mux) closeSockets() {
	for _, s := range m.socks {
		s.Stop()
		s.conn.Close()
	}
	if m.rtcp != nil {
		m.rtcp.Close()
	}
}

// Route is one call's RTP on the mux: packets from its peer's address go
// to its sink, and it writes packets to that address.
type Route struct {
	m    *Mux
	s    *socket
	sink Sink

	mu     sync.Mutex
	key    netip.AddrPort
	buf    []byte
	closed bool
}

// Route starts routing the packets that come from raddr to sink.
func (m *Mux) Route(raddr *net.UDPAddr, sink Sink) (*Route, error) {
	key, err := keyOf(raddr)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if _, ok := m.routes[key]; ok {
		return nil, ErrTaken
	}
	r := &Route{m: m, sink: sink, key: key, buf: make([]byte, slot)}
	// The socket a route sends on: the peers spread over them, as the
	// kernel spreads what they send.
	r.s = m.socks[int(key.Port())%len(m.socks)]
	m.routes[key] = r
	return r, nil
}

// Move follows the peer to a new address (a re-INVITE moved its media).
func (r *Route) Move(raddr *net.UDPAddr) error {
	key, err := keyOf(raddr)
	if err != nil {
		return err
	}
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || m.closed {
		return ErrClosed
	}
	if key == r.key {
		return nil
	}
	if o, ok := m.routes[key]; ok && o != r {
		return ErrTaken
	}
	delete(m.routes, r.key)
	m.routes[key] = r
	r.key = key
	return nil
}

// Close stops the route: its peer's packets are no longer read and
// writes are dropped.
func (r *Route) Close() {
	m := r.m
	m.mu.Lock()
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		if m.routes[r.key] == r {
			delete(m.routes, r.key)
		}
	}
	r.mu.Unlock()
	m.mu.Unlock()
}

// WriteRTP queues p for the route's peer; it goes out at the next flush
// (the end of the pacer's round, or the backstop).
func (r *Route) WriteRTP(p *rtp.Packet) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	n, err := p.MarshalTo(r.buf)
	if err == nil {
		err = r.s.Queue(r.buf[:n], r.key)
	}
	r.mu.Unlock()
	return err
}

// ReadBy says whether the mux's readers have read and handed on every
// packet that arrived by t (Front): the route's peer is read by one of
// them, whichever the kernel chose.
func (r *Route) ReadBy(t time.Time) bool {
	for _, s := range r.m.socks {
		if !s.in.front.ReadBy(t) {
			return false
		}
	}
	return true
}

// Batch is what flushes the route's packets (pace.Flusher).
func (r *Route) Batch() interface{ Flush() } { return r.s }

// read hands the socket's packets to their routes, a batch per system
// call, until the socket closes.
func (s *socket) read() {
	defer s.m.wg.Done()
	m, in := s.m, s.in
	for {
		n, err := s.io.readBatch(in)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			m.log.Debug("rtpmux: read", "error", err)
			continue
		}
		m.readCalls.Add(1)
		m.received.Add(int64(n))
		m.mu.RLock()
		for i := range n {
			b, from := in.packet(i)
			r := m.routes[from]
			if r == nil {
				m.unrouted.Add(1)
				continue
			}
			r.sink.Packet(b)
		}
		m.mu.RUnlock()
		// What the packets made the box write (a transfer's leg) goes now.
		for _, o := range m.socks {
			o.Flush()
		}
	}
}

// readRTCP tells each route that its peer's RTCP arrived (RTCP comes from
// the port after the peer's RTP, RFC 3550 section 11).
func (m *Mux) readRTCP() {
	defer m.wg.Done()
	buf := make([]byte, slot)
	for {
		_, from, err := m.rtcp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		key := netip.AddrPortFrom(from.Addr().Unmap(), from.Port()-1)
		m.mu.RLock()
		r := m.routes[key]
		m.mu.RUnlock()
		if r != nil {
			r.sink.Control()
		}
	}
}

func keyOf(a *net.UDPAddr) (netip.AddrPort, error) {
	if a == nil || a.IP == nil || a.Port == 0 {
		return netip.AddrPort{}, fmt.Errorf("rtpmux: no peer address")
	}
	ip, ok := netip.AddrFromSlice(a.IP)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("rtpmux: bad peer address %v", a)
	}
	return netip.AddrPortFrom(ip.Unmap(), uint16(a.Port)), nil
}
