//go:build linux

package rawudp

import (
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Packets queued from several source ports arrive at a UDP socket as each
// port would have sent them, payload for payload, the batch sent when it
// fills and at Flush.
func TestQueuedPacketsArriveFromTheirPorts(t *testing.T) {
	s, err := New(200)
	if errors.Is(err, unix.EPERM) {
		t.Skipf("raw sockets are not permitted here (needs root or CAP_NET_RAW): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	_ = rx.SetReadBuffer(1 << 20)
	dst := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	const n = Batch + 5 // one full batch goes out while queueing
	for i := range n {
		src := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(20000+i%3))
		if err := s.Queue(src, dst, []byte{byte(i), byte(i >> 8), 0xAB}); err != nil {
			t.Fatal(err)
		}
	}
	s.Flush()
	_ = rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 1500)
	for i := range n {
		m, from, err := rx.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("packet %d of %d: %v", i, n, err)
		}
		if m != 3 || int(buf[0])|int(buf[1])<<8 != i || buf[2] != 0xAB {
			t.Fatalf("packet %d: % x", i, buf[:m])
		}
		if want := uint16(20000 + i%3); from.Port() != want {
			t.Fatalf("packet %d from port %d, want %d", i, from.Port(), want)
		}
	}
	if err := s.Queue(dst, dst, make([]byte, 201)); err == nil {
		t.Fatal("a payload over the size asked for was queued")
	}
	if err := s.Queue(netip.MustParseAddrPort("[::1]:5"), dst, nil); err == nil {
		t.Fatal("an IPv6 source was queued")
	}
}
