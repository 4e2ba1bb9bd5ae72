package rtpmux

import (
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stackbone/box/internal/mmsg"
)

// On Linux the batches go through sendmmsg and recvmmsg as raw system
// calls on headers built once per socket (package mmsg). x/net's WriteBatch and
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

// outBatch is packets queued to go out together.
type outBatch struct {
	m *mmsg.Batch
	n int

	// A send's arguments and results.
	sendFn     func(fd uintptr) bool
	from, sent int
	errno      unix.Errno
}

func newOutBatch() *outBatch {
	o := &outBatch{m: mmsg.New(batch, slot, mmsg.Options{Addrs: true})}
	o.sendFn = o.send
	return o
}

func (o *outBatch) len() int { return o.n }

// add copies b into the next slot, addressed to to (len(b) ≤ slot, and
// the batch is not full).
func (o *outBatch) add(b []byte, to netip.AddrPort) {
	i := o.n
	copy(o.m.Buf(i), b)
	o.m.SetLen(i, len(b))
	o.m.SetTo(i, to)
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
	n, e := o.m.Send(fd, o.from, o.n)
	if e == unix.EAGAIN {
		return false
	}
	o.sent, o.errno = n, e
	return true
}

// inBatch is the buffers a batch of packets is read into.
type inBatch struct {
	m     *mmsg.Batch
	front Front

	// A read's results.
	readFn func(fd uintptr) bool
	n      int
	errno  unix.Errno
}

func newInBatch() *inBatch {
	in := &inBatch{m: mmsg.New(batch, slot, mmsg.Options{Addrs: true})}
	in.readFn = in.read
	return in
}

// readBatch reads the packets waiting on the socket, at least one.
func (b batchIO) readBatch(in *inBatch) (int, error) {
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
	in.front.handed()
	n, e := in.m.Recv(fd, 0)
	now := time.Now().UnixNano()
	if e == unix.EAGAIN {
		in.front.empty(now)
		return false
	}
	if e == 0 {
		in.front.read(now, n == in.m.Cap())
	}
	in.n, in.errno = n, e
	return true
}

// packet is the i'th packet read and where it came from.
func (in *inBatch) packet(i int) ([]byte, netip.AddrPort) {
	from, ok := in.m.From(i)
	if !ok {
		return nil, netip.AddrPort{}
	}
	return in.m.Received(i), from
}
