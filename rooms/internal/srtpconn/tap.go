package srtpconn

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"

	"github.com/stackbone/box/internal/rtpmux"
)

// Net is the transport.Net of ICE agents (and of a UDP mux) whose sockets
// can hand SRTP and SRTCP packets straight to a tap, in the goroutine that
// reads the socket, once the call is keyed. Without a tap an ICE agent
// passes every packet through its buffer to the reader of its connection:
// a copy and a goroutine woken per packet, 50 a second each way of a call.
// STUN (connectivity checks, consent), DTLS and packets of no tap still go
// to the agent as before. A tapped packet no longer counts as traffic for
// the agent's liveness; its keepalive binding requests, answered by the
// other side, do (KeepaliveInterval below DisconnectedTimeout).
type Net struct {
	transport.Net

	mu    sync.Mutex
	conns []*tapConn
	batch bool // IPv4 sockets opened from now on read in batches
}

// BatchReads has the IPv4 sockets n opens from now on read in batches, as
// many packets as one system call takes (rtpmux.Reader): for a socket that
// carries many calls (a UDP mux's), whose one reader then hands each
// batch's SRTP to the calls' taps.
func (n *Net) BatchReads() {
	n.mu.Lock()
	n.batch = true
	n.mu.Unlock()
}

// NewNet returns a Net over the machine's network.
func NewNet() (*Net, error) {
	std, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return &Net{Net: std}, nil
}

// Sender is what sends in batches on the socket n opened at local (an
// IPv4 address): the packets of every call on it queued and sent together
// when the pacer's round ends (rtpmux.Sender). Nil when no such socket is
// open, or when it is not IPv4.
func (n *Net) Sender(local netip.AddrPort) *rtpmux.Sender {
	local = unmap(local)
	if !local.Addr().Is4() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		a, ok := c.LocalAddr().(*net.UDPAddr)
		if !ok || unmap(a.AddrPort()) != local {
			continue
		}
		return c.batchSender()
	}
	return nil
}

// Reader is what reads the socket n opened at local in batches (see
// BatchReads); nil when no such socket is open.
func (n *Net) Reader(local netip.AddrPort) *rtpmux.Reader {
	local = unmap(local)
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok && unmap(a.AddrPort()) == local {
			return c.rd
		}
	}
	return nil
}

// SenderStats sums what the senders of n's sockets sent.
func (n *Net) SenderStats() rtpmux.SenderStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	var st rtpmux.SenderStats
	for _, c := range n.conns {
		s := c.stats()
		st.Sent, st.SendCalls, st.Failures = st.Sent+s.Sent, st.SendCalls+s.SendCalls, st.Failures+s.Failures
	}
	return st
}

// ReadStats counts the packets n's batch-read sockets read and the system
// calls that read them.
func (n *Net) ReadStats() (packets, reads int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.conns {
		packets += c.packets.Load()
		reads += c.reads.Load()
	}
	return packets, reads
}

// mdnsPort is multicast DNS's: an agent's mDNS socket is never tapped (a
// DNS message can begin with an RTP-range byte).
const mdnsPort = 5353

// ListenUDP opens a socket that taps can read from (except mDNS's).
func (n *Net) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	if laddr != nil && laddr.Port == mdnsPort {
		return c, nil
	}
	t := &tapConn{UDPConn: c}
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := c.LocalAddr().(*net.UDPAddr); n.batch && ok && a.IP.To4() != nil {
		if t.rd, err = rtpmux.NewReader(c); err != nil {
			c.Close()
			return nil, err
		}
	}
	n.conns = append(n.conns, t)
	return t, nil
}

// Tap hands h the SRTP and SRTCP packets from remote that arrive on the
// sockets n opened, from any address when remote is the zero AddrPort (the
// sockets of one call's agent: the SRTP authentication tells the call's
// packets), until untap is called. h runs in the socket's reader and must
// neither keep the packet nor block.
func (n *Net) Tap(remote netip.AddrPort, h func([]byte)) (untap func()) {
	remote = unmap(remote)
	n.mu.Lock()
	conns := append([]*tapConn(nil), n.conns...)
	n.mu.Unlock()
	for _, c := range conns {
		c.set(remote, h)
	}
	return func() {
		for _, c := range conns {
			c.set(remote, nil)
		}
	}
}

func unmap(a netip.AddrPort) netip.AddrPort {
	if !a.IsValid() {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// tapConn is a UDP socket with taps. It offers the agent allocation-free
// reads and writes by address (ice.AddrPortReaderWriter).
type tapConn struct {
	*net.UDPConn

	mu   sync.Mutex // serializes changes (taps, sender); readers load taps
	taps atomic.Pointer[map[netip.AddrPort]func([]byte)]

	sender *rtpmux.Sender // made on first use (under mu)
	own    *net.UDPConn   // the sender's descriptor

	// rd reads the socket in batches (nil: a packet per read); got and
	// next are the last batch's size and its next packet to look at
	// (the reader's own).
	rd             *rtpmux.Reader
	got, next      int
	reads, packets atomic.Int64
}

// dupConn is another connection on c's socket, with deadlines of its own.
func dupConn(c *net.UDPConn) (*net.UDPConn, error) {
	f, err := c.File()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fc, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	u, ok := fc.(*net.UDPConn)
	if !ok {
		fc.Close()
		return nil, fmt.Errorf("srtpconn: %T is not a UDP connection", fc)
	}
	return u, nil
}

// batchSender is the socket's sender, made on first use.
func (c *tapConn) batchSender() *rtpmux.Sender {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sender == nil {
		// The sender writes through a descriptor of its own on the same
		// socket: the UDP mux of pion's ICE aborts a write by setting a
		// deadline of now on its connection, which would fail a batch
		// that met it.
		own, err := dupConn(c.UDPConn)
		if err != nil {
			return nil
		}
		s, err := rtpmux.NewSender(own)
		if err != nil {
			own.Close()
			return nil
		}
		c.sender, c.own = s, own
	}
	return c.sender
}

// stats is what the socket's sender sent.
func (c *tapConn) stats() rtpmux.SenderStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sender == nil {
		return rtpmux.SenderStats{}
	}
	return c.sender.Stats()
}

// Close closes the socket and the sender's descriptor.
func (c *tapConn) Close() error {
	c.mu.Lock()
	if c.sender != nil {
		c.sender.Stop()
		c.own.Close()
	}
	c.mu.Unlock()
	return c.UDPConn.Close()
}

func (c *tapConn) set(remote netip.AddrPort, h func([]byte)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[netip.AddrPort]func([]byte){}
	if old := c.taps.Load(); old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	if h == nil {
		delete(m, remote)
	} else {
		m[remote] = h
	}
	c.taps.Store(&m)
}

// ReadFromAddrPort returns the next packet that is not tapped.
func (c *tapConn) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	if c.rd != nil {
		return c.readBatched(b)
	}
	for {
		n, from, err := c.UDPConn.ReadFromUDPAddrPort(b)
		if err != nil {
			return n, from, err
		}
		if !c.tapped(b[:n], from) {
			return n, from, nil
		}
	}
}

// readBatched is ReadFromAddrPort on a socket read in batches: the
// packets of a batch that no tap takes are returned one by one, copied
// into b, before the next batch is read.
func (c *tapConn) readBatched(b []byte) (int, netip.AddrPort, error) {
	for {
		for c.next < c.got {
			p, from := c.rd.Packet(c.next)
			c.next++
			if p == nil || c.tapped(p, from) {
				continue
			}
			return copy(b, p), from, nil
		}
		n, err := c.rd.Read()
		if err != nil {
			c.got, c.next = 0, 0
			return 0, netip.AddrPort{}, err
		}
		c.reads.Add(1)
		c.packets.Add(int64(n))
		c.got, c.next = n, 0
	}
}

// tapped hands p to the tap of its address, if any, and says whether one
// took it.
func (c *tapConn) tapped(p []byte, from netip.AddrPort) bool {
	m := c.taps.Load()
	if m == nil || len(*m) == 0 || !IsRTP(p) {
		return false
	}
	h, ok := (*m)[unmap(from)]
	if !ok {
		h, ok = (*m)[netip.AddrPort{}]
	}
	if ok {
		h(p)
	}
	return ok
}

func (c *tapConn) WriteToAddrPort(b []byte, to netip.AddrPort) (int, error) {
	return c.UDPConn.WriteToUDPAddrPort(b, to)
}

// ReadFrom is ReadFromAddrPort for readers that want a net.Addr.
func (c *tapConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, from, err := c.ReadFromAddrPort(b)
	if err != nil {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}
