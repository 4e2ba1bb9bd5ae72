//go:build linux

// Package mmsg is batches of datagrams for Linux's sendmmsg and recvmmsg:
// the message headers (struct mmsghdr), one buffer per message in one
// slab, and where asked an IPv4 address and control space per message,
// laid out once and reused for every call, so a batch sent or read
// allocates nothing.
//
// Send and Recv are raw system calls (no entry into the runtime's
// blocking-call path), retried when a signal interrupts them: they are
// for non-blocking sockets, whose EAGAIN the caller hands back to the
// runtime's poller (see rtpmux for why this matters under load).
package mmsg

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hdr is struct mmsghdr: a msghdr and the bytes it carried.
type hdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [unsafe.Sizeof(uintptr(0)) - 4]byte
}

// Options says what each message carries besides its buffer.
type Options struct {
	// Addrs gives each message an IPv4 address: where a message is sent
	// to (SetTo), where a message read came from (From).
	Addrs bool
	// Control is the control (ancillary) bytes each message read may
	// take, 0 for none (Control).
	Control int
}

// Batch is up to Cap messages of at most Slot bytes each.
type Batch struct {
	hdrs    []hdr
	iovs    []unix.Iovec
	addrs   []unix.RawSockaddrInet4
	control []byte
	cspace  int
	slab    []byte
	slot    int
}

// New lays out a batch of n messages of at most slot bytes.
func New(n, slot int, opt Options) *Batch {
	b := &Batch{hdrs: make([]hdr, n), iovs: make([]unix.Iovec, n), slab: make([]byte, n*slot), slot: slot,
		cspace: opt.Control}
	if opt.Addrs {
		b.addrs = make([]unix.RawSockaddrInet4, n)
	}
	if opt.Control > 0 {
		b.control = make([]byte, n*opt.Control)
	}
	for i := range b.hdrs {
		b.iovs[i].Base = &b.slab[i*slot]
		b.iovs[i].SetLen(slot)
		h := &b.hdrs[i].hdr
		h.Iov = &b.iovs[i]
		h.SetIovlen(1)
		if b.addrs != nil {
			h.Name = (*byte)(unsafe.Pointer(&b.addrs[i]))
			h.Namelen = unix.SizeofSockaddrInet4
		}
	}
	return b
}

// Cap is how many messages the batch holds.
func (b *Batch) Cap() int { return len(b.hdrs) }

// Slot is the most bytes a message may carry.
func (b *Batch) Slot() int { return b.slot }

// Buf is message i's whole buffer, to fill before SetLen.
func (b *Batch) Buf(i int) []byte { return b.slab[i*b.slot : (i+1)*b.slot : (i+1)*b.slot] }

// SetLen makes message i carry the first size bytes of its buffer.
func (b *Batch) SetLen(i, size int) { b.iovs[i].SetLen(size) }

// SetTo addresses message i to to (IPv4; a batch made with Addrs).
func (b *Batch) SetTo(i int, to netip.AddrPort) {
	a := &b.addrs[i]
	a.Family = unix.AF_INET
	a.Addr = to.Addr().Unmap().As4()
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&a.Port))[:], to.Port())
}

// Send sends messages from up to to on the socket fd in one sendmmsg: how
// many went, or the system call's error (EAGAIN on a full socket).
func (b *Batch) Send(fd uintptr, from, to int) (int, unix.Errno) {
	return call(unix.SYS_SENDMMSG, fd, b.hdrs[from:to], 0)
}

// Recv reads the datagrams waiting on the socket fd into the batch, as
// many as it holds, in one recvmmsg with flags: how many, or the system
// call's error (EAGAIN when none waits).
func (b *Batch) Recv(fd uintptr, flags int) (int, unix.Errno) {
	for i := range b.hdrs {
		b.iovs[i].SetLen(b.slot)
		h := &b.hdrs[i].hdr
		if b.addrs != nil {
			h.Namelen = unix.SizeofSockaddrInet4
		}
		if b.cspace > 0 {
			h.Control = &b.control[i*b.cspace]
			h.SetControllen(b.cspace)
		}
	}
	return call(unix.SYS_RECVMMSG, fd, b.hdrs, flags)
}

// Received is what message i carried, after Recv.
func (b *Batch) Received(i int) []byte { return b.slab[i*b.slot : i*b.slot+int(b.hdrs[i].n)] }

// From is where message i came from, after Recv (a batch made with Addrs);
// false for a sender that is not IPv4.
func (b *Batch) From(i int) (netip.AddrPort, bool) {
	a := &b.addrs[i]
	if a.Family != unix.AF_INET {
		return netip.AddrPort{}, false
	}
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&a.Port))[:])
	return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), port), true
}

// Control is message i's control bytes, after Recv (a batch made with
// Control).
func (b *Batch) Control(i int) []byte {
	return b.control[i*b.cspace : i*b.cspace+int(b.hdrs[i].hdr.Controllen)]
}

// call is sendmmsg or recvmmsg (trap) on hdrs, again when a signal
// interrupted it.
func call(trap, fd uintptr, hdrs []hdr, flags int) (int, unix.Errno) {
	if len(hdrs) == 0 {
		return 0, 0
	}
	for {
		r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), uintptr(flags), 0, 0)
		if e != unix.EINTR {
			return int(r), e
		}
	}
}
