package bench

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The fleet's packets in batches. Sends: where the process may open a raw
// socket (root or CAP_NET_RAW), a shard sends every packet due on its tick
// in one sendmmsg (package rawudp), each built with its call's port as the
// source: the box receives exactly what it did before, each call's RTP
// from its own port. A write per packet on each call's own socket took
// about half of the caller process's CPU at 800 calls, most of it the
// system calls' own cost in a virtual machine. Reads: each call's socket
// every readEvery, what waits in one recvmmsg (readBatch).

// rawMsg is struct mmsghdr.
type rawMsg struct {
	hdr unix.Msghdr
	n   uint32
	_   [unsafe.Sizeof(uintptr(0)) - 4]byte
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
