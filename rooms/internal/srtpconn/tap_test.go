package srtpconn

import (
	"bytes"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// A tap takes the SRTP-range packets of its address, in the socket's
// reader; everything else (STUN, DTLS, other addresses, anything once
// untapped) is read as before. The wildcard takes any address's. So it
// is on a socket read in batches (a UDP mux's), whose packets no tap takes
// are read one by one.
func TestTapTakesTheRTPOfItsAddress(t *testing.T) {
	for _, batched := range []bool{false, true} {
		t.Run(map[bool]string{false: "a packet per read", true: "batches"}[batched], func(t *testing.T) {
			tapTakesTheRTPOfItsAddress(t, batched)
		})
	}
}

func tapTakesTheRTPOfItsAddress(t *testing.T, batched bool) {
	n, err := NewNet()
	if err != nil {
		t.Fatal(err)
	}
	if batched {
		n.BatchReads()
	}
	uc, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	conn := uc.(*tapConn)
	if (conn.rd != nil) != batched {
		t.Fatalf("batch reader %v, want %v", conn.rd != nil, batched)
	}
	to := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	caller, other := listen(t), listen(t)

	var mu sync.Mutex
	var tapped [][]byte
	tap := func(b []byte) {
		mu.Lock()
		tapped = append(tapped, bytes.Clone(b))
		mu.Unlock()
	}
	rtp := append([]byte{0x80, 0}, make([]byte, 20)...)    // RTP, PT 0
	rtcp := append([]byte{0x80, 200}, make([]byte, 20)...) // RTCP SR
	stun := append([]byte{0, 1}, make([]byte, 18)...)      // a binding request
	dtls := append([]byte{22}, make([]byte, 20)...)        // a handshake record

	// read returns the next packet the socket's reader gets past the taps.
	read := func() ([]byte, netip.AddrPort) {
		t.Helper()
		buf := make([]byte, 1500)
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, from, err := conn.ReadFromAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:k], from
	}
	send := func(c *net.UDPConn, b []byte) {
		t.Helper()
		if _, err := c.WriteToUDPAddrPort(b, to); err != nil {
			t.Fatal(err)
		}
	}

	untap := n.Tap(caller.LocalAddr().(*net.UDPAddr).AddrPort(), tap)
	for _, b := range [][]byte{rtp, stun, rtcp, dtls} {
		send(caller, b)
	}
	send(other, rtp) // not the tap's address
	for _, want := range [][]byte{stun, dtls, rtp} {
		if got, _ := read(); !bytes.Equal(got, want) {
			t.Fatalf("read %x, want %x", got, want)
		}
	}
	mu.Lock()
	if len(tapped) != 2 || !bytes.Equal(tapped[0], rtp) || !bytes.Equal(tapped[1], rtcp) {
		t.Fatalf("tapped %x, want the caller's RTP and RTCP", tapped)
	}
	mu.Unlock()

	untap()
	send(caller, rtp)
	if got, _ := read(); !bytes.Equal(got, rtp) {
		t.Fatalf("after untap: read %x, want the RTP", got)
	}

	untap = n.Tap(netip.AddrPort{}, tap) // a call's own sockets: any address
	send(other, rtp)
	send(other, stun)
	if got, from := read(); !bytes.Equal(got, stun) || from != other.LocalAddr().(*net.UDPAddr).AddrPort() {
		t.Fatalf("wildcard: read %x from %s, want the STUN message", got, from)
	}
	mu.Lock()
	if len(tapped) != 3 {
		t.Fatalf("wildcard: %d packets tapped, want 3", len(tapped))
	}
	mu.Unlock()
	untap()
	if packets, reads := n.ReadStats(); batched && (packets != 8 || reads == 0 || reads > packets) || !batched && packets != 0 {
		t.Fatalf("batch reads: %d packets in %d system calls", packets, reads)
	}
}

func listen(t *testing.T) *net.UDPConn {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The sender of a socket sends the packets queued for many peers at a
// flush, in one system call, from the socket's own address; a write
// deadline of now on the socket (how pion's UDP mux aborts a write) does
// not fail it. It closes with the socket.
func TestSenderBatchesOnTheSocketsAddress(t *testing.T) {
	n, err := NewNet()
	if err != nil {
		t.Fatal(err)
	}
	uc, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	conn := uc.(*tapConn)
	local := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	if n.Sender(netip.MustParseAddrPort("127.0.0.1:9")) != nil {
		t.Fatal("a sender for an address no socket is bound to")
	}
	s := n.Sender(local)
	if s == nil || n.Sender(local) != s {
		t.Fatal("no sender, or a second one, for the socket's address")
	}
	peers := []*net.UDPConn{listen(t), listen(t), listen(t)}
	_ = conn.SetWriteDeadline(time.Now())
	for i, p := range peers {
		if err := s.Queue([]byte{0x80, 0, byte(i)}, p.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	for i, p := range peers {
		buf := make([]byte, 64)
		_ = p.SetReadDeadline(time.Now().Add(5 * time.Second))
		k, from, err := p.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:k], []byte{0x80, 0, byte(i)}) || from != local {
			t.Fatalf("peer %d got % x from %v, want its packet from %v", i, buf[:k], from, local)
		}
	}
	if st := n.SenderStats(); st.Sent != 3 || st.SendCalls != 1 || st.Failures != 0 {
		t.Fatalf("stats %+v, want 3 packets in one system call", st)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Queue([]byte{0x80, 0, 9}, peers[0].LocalAddr().(*net.UDPAddr).AddrPort())
	s.Flush()
	if st := n.SenderStats(); st.Failures != 1 {
		t.Fatalf("stats %+v after the socket closed, want the packet failed", st)
	}
}
