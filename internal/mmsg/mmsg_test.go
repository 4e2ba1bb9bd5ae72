//go:build linux

package mmsg

import (
	"bytes"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func udp(t *testing.T) (*net.UDPConn, syscall.RawConn) {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return c, raw
}

// A batch sent in one sendmmsg arrives whole: each datagram with its own
// bytes, read in one recvmmsg with where it came from and its arrival
// time; a part of a batch sends only that part.
func TestBatchSendsAndReads(t *testing.T) {
	tx, txRaw := udp(t)
	rx, rxRaw := udp(t)
	if err := rxRaw.Control(func(fd uintptr) {
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			t.Fatal(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	out := New(4, 64, Options{Addrs: true})
	payloads := [][]byte{[]byte("first"), []byte("the second, longer"), {}, []byte("fourth")}
	for i, p := range payloads {
		copy(out.Buf(i), p)
		out.SetLen(i, len(p))
		out.SetTo(i, to)
	}
	var sent int
	var errno unix.Errno
	if err := txRaw.Write(func(fd uintptr) bool { sent, errno = out.Send(fd, 1, 3); return errno != unix.EAGAIN }); err != nil || errno != 0 {
		t.Fatalf("send: %v %v", err, errno)
	}
	if sent != 2 {
		t.Fatalf("sent %d of messages 1 and 2", sent)
	}

	in := New(8, 64, Options{Addrs: true, Control: unix.CmsgSpace(16)})
	if err := rx.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for len(got) < 2 {
		var n int
		if err := rxRaw.Read(func(fd uintptr) bool { n, errno = in.Recv(fd, 0); return errno != unix.EAGAIN }); err != nil || errno != 0 {
			t.Fatalf("read: %v %v", err, errno)
		}
		for i := range n {
			got = append(got, bytes.Clone(in.Received(i)))
			from, ok := in.From(i)
			if want := tx.LocalAddr().(*net.UDPAddr).AddrPort(); !ok || from != want {
				t.Fatalf("message %d from %v, want %v", i, from, want)
			}
			msgs, err := unix.ParseSocketControlMessage(in.Control(i))
			if err != nil || len(msgs) != 1 || msgs[0].Header.Type != unix.SO_TIMESTAMPNS || len(msgs[0].Data) != 16 {
				t.Fatalf("message %d's control: %v %v", i, msgs, err)
			}
		}
	}
	if len(got) != 2 || !bytes.Equal(got[0], payloads[1]) || len(got[1]) != 0 {
		t.Fatalf("read %q, want messages 1 and 2 of %q", got, payloads)
	}
	if cap(out.Buf(0)) != 64 || out.Cap() != 4 || out.Slot() != 64 {
		t.Fatalf("a buffer of %d bytes, %d messages of %d", cap(out.Buf(0)), out.Cap(), out.Slot())
	}
	if _, ok := New(1, 8, Options{Addrs: true}).From(0); ok {
		t.Fatal("a message never read has a sender")
	}
}
