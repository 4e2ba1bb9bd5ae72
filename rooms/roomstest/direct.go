package roomstest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/pion/ice/v4"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"

	"github.com/stackbone/box/internal/rawudp"
	"github.com/stackbone/box/rooms/internal/srtpconn"
)

// direct is a caller's media without a PeerConnection: pion's ICE agent
// (controlling, loopback host candidates), a DTLS server (or client, as
// the answer's setup says) and two SRTP contexts, with one goroutine that
// reads the ICE connection and hands DTLS records to the handshake; once
// keyed, the socket's reader decrypts the box's SRTP where it reads it
// (srtpconn.Net taps). On the wire it is the same peer as the
// PeerConnection one (ICE, DTLS-SRTP, rtcp-mux, PCMU); it skips the
// PeerConnection's goroutine hops (its socket reader, its DTLS/SRTP
// demultiplexer, its SRTP session reader, the track reader each pass the
// packet on), which in a load run cost the callers as much as the box's
// own peer costs the box.
type direct struct {
	agent *ice.Agent
	net   *srtpconn.Net // opened the agent's sockets
	cert  tls.Certificate
	fp    string // the certificate's SHA-256 fingerprint, as SDP writes it
	ssrc  uint32

	conn *ice.Conn
	dtls *dtls.Conn
	pipe *srtpconn.Pipe
	enc  *srtp.Context
	// lastSR is the box's last RTCP sender report.
	lastSR atomic.Pointer[rtcp.SenderReport]

	// The receiving side: packets come from the reader of the ICE
	// connection until the call is keyed, then from the socket's reader
	// (srtpconn.Net.Tap); rmu keeps the two in order at the handover.
	rmu    sync.Mutex
	dec    *srtp.Context
	arrive func(*rtp.Packet)
	dst    []byte
	pkt    rtp.Packet
	hdr    rtp.Header // DecryptRTP allocates one per packet without it
	untap  func()

	wmu  sync.Mutex
	wbuf []byte // the plain packet
	ebuf []byte // the encrypted one
	// raw, when set, queues the encrypted packets in a batch from from to
	// to (the selected candidate pair) instead of writing the socket.
	raw      *rawudp.Sender
	from, to netip.AddrPort

	done   chan struct{}
	ended  atomic.Bool
	closed sync.Once
}

func newDirect() (*direct, error) {
	cert, err := selfsign.GenerateSelfSigned()
	if err != nil {
		return nil, err
	}
	n, err := srtpconn.NewNet()
	if err != nil {
		return nil, err
	}
	agent, err := ice.NewAgent(&ice.AgentConfig{
		Net:              n,
		NetworkTypes:     []ice.NetworkType{ice.NetworkTypeUDP4},
		CandidateTypes:   []ice.CandidateType{ice.CandidateTypeHost},
		IPFilter:         func(ip net.IP) bool { return ip.IsLoopback() },
		IncludeLoopback:  true,
		MulticastDNSMode: ice.MulticastDNSModeDisabled,
	})
	if err != nil {
		return nil, err
	}
	return &direct{agent: agent, net: n, cert: cert, dst: make([]byte, 1500), fp: srtpconn.Fingerprint(cert.Certificate[0]), ssrc: rand.Uint32(),
		wbuf: make([]byte, 1500), ebuf: make([]byte, 1500), done: make(chan struct{})}, nil
}

// offer gathers the candidates and writes the offer: one sendrecv PCMU
// audio section, bundled, rtcp-mux, DTLS role actpass.
func (d *direct) offer(ctx context.Context) (string, error) {
	gathered := make(chan struct{})
	var mu sync.Mutex
	var cands []string
	if err := d.agent.OnCandidate(func(c ice.Candidate) {
		if c == nil {
			close(gathered)
			return
		}
		mu.Lock()
		cands = append(cands, c.Marshal())
		mu.Unlock()
	}); err != nil {
		return "", err
	}
	if err := d.agent.GatherCandidates(); err != nil {
		return "", err
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	ufrag, pwd, err := d.agent.GetLocalUserCredentials()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=- %d 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\na=msid-semantic: WMS caller\r\n", rand.Uint64()>>2)
	b.WriteString("m=audio 9 UDP/TLS/RTP/SAVPF 0\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n")
	fmt.Fprintf(&b, "a=ice-ufrag:%s\r\na=ice-pwd:%s\r\na=fingerprint:sha-256 %s\r\na=setup:actpass\r\na=mid:0\r\na=sendrecv\r\n", ufrag, pwd, d.fp)
	fmt.Fprintf(&b, "a=msid:caller mic\r\na=rtcp-mux\r\na=rtpmap:0 PCMU/8000\r\na=ssrc:%d cname:caller\r\na=ssrc:%d msid:caller mic\r\n", d.ssrc, d.ssrc)
	mu.Lock()
	for _, c := range cands {
		fmt.Fprintf(&b, "a=candidate:%s\r\n", c)
	}
	mu.Unlock()
	b.WriteString("a=end-of-candidates\r\n")
	return b.String(), nil
}

// answered is what the caller needs of the box's answer.
type answered struct {
	ufrag, pwd, fingerprint, setup string
	candidates                     []string
}

func parseAnswer(sdp string) (answered, error) {
	var a answered
	for _, line := range strings.Split(sdp, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "a=ice-ufrag:"):
			a.ufrag = strings.TrimPrefix(line, "a=ice-ufrag:")
		case strings.HasPrefix(line, "a=ice-pwd:"):
			a.pwd = strings.TrimPrefix(line, "a=ice-pwd:")
		case strings.HasPrefix(line, "a=fingerprint:sha-256 "):
			a.fingerprint = strings.ToUpper(strings.TrimPrefix(line, "a=fingerprint:sha-256 "))
		case strings.HasPrefix(line, "a=setup:"):
			a.setup = strings.TrimPrefix(line, "a=setup:")
		case strings.HasPrefix(line, "a=candidate:"):
			a.candidates = append(a.candidates, strings.TrimPrefix(line, "a="))
		}
	}
	if a.ufrag == "" || a.pwd == "" || a.fingerprint == "" || len(a.candidates) == 0 {
		return a, errors.New("roomstest: the answer lacks ICE credentials, a SHA-256 fingerprint or candidates")
	}
	return a, nil
}

// connect runs ICE, then DTLS, and keys SRTP; frames arriving from then on
// go to arrive.
func (d *direct) connect(ctx context.Context, answer string, arrive func(*rtp.Packet)) error {
	a, err := parseAnswer(answer)
	if err != nil {
		return err
	}
	for _, raw := range a.candidates {
		c, err := ice.UnmarshalCandidate(raw)
		if err != nil {
			return fmt.Errorf("roomstest: answer candidate: %w", err)
		}
		if err := d.agent.AddRemoteCandidate(c); err != nil {
			return err
		}
	}
	if err := d.agent.OnConnectionStateChange(func(s ice.ConnectionState) {
		if s == ice.ConnectionStateFailed || s == ice.ConnectionStateClosed || s == ice.ConnectionStateDisconnected {
			d.ended.Store(true)
		}
	}); err != nil {
		return err
	}
	if d.conn, err = d.agent.Dial(ctx, a.ufrag, a.pwd); err != nil {
		return fmt.Errorf("roomstest: ICE: %w", err)
	}
	d.pipe = srtpconn.NewPipe(d.conn)
	d.arrive = arrive
	go d.read()
	client := a.setup == "passive" // the box waits: the caller starts the handshake
	if d.dtls, err = srtpconn.Handshake(ctx, d.pipe, d.cert, a.fingerprint, client); err != nil {
		return err
	}
	go func() { // the box's close_notify ends the call
		buf := make([]byte, 1500)
		for {
			if _, err := d.dtls.Read(buf); err != nil {
				d.ended.Store(true)
				return
			}
		}
	}()
	var dec *srtp.Context
	if d.enc, dec, err = srtpconn.Contexts(d.dtls, client); err != nil {
		return err
	}
	d.rmu.Lock()
	d.dec = dec
	d.rmu.Unlock()
	d.untap = d.net.Tap(netip.AddrPort{}, d.handle)
	return nil
}

// read is the one goroutine that reads the ICE connection: DTLS records
// to the handshake, SRTP to handle until the socket's reader taps it.
func (d *direct) read() {
	defer close(d.done)
	buf := make([]byte, 1500)
	for {
		n, err := d.conn.Read(buf)
		if err != nil {
			d.ended.Store(true)
			d.pipe.Close()
			return
		}
		b := buf[:n]
		if srtpconn.IsDTLS(b) {
			d.pipe.Deliver(b)
		} else if srtpconn.IsRTP(b) {
			d.handle(b)
		}
	}
}

// handle takes one SRTP or SRTCP packet: RTP decrypted and handed to
// arrive, the box's RTCP sender reports kept (the last one).
func (d *direct) handle(b []byte) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	if d.dec == nil {
		return
	}
	if srtpconn.IsRTCP(b) {
		if plain, err := d.dec.DecryptRTCP(d.dst, b, nil); err == nil {
			if pkts, err := rtcp.Unmarshal(plain); err == nil {
				for _, p := range pkts {
					if sr, ok := p.(*rtcp.SenderReport); ok {
						d.lastSR.Store(sr)
					}
				}
			}
		}
		return
	}
	plain, err := d.dec.DecryptRTP(d.dst, b, &d.hdr)
	if err != nil || d.pkt.Unmarshal(plain) != nil {
		return
	}
	d.arrive(&d.pkt)
}

// writeRTP encrypts and sends one packet with the caller's SSRC.
func (d *direct) writeRTP(p *rtp.Packet) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	p.SSRC = d.ssrc
	n, err := p.MarshalTo(d.wbuf)
	if err != nil {
		return err
	}
	out, err := d.enc.EncryptRTP(d.ebuf[:0], d.wbuf[:n], &p.Header)
	if err != nil {
		return err
	}
	if d.raw != nil {
		return d.raw.Queue(d.from, d.to, out)
	}
	_, err = d.conn.Write(out)
	return err
}

// batchOn sends the caller's packets through raw from now on, from and to
// the addresses ICE selected; where they are not IPv4 UDP addresses each
// packet is still written on its own.
func (d *direct) batchOn(raw *rawudp.Sender) {
	l, lok := d.conn.LocalAddr().(*net.UDPAddr)
	r, rok := d.conn.RemoteAddr().(*net.UDPAddr)
	if !lok || !rok || l.IP.To4() == nil || r.IP.To4() == nil {
		return
	}
	d.wmu.Lock()
	d.raw, d.from, d.to = raw, l.AddrPort(), r.AddrPort()
	d.wmu.Unlock()
}

func (d *direct) isEnded() bool { return d.ended.Load() }

// close sends DTLS close_notify (the box sees the caller leave) and stops
// the agent.
func (d *direct) close() {
	d.closed.Do(func() {
		d.ended.Store(true)
		if d.untap != nil {
			d.untap()
		}
		if d.dtls != nil {
			_ = d.dtls.Close()
		}
		_ = d.agent.Close()
		if d.conn != nil {
			<-d.done
		}
	})
}
