package rtpmux

import (
	"net"
	"net/netip"
	"time"
)

// Reader reads an IPv4 UDP socket's packets in batches, as many as one
// system call takes (recvmmsg on Linux): what the mux's sockets do, for a
// socket that is read elsewhere (the browser calls' shared port, read by
// pion's UDP mux).
type Reader struct {
	io batchIO
	in *inBatch
}

// NewReader reads conn, an IPv4 socket, in batches.
func NewReader(conn *net.UDPConn) (*Reader, error) {
	bio, err := newBatchIO(conn)
	if err != nil {
		return nil, err
	}
	return &Reader{io: bio, in: newInBatch()}, nil
}

// Read waits for the socket's packets and reads those waiting, at least
// one; it says how many. The conn's read deadline applies.
func (r *Reader) Read() (int, error) { return r.io.readBatch(r.in) }

// ReadBy says whether every packet that arrived by t has been read and
// handed on (Front): the packets of a Read count as handed on at the
// next Read.
func (r *Reader) ReadBy(t time.Time) bool { return r.in.front.ReadBy(t) }

// Packet is the i'th packet of the last Read and where it came from (nil
// for a source that is not IPv4), valid until the next Read.
func (r *Reader) Packet(i int) ([]byte, netip.AddrPort) { return r.in.packet(i) }
