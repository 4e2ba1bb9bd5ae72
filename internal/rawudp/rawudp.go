//go:build linux

// Package rawudp sends UDP packets from many source ports in one system
// call: an IPPROTO_RAW socket and sendmmsg, each packet built with its own
// IPv4 and UDP headers. The load tools' callers send every call's media
// from the call's own port this way, so the box receives exactly what a
// socket per call would send, at a system call per batch instead of one
// per packet (in a virtual machine most of a caller's CPU went to the
// system calls themselves). An IPPROTO_RAW socket receives nothing, so it
// adds nothing to the way of the packets sent back.
//
// Opening one needs root or CAP_NET_RAW; New's error says so, and the
// caller then writes each call's own socket.
package rawudp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/stackbone/box/internal/mmsg"
)

// Batch is how many packets one sendmmsg carries at most; a Queue that
// finds the batch full sends it first.
const Batch = 128

// headers is the IPv4 and UDP headers' size.
const headers = 20 + 8

// Sender is a raw socket and the batch being filled; safe for concurrent
// use.
type Sender struct {
	mu   sync.Mutex
	fd   int
	msgs *mmsg.Batch // a packet may take its Slot, headers included
	n    int
}

// New opens a raw socket for payloads of at most maxPayload bytes.
func New(maxPayload int) (*Sender, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("rawudp: raw socket (needs root or CAP_NET_RAW): %w", err)
	}
	return &Sender{fd: fd, msgs: mmsg.New(Batch, headers+maxPayload, mmsg.Options{Addrs: true})}, nil
}

// Close closes the socket; what is queued is not sent.
func (s *Sender) Close() error { return unix.Close(s.fd) }

// Queue adds a packet with payload from src to dst (both IPv4) to the
// batch, copying it; the batch goes out at Flush, or here when full. A
// payload over New's maxPayload or an address that is not IPv4 is an
// error and queues nothing.
func (s *Sender) Queue(src, dst netip.AddrPort, payload []byte) error {
	size := headers + len(payload)
	if size > s.msgs.Slot() {
		return fmt.Errorf("rawudp: a %d-byte payload is over %d", len(payload), s.msgs.Slot()-headers)
	}
	sa, da := src.Addr().Unmap(), dst.Addr().Unmap()
	if !sa.Is4() || !da.Is4() {
		return fmt.Errorf("rawudp: %v to %v is not IPv4", src, dst)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == Batch {
		s.send()
	}
	b := s.msgs.Buf(s.n)[:size]
	// IPv4; the kernel fills in the identification and the checksum.
	b[0], b[1] = 0x45, 0
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	clear(b[4:8])
	b[8], b[9] = 64, unix.IPPROTO_UDP
	clear(b[10:12])
	s4, d4 := sa.As4(), da.As4()
	copy(b[12:16], s4[:])
	copy(b[16:20], d4[:])
	// UDP, without a checksum (allowed over IPv4).
	binary.BigEndian.PutUint16(b[20:], src.Port())
	binary.BigEndian.PutUint16(b[22:], dst.Port())
	binary.BigEndian.PutUint16(b[24:], uint16(size-20))
	clear(b[26:28])
	copy(b[headers:], payload)
	s.msgs.SetLen(s.n, size)
	s.msgs.SetTo(s.n, netip.AddrPortFrom(da, 0)) // a raw socket takes no port
	s.n++
	return nil
}

// Flush sends the packets queued. A packet the kernel refuses is lost, as
// on a network; the sender keeps its cadence.
func (s *Sender) Flush() {
	s.mu.Lock()
	s.send()
	s.mu.Unlock()
}

// send (under mu) sends the batch and empties it.
func (s *Sender) send() {
	for from := 0; from < s.n; {
		sent, e := s.msgs.Send(uintptr(s.fd), from, s.n)
		if e != 0 || sent == 0 {
			break
		}
		from += sent
	}
	s.n = 0
}
