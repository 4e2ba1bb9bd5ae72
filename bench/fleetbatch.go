package bench

import (
	"golang.org/x/sys/unix"

	"github.com/stackbone/box/internal/mmsg"
)

// The fleet's packets in batches. Sends: where the process may open a raw
// socket (root or CAP_NET_RAW), a shard sends every packet due on its tick
// in one sendmmsg (package rawudp), each built with its call's port as the
// source: the box receives exactly what it did before, each call's RTP
// from its own port. A write per packet on each call's own socket took
// about half of the caller process's CPU at 800 calls, most of it the
// system calls' own cost in a virtual machine. Reads: each call's socket
// every readEvery, what waits in one recvmmsg (readBatch).

// readBatchLen is how many packets one read of a call's socket takes at
// most (readEvery holds about five).
const readBatchLen = 16

// newReadBatch is the buffers a call's waiting packets are read into,
// each with room for its arrival time.
func newReadBatch() *mmsg.Batch {
	return mmsg.New(readBatchLen, 1500, mmsg.Options{Control: unix.CmsgSpace(16)})
}

// drain reads the packets waiting on c's socket into b and measures each.
func drain(b *mmsg.Batch, c *fleetCall) {
	for {
		n, e := b.Recv(uintptr(c.fd), unix.MSG_DONTWAIT)
		if e != 0 {
			return // EAGAIN: no more waits
		}
		for i := range n {
			c.measure(b.Received(i), kernelTime(b.Control(i)))
		}
		if n < b.Cap() {
			return
		}
	}
}
