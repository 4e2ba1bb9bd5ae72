package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	sipgosip "github.com/emiago/sipgo/sip"
	"github.com/pion/sdp/v3"
	"github.com/zaf/g711"
	"golang.org/x/sys/unix"

	"github.com/stackbone/box/internal/mmsg"
	"github.com/stackbone/box/internal/rawudp"
	"github.com/stackbone/box/voice"
)

// fleet is the load generator of `stackbone bench caller`: it signals
// through diago's SIP stack as the in-process generator does, but carries
// every call's RTP itself, the way a media gateway does, so that the
// load costs the machine little beside the box it measures. Each call has
// a UDP socket of its own (its port is in the offer, as a carrier's would
// be); one goroutine per processor sends every call's packets on a 1 ms
// tick (each call on its own millisecond of the 20 ms cycle, so the box
// meets them spread as real calls are; a tick's packets in one sendmmsg
// where the process may open a raw socket, fleetbatch.go) and reads each
// call's socket every readEvery, the packets waiting in one recvmmsg.
// Arrival times are the kernel's (SO_TIMESTAMPNS), so a late read does not
// show as the box's jitter.
type fleet struct {
	gen    *generator
	shards []*fleetShard
	stop   chan struct{}
	done   sync.WaitGroup
}

// fleetCall is one call's media.
type fleetCall struct {
	fd       int
	rslot    int            // the millisecond of the readEvery cycle it is read on
	src, dst netip.AddrPort // the call's RTP address and the box's for it
	slot     int            // the millisecond of the 20 ms cycle it sends on
	seq      uint16
	ts       uint32
	ssrc     uint32
	frame    int
	from, to int64 // the measurement window, Unix ns
	last     int64 // the last packet's arrival, Unix ns
	lastSeq  uint16
	st       callStats
	removed  chan struct{}
}

// fleetShard is one goroutine's calls.
type fleetShard struct {
	raw     *rawudp.Sender // nil: each call writes its own socket
	in      *mmsg.Batch
	mu      sync.Mutex
	adding  []*fleetCall
	leaving []*fleetCall
	calls   map[int32]*fleetCall
	slots   [20][]*fleetCall
	reads   [readEvery][]*fleetCall
}

// readEvery is how often (in 1 ms ticks) a call's socket is read: its
// packets since, about five, in one recvmmsg rather than a wake-up and a
// read for each. The arrival times are the kernel's, so reading later
// changes no figure; the socket's buffer holds hundreds of packets.
const readEvery = 100

func newFleet(ctx context.Context) (*fleet, error) {
	gen, err := newGenerator(ctx)
	if err != nil {
		return nil, err
	}
	f := &fleet{gen: gen, stop: make(chan struct{})}
	n := runtime.GOMAXPROCS(0)
	raws := make([]*rawudp.Sender, 0, n)
	for range n {
		r, err := rawudp.New(12 + 160)
		if err != nil {
			// Not permitted: every call reads and writes its own socket.
			for _, r := range raws {
				_ = r.Close()
			}
			raws = nil
			break
		}
		raws = append(raws, r)
	}
	for i := range n {
		s := &fleetShard{in: newReadBatch(), calls: map[int32]*fleetCall{}}
		if raws != nil {
			s.raw = raws[i]
		}
		f.shards = append(f.shards, s)
		f.done.Add(1)
		go pprof.Do(ctx, pprof.Labels("side", "generator"), func(context.Context) {
			defer f.done.Done()
			s.run(f.stop)
		})
	}
	return f, nil
}

func (f *fleet) close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.done.Wait()
	for _, s := range f.shards {
		if s.raw != nil {
			_ = s.raw.Close()
		}
	}
	f.gen.close()
}

// The payloads every call streams: 1 s of a voiced tone, 2.5 s of quiet.
var fleetVoiced, fleetQuiet = func() ([]byte, []byte) {
	v, q := make([]byte, 160), make([]byte, 160)
	for i := range v {
		v[i] = g711.EncodeUlawFrame(int16(9000 * math.Sin(2*math.Pi*300*float64(i)/8000)))
		q[i] = g711.EncodeUlawFrame(int16((i*7919)%61 - 30))
	}
	return v, q
}()

// run sends and reads its calls' packets until stop.
func (s *fleetShard) run(stop <-chan struct{}) {
	pkt := make([]byte, 12+160)
	start := time.Now()
	for tick := 0; ; tick++ {
		select {
		case <-stop:
			s.mu.Lock()
			for _, c := range s.adding {
				close(c.removed)
			}
			for _, c := range s.leaving {
				close(c.removed)
			}
			for _, c := range s.calls {
				close(c.removed)
			}
			s.adding, s.leaving, s.calls = nil, nil, nil
			s.mu.Unlock()
			return
		default:
		}
		s.apply()
		if s.raw != nil {
			for _, c := range s.slots[tick%20] {
				c.fill(pkt)
				_ = s.raw.Queue(c.src, c.dst, pkt)
			}
			s.raw.Flush()
		} else {
			for _, c := range s.slots[tick%20] {
				c.send(pkt)
			}
		}
		for _, c := range s.reads[tick%readEvery] {
			drain(s.in, c)
		}
		time.Sleep(time.Until(start.Add(time.Duration(tick+1) * time.Millisecond)))
	}
}

// apply takes the calls added and removed since the last tick.
func (s *fleetShard) apply() {
	s.mu.Lock()
	adding, leaving := s.adding, s.leaving
	s.adding, s.leaving = nil, nil
	s.mu.Unlock()
	for _, c := range adding {
		s.calls[int32(c.fd)] = c
		s.slots[c.slot] = append(s.slots[c.slot], c)
		s.reads[c.rslot] = append(s.reads[c.rslot], c)
	}
	for _, c := range leaving {
		if s.calls[int32(c.fd)] != c {
			continue
		}
		drain(s.in, c) // what came since its last read
		delete(s.calls, int32(c.fd))
		s.slots[c.slot] = without(s.slots[c.slot], c)
		s.reads[c.rslot] = without(s.reads[c.rslot], c)
		close(c.removed)
	}
}

// without is calls without c (whose order does not matter).
func without(calls []*fleetCall, c *fleetCall) []*fleetCall {
	for i, o := range calls {
		if o == c {
			calls[i] = calls[len(calls)-1]
			return calls[:len(calls)-1]
		}
	}
	return calls
}

func (c *fleetCall) send(pkt []byte) {
	c.fill(pkt)
	// A send the kernel refuses shows as the box's loss, which the box
	// counts; the generator keeps its cadence.
	_, _ = unix.Write(c.fd, pkt)
}

// fill writes the call's next RTP packet (12+160 bytes) into pkt.
func (c *fleetCall) fill(pkt []byte) {
	pkt[0], pkt[1] = 0x80, 0 // version 2, PCMU
	if c.frame == 0 {
		pkt[1] |= 0x80 // marker: the first packet
	}
	binary.BigEndian.PutUint16(pkt[2:], c.seq)
	binary.BigEndian.PutUint32(pkt[4:], c.ts)
	binary.BigEndian.PutUint32(pkt[8:], c.ssrc)
	p := fleetQuiet
	if c.frame%175 < 50 {
		p = fleetVoiced
	}
	copy(pkt[12:], p)
	c.seq++
	c.ts += 160
	c.frame++
}

// measure takes one packet the box sent the call, which arrived at at
// (Unix ns; 0: not known, now).
func (c *fleetCall) measure(buf []byte, at int64) {
	if len(buf) < 12 || buf[0]>>6 != 2 || buf[1]&0x7f != 0 {
		return // not PCMU RTP (a stray RTCP report)
	}
	if at == 0 {
		at = time.Now().UnixNano()
	}
	seq := binary.BigEndian.Uint16(buf[2:])
	if at > c.from && at < c.to {
		c.st.packets++
		if c.last != 0 {
			gap := time.Duration(at-c.last) - voice.FrameDuration
			c.st.jitter = append(c.st.jitter, time.Duration(math.Abs(float64(gap))))
			if d := seq - c.lastSeq; d > 1 && d < 1000 {
				c.st.lost += int64(d - 1)
			}
		}
		c.last = at
	}
	c.lastSeq = seq
}

// kernelTime is the SCM_TIMESTAMPNS a received packet carries (Unix ns),
// 0 when it carries none.
func kernelTime(oob []byte) int64 {
	const hdr = unix.SizeofCmsghdr
	if len(oob) < hdr+16 {
		return 0
	}
	level := int32(binary.NativeEndian.Uint32(oob[8:]))
	typ := int32(binary.NativeEndian.Uint32(oob[12:]))
	if level != unix.SOL_SOCKET || typ != unix.SCM_TIMESTAMPNS {
		return 0
	}
	sec := int64(binary.NativeEndian.Uint64(oob[hdr:]))
	nsec := int64(binary.NativeEndian.Uint64(oob[hdr+8:]))
	return sec*1e9 + nsec
}

// rtpSocket opens a non-blocking UDP socket on loopback with kernel receive
// times at an even port, and a socket on the odd port after it that takes
// the box's RTCP reports (unread: a full buffer drops them), as a phone's
// pair would; it returns both and the RTP port.
func rtpSocket() (rtp, rtcp, port int, err error) {
	for range 200 {
		port = 2 * (16384 + rand.IntN(13000)) // even, in the ephemeral range
		if rtp, err = udpSocket(port); err != nil {
			continue
		}
		if rtcp, err = udpSocket(port + 1); err != nil {
			unix.Close(rtp)
			continue
		}
		if err = unix.SetsockoptInt(rtp, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			unix.Close(rtp)
			unix.Close(rtcp)
			return -1, -1, 0, err
		}
		return rtp, rtcp, port, nil
	}
	return -1, -1, 0, fmt.Errorf("bench caller: no free port pair: %w", err)
}

func udpSocket(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// fleetOffer is the SDP a call offers: PCMU and keypad events at port.
func fleetOffer(port int) []byte {
	id := strconv.FormatUint(rand.Uint64N(1<<62), 10)
	return []byte("v=0\r\no=- " + id + " " + id + " IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" +
		"m=audio " + strconv.Itoa(port) + " RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\n" +
		"a=fmtp:101 0-16\r\na=ptime:20\r\na=sendrecv\r\n")
}

// answerAddr is the audio address of an SDP answer.
func answerAddr(body []byte) (*unix.SockaddrInet4, error) {
	var sd sdp.SessionDescription
	if err := sd.Unmarshal(body); err != nil {
		return nil, err
	}
	host := ""
	if sd.ConnectionInformation != nil && sd.ConnectionInformation.Address != nil {
		host = sd.ConnectionInformation.Address.Address
	}
	for _, m := range sd.MediaDescriptions {
		if m.MediaName.Media != "audio" {
			continue
		}
		if m.ConnectionInformation != nil && m.ConnectionInformation.Address != nil {
			host = m.ConnectionInformation.Address.Address
		}
		ip := net.ParseIP(host).To4()
		if ip == nil || m.MediaName.Port.Value <= 0 {
			return nil, fmt.Errorf("answer's audio address %q port %d", host, m.MediaName.Port.Value)
		}
		return &unix.SockaddrInet4{Port: m.MediaName.Port.Value, Addr: [4]byte(ip)}, nil
	}
	return nil, errors.New("answer has no audio")
}

// call places one call, carries its media on a shard until stop (or the box
// hangs up), and returns what it measured and its setup time (INVITE to
// 200 OK).
func (f *fleet) call(ctx context.Context, shard int, boxAddr, caller string, from, to time.Time, stop <-chan struct{}) (callStats, time.Duration, error) {
	fd, rtcp, port, err := rtpSocket()
	if err != nil {
		return callStats{}, 0, err
	}
	defer unix.Close(fd)
	defer unix.Close(rtcp)
	var recipient sipgosip.Uri
	if err := sipgosip.ParseUri("sip:100@"+boxAddr, &recipient); err != nil {
		return callStats{}, 0, err
	}
	d, err := f.gen.dg.NewDialog(recipient, diago.NewDialogOptions{})
	if err != nil {
		return callStats{}, 0, err
	}
	defer d.Close()
	host, _, _ := net.SplitHostPort(boxAddr)
	req := d.InviteRequest
	from0 := sipgosip.NewParams()
	from0.Add("tag", sipgosip.GenerateTagN(16))
	req.AppendHeader(&sipgosip.FromHeader{Address: sipgosip.Uri{Scheme: "sip", User: caller, Host: host}, Params: from0})
	req.AppendHeader(&d.UA.ContactHDR)
	req.AppendHeader(sipgosip.NewHeader("Content-Type", "application/sdp"))
	req.SetBody(fleetOffer(port))
	if err := sipgo.ClientRequestBuild(d.UA.Client, req); err != nil {
		return callStats{}, 0, err
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := d.DialogClientSession.Invite(ictx); err != nil {
		return callStats{}, 0, err
	}
	if err := d.DialogClientSession.WaitAnswer(ictx, sipgo.AnswerOptions{}); err != nil {
		return callStats{}, 0, err
	}
	setup := time.Since(start)
	defer func() {
		hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.DialogClientSession.Bye(hctx)
		cancel()
	}()
	peer, err := answerAddr(d.InviteResponse.Body())
	if err != nil {
		return callStats{}, setup, err
	}
	if err := d.DialogClientSession.Ack(ictx); err != nil {
		return callStats{}, setup, err
	}
	if err := unix.Connect(fd, peer); err != nil {
		return callStats{}, setup, err
	}
	s := f.shards[shard%len(f.shards)]
	now := time.Now().UnixMilli()
	c := &fleetCall{fd: fd, rslot: int(now % readEvery), slot: int(now % 20), ssrc: rand.Uint32(), seq: uint16(rand.Uint32()),
		ts: rand.Uint32(), from: from.UnixNano(), to: to.UnixNano(), removed: make(chan struct{}),
		src: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)), dst: netip.AddrPortFrom(netip.AddrFrom4(peer.Addr), uint16(peer.Port))}
	s.mu.Lock()
	s.adding = append(s.adding, c)
	s.mu.Unlock()
	select {
	case <-stop:
	case <-d.Context().Done():
	case <-c.removed: // the fleet closed
	}
	s.mu.Lock()
	s.leaving = append(s.leaving, c)
	s.mu.Unlock()
	<-c.removed
	return c.st, setup, nil
}

// step holds n calls for the hold window and measures them, as the
// in-process generator's step does.
func (f *fleet) step(ctx context.Context, boxAddr string, n int, number *int, rate int, hold time.Duration, window func(end bool)) (CallStep, error) {
	return runStep(ctx, n, number, rate, hold, window, func(ctx context.Context, i int, caller string, from, to time.Time, stop <-chan struct{}) (callStats, time.Duration, error) {
		return f.call(ctx, i, boxAddr, caller, from, to, stop)
	})
}
