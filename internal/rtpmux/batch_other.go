//go:build !linux

package rtpmux

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
)

// Elsewhere than Linux the batches go through x/net's WriteBatch and
// ReadBatch (a packet per system call where the system has no sendmmsg).

// batchIO is how a socket sends and reads its batches.
type batchIO struct{ pc *ipv4.PacketConn }

func newBatchIO(conn *net.UDPConn) (batchIO, error) {
	return batchIO{pc: ipv4.NewPacketConn(conn)}, nil
}

// outBatch is packets queued to go out together.
type outBatch struct {
	out  []ipv4.Message
	slab []byte // out[i]'s buffer is slab[i*slot:]
}

func newOutBatch() *outBatch {
	return &outBatch{slab: make([]byte, batch*slot), out: make([]ipv4.Message, 0, batch)}
}

func (o *outBatch) len() int { return len(o.out) }

// add copies b into the next slot, addressed to to (len(b) ≤ slot, and
// the batch is not full).
func (o *outBatch) add(b []byte, to netip.AddrPort) {
	i := len(o.out)
	buf := o.slab[i*slot : i*slot+len(b)]
	copy(buf, b)
	o.out = append(o.out, ipv4.Message{Buffers: [][]byte{buf}, Addr: net.UDPAddrFromAddrPort(to)})
}

func (o *outBatch) reset() {
	clear(o.out)
	o.out = o.out[:0]
}

// sendBatch sends the batch's packets from the from'th on, as many as
// one system call takes.
func (s *Sender) sendBatch(o *outBatch, from int) (int, error) {
	return s.io.pc.WriteBatch(o.out[from:], 0)
}

// inBatch is the buffers a batch of packets is read into.
type inBatch struct {
	ms    []ipv4.Message
	front Front // not kept here: every packet counts as read
}

func newInBatch() *inBatch {
	in := &inBatch{ms: make([]ipv4.Message, batch)}
	for i := range in.ms {
		in.ms[i].Buffers = [][]byte{make([]byte, slot)}
	}
	return in
}

// readBatch reads the packets waiting on the socket, at least one.
func (b batchIO) readBatch(in *inBatch) (int, error) {
	return b.pc.ReadBatch(in.ms, 0)
}

// packet is the i'th packet read and where it came from.
func (in *inBatch) packet(i int) ([]byte, netip.AddrPort) {
	return in.ms[i].Buffers[0][:in.ms[i].N], addrKey(in.ms[i].Addr)
}

func addrKey(a net.Addr) netip.AddrPort {
	u, ok := a.(*net.UDPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	k, _ := keyOf(u)
	return k
}
