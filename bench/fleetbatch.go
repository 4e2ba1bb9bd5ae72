package bench

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The fleet's packets in batches. Sends: where the process may open a raw
// socket (root or CAP_NET_RAW), a shard's raw socket sends every packet
// due on its tick in one sendmmsg, each built with its call's port as the
// source: the box receives exactly what it did before, each call's RTP
// from its own port. A write per packet on each call's own socket took
// about half of the caller process's CPU at 800 calls, most of it the
// system calls' own cost in a virtual machine. An IPPROTO_RAW socket
// receives nothing, so nothing is added to the way of the box's packets
// (on loopback the sender pays for their delivery). Reads: each call's
// socket every readEvery, what waits in one recvmmsg (readBatch).

// rawBatch is how many packets one sendmmsg carries at most.
const rawBatch = 128

// rawPacket is the size of a packet the fleet sends: IPv4 and UDP headers
// and a 20 ms PCMU RTP packet.
const rawPacket = 20 + 8 + 12 + 160

// rawMsg is struct mmsghdr.
type rawMsg struct {
	hdr unix.Msghdr
	n   uint32
	_   [unsafe.Sizeof(uintptr(0)) - 4]byte
}

// rawSender is one shard's raw socket and batch.
type rawSender struct {
	fd    int
	msgs  []rawMsg
	iovs  []unix.Iovec
	addrs []unix.RawSockaddrInet4
	slab  []byte
	n     int
}

// newRawSender opens a raw socket; an error when the process may not
// (then every call writes its own socket).
func newRawSender() (*rawSender, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("bench caller: raw socket: %w", err)
	}
	r := &rawSender{fd: fd, msgs: make([]rawMsg, rawBatch), iovs: make([]unix.Iovec, rawBatch),
		addrs: make([]unix.RawSockaddrInet4, rawBatch), slab: make([]byte, rawBatch*rawPacket)}
	for i := range r.msgs {
		r.iovs[i].Base = &r.slab[i*rawPacket]
		r.iovs[i].SetLen(rawPacket)
		h := &r.msgs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&r.addrs[i]))
		h.Namelen = unix.SizeofSockaddrInet4
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
	}
	return r, nil
}

func (r *rawSender) close() { unix.Close(r.fd) }

// queue builds c's next packet in the batch, from c's port to its peer
// (sending the batch first when it is full).
func (r *rawSender) queue(c *fleetCall) {
	if r.n == rawBatch {
		r.flush()
	}
	b := r.slab[r.n*rawPacket : (r.n+1)*rawPacket]
	// IPv4; the kernel fills in the identification and the checksum.
	b[0], b[1] = 0x45, 0
	binary.BigEndian.PutUint16(b[2:], rawPacket)
	clear(b[4:8])
	b[8], b[9] = 64, unix.IPPROTO_UDP
	clear(b[10:12])
	copy(b[12:16], []byte{127, 0, 0, 1})
	copy(b[16:20], c.peer.Addr[:])
	// UDP, without a checksum (allowed over IPv4).
	binary.BigEndian.PutUint16(b[20:], uint16(c.port))
	binary.BigEndian.PutUint16(b[22:], uint16(c.peer.Port))
	binary.BigEndian.PutUint16(b[24:], rawPacket-20)
	clear(b[26:28])
	c.fill(b[28:])
	a := &r.addrs[r.n]
	a.Family = unix.AF_INET
	a.Addr = c.peer.Addr
	r.n++
}

// flush sends the packets queued. A packet the kernel refuses shows as the
// box's loss, which the box counts; the generator keeps its cadence.
func (r *rawSender) flush() {
	for from := 0; from < r.n; {
		sent, _, e := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(r.fd), uintptr(unsafe.Pointer(&r.msgs[from])), uintptr(r.n-from), 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || sent == 0 {
			break
		}
		from += int(sent)
	}
	r.n = 0
}

// readBatchLen is how many packets one read of a call's socket takes at
// most (readEvery holds about five).
const readBatchLen = 16

// readBatch is the buffers a call's waiting packets are read into.
type readBatch struct {
	msgs []rawMsg
	iovs []unix.Iovec
	bufs [][]byte
	oobs [][]byte
}

func newReadBatch() *readBatch {
	b := &readBatch{msgs: make([]rawMsg, readBatchLen), iovs: make([]unix.Iovec, readBatchLen),
		bufs: make([][]byte, readBatchLen), oobs: make([][]byte, readBatchLen)}
	for i := range b.msgs {
		b.bufs[i] = make([]byte, 1500)
		b.oobs[i] = make([]byte, unix.CmsgSpace(16))
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(len(b.bufs[i]))
		h := &b.msgs[i].hdr
		h.Iov = &b.iovs[i]
		h.SetIovlen(1)
	}
	return b
}

// drain reads the packets waiting on c's socket and measures each.
func (b *readBatch) drain(c *fleetCall) {
	for {
		for i := range b.msgs {
			b.msgs[i].hdr.Control = &b.oobs[i][0]
			b.msgs[i].hdr.SetControllen(len(b.oobs[i]))
		}
		n, _, e := unix.RawSyscall6(unix.SYS_RECVMMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&b.msgs[0])), uintptr(len(b.msgs)), unix.MSG_DONTWAIT, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return // EAGAIN: no more waits
		}
		for i := range int(n) {
			m := &b.msgs[i]
			c.measure(b.bufs[i][:m.n], kernelTime(b.oobs[i][:m.hdr.Controllen]))
		}
		if int(n) < len(b.msgs) {
			return
		}
	}
}
