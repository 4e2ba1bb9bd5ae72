package rtpmux

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux the batches go through sendmmsg and recvmmsg as raw system
// calls on headers built once per socket. x/net's WriteBatch and
// ReadBatch build each message's address anew (an allocation per packet
// read) and enter the system call the blocking way: a sendmmsg of a whole
// round carries every packet through the network stack and can take a
// hundred microseconds, long enough for the runtime's monitor to take the
// processor away from the sending thread and hand it to another, two
// context switches for nothing, and to keep the monitor waking every 20
// µs. Both calls are non-blocking here (the sockets are), so the raw form
// is safe: EAGAIN goes back to the runtime's poller.

// batchIO is how a socket sends and reads its batches: the raw socket.
type batchIO struct{ raw syscall.RawConn }

func newBatchIO(conn *net.UDPConn) (batchIO, error) {
	raw, err := conn.SyscallConn()
	return batchIO{raw: raw}, err
}

// mmsghdr is struct mmsghdr: a msghdr and the bytes it carried.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [unsafe.Sizeof(uintptr(0)) - 4]byte
}

// mmsg is sendmmsg or recvmmsg (trap) on hdrs, again when a signal
// interrupted it.
func mmsg(trap, fd uintptr, hdrs []mmsghdr) (uintptr, unix.Errno) {
	for {
		r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&hdrs[0])), uintptr(len(hdrs)), 0, 0, 0)
		if e != unix.EINTR {
			return r, e
		}
	}
}

// outBatch is packets queued to go out together.
type outBatch struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	addrs []unix.RawSockaddrInet4
	slab  []byte // packet i's buffer is slab[i*slot:]
	n     int

	// A send's arguments and results.
	sendFn     func(fd uintptr) bool
	from, sent int
	errno      unix.Errno
}

func newOutBatch() *outBatch {
	o := &outBatch{hdrs: make([]mmsghdr, batch), iovs: make([]unix.Iovec, batch),
		addrs: make([]unix.RawSockaddrInet4, batch), slab: make([]byte, batch*slot)}
	o.sendFn = o.send
	return o
}

func (o *outBatch) len() int { return o.n }

// add copies b into the next slot, addressed to to (len(b) ≤ slot, and
// the batch is not full).
func (o *outBatch) add(b []byte, to netip.AddrPort) {
	i := o.n
	buf := o.slab[i*slot : i*slot+len(b)]
	copy(buf, b)
	o.iovs[i].Base = &o.slab[i*slot]
	o.iovs[i].SetLen(len(b))
	a := &o.addrs[i]
	a.Family = unix.AF_INET
	a.Addr = to.Addr().As4()
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&a.Port))[:], to.Port())
	h := &o.hdrs[i].hdr
	h.Name = (*byte)(unsafe.Pointer(a))
	h.Namelen = unix.SizeofSockaddrInet4
	h.Iov = &o.iovs[i]
	h.SetIovlen(1)
	o.n++
}

func (o *outBatch) reset() { o.n = 0 }

// sendBatch sends the batch's packets from the from'th on, as many as
// one sendmmsg takes.
func (s *Sender) sendBatch(o *outBatch, from int) (int, error) {
	o.from = from
	if err := s.io.raw.Write(o.sendFn); err != nil {
		return 0, err
	}
	if o.errno != 0 {
		return 0, o.errno
	}
	return o.sent, nil
}

// send is sendmmsg on the socket fd, from o.from on (RawConn.Write's
// function, made once per batch so a send allocates nothing).
func (o *outBatch) send(fd uintptr) bool {
	r, e := mmsg(unix.SYS_SENDMMSG, fd, o.hdrs[o.from:o.n])
	if e == unix.EAGAIN {
		return false
	}
	o.sent, o.errno = int(r), e
	return true
}

// inBatch is the buffers a batch of packets is read into.
type inBatch struct {
	hdrs  []mmsghdr
	iovs  []unix.Iovec
	addrs []unix.RawSockaddrInet4
	bufs  [][]byte

	// A read's results.
	readFn func(fd uintptr) bool
	n      int
	errno  unix.Errno
}

func newInBatch() *inBatch {
	in := &inBatch{hdrs: make([]mmsghdr, batch), iovs: make([]unix.Iovec, batch),
		addrs: make([]unix.RawSockaddrInet4, batch), bufs: make([][]byte, batch)}
	for i := range in.bufs {
		in.bufs[i] = make([]byte, slot)
		in.iovs[i].Base = &in.bufs[i][0]
		in.iovs[i].SetLen(slot)
		h := &in.hdrs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&in.addrs[i]))
		h.Iov = &in.iovs[i]
		h.SetIovlen(1)
	}
	in.readFn = in.read
	return in
}

// readBatch reads the packets waiting on the socket, at least one.
func (b batchIO) readBatch(in *inBatch) (int, error) {
	for i := range in.hdrs {
		in.hdrs[i].hdr.Namelen = unix.SizeofSockaddrInet4
	}
	if err := b.raw.Read(in.readFn); err != nil {
		return 0, err
	}
	if in.errno != 0 {
		return 0, in.errno
	}
	return in.n, nil
}

// read is recvmmsg on the socket fd (RawConn.Read's function, made once).
func (in *inBatch) read(fd uintptr) bool {
	r, e := mmsg(unix.SYS_RECVMMSG, fd, in.hdrs)
	if e == unix.EAGAIN {
		return false
	}
	in.n, in.errno = int(r), e
	return true
}

// packet is the i'th packet read and where it came from.
func (in *inBatch) packet(i int) ([]byte, netip.AddrPort) {
	a := &in.addrs[i]
	if a.Family != unix.AF_INET {
		return nil, netip.AddrPort{}
	}
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&a.Port))[:])
	return in.bufs[i][:in.hdrs[i].n], netip.AddrPortFrom(netip.AddrFrom4(a.Addr), port)
}
