package rooms

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/pion/ice/v4"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/srtp/v3"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/companding"
	"github.com/stackbone/box/internal/pace"
	"github.com/stackbone/box/internal/rtpmux"
	"github.com/stackbone/box/rooms/internal/srtpconn"
	"github.com/stackbone/box/voice"
)

// embeddedRate is the call's sample rate on the embedded peer: it speaks
// G.711 µ-law (PCMU), which every browser offers over WebRTC and which
// needs no cgo, so the box builds and offers browser calls anywhere. Opus
// (cgo over libopus) is used only on the LiveKit path.
const embeddedRate = 8000

// embedded is the backend where the box itself is the browser's WebRTC
// peer, signalled over HTTP: one offer, one answer, no trickle (both sides
// gather their host candidates first, which takes milliseconds; there is
// no STUN or TURN server to wait for).
type embedded struct {
	cfg config.EmbeddedRooms
	log *slog.Logger
	g   gathering
	mux *ice.MultiUDPMuxDefault // nil: a free port per room
	// muxNet opened the mux's sockets; a keyed call taps its caller's
	// packets there by the caller's address.
	muxNet *srtpconn.Net
	// pacing records each agent packet's interval error, as the SIP
	// server does (Service.Pacing).
	pacing voice.Pacing
}

func newEmbedded(cfg config.EmbeddedRooms, log *slog.Logger) (*embedded, error) {
	g, err := gatherOn(cfg)
	if err != nil {
		return nil, err
	}
	e := &embedded{cfg: cfg, log: log, g: g}
	if cfg.UDPPort != 0 {
		opts := []ice.UDPMuxFromPortOption{
			ice.UDPMuxFromPortWithInterfaceFilter(g.iface), ice.UDPMuxFromPortWithIPFilter(g.ip),
			ice.UDPMuxFromPortWithNetworks(ice.NetworkTypeUDP4, ice.NetworkTypeUDP6),
		}
		if g.loopback {
			opts = append(opts, ice.UDPMuxFromPortWithLoopback())
		}
		if e.muxNet, err = srtpconn.NewNet(); err != nil {
			return nil, err
		}
		// One reader takes every caller's packets: a batch per system
		// call.
		e.muxNet.BatchReads()
		opts = append(opts, ice.UDPMuxFromPortWithNet(e.muxNet))
		mux, err := ice.NewMultiUDPMuxFromPort(cfg.UDPPort, opts...)
		if err != nil {
			return nil, fmt.Errorf("rooms: embedded udp port %d: %w", cfg.UDPPort, err)
		}
		if len(mux.GetListenAddresses()) == 0 {
			_ = mux.Close()
			return nil, fmt.Errorf("rooms: embedded udp port %d: no address matches rooms.embedded interfaces/ips", cfg.UDPPort)
		}
		e.mux = mux
	}
	log.Info("embedded rooms gather ICE candidates", "interfaces", listOr(cfg.Interfaces, "all up"),
		"ips", listOr(cfg.IPs, "all"), "loopback", g.loopback, "publicIPs", listOr(cfg.PublicIPs, "none"),
		"udpPort", cfg.UDPPort, "mdns", !cfg.NoMDNS)
	return e, nil
}

// gathering is where the peer gathers candidates: filters on interface
// names and addresses, and whether loopback addresses are among them.
type gathering struct {
	iface    func(string) bool
	ip       func(net.IP) bool
	loopback bool
}

// gatherOn turns the config into candidate filters. By default every
// address of every interface that is up, loopback included (a Go caller or
// a browser with its loopback flag on this machine uses it; a browser as
// it ships uses the machine's own address) unless a public address is
// advertised, which must not stand for the loopback one.
func gatherOn(cfg config.EmbeddedRooms) (gathering, error) {
	g := gathering{iface: func(string) bool { return true }, ip: func(net.IP) bool { return true }}
	if len(cfg.Interfaces) > 0 {
		names := map[string]bool{}
		for _, n := range cfg.Interfaces {
			// A misspelt name would leave the peer without candidates and
			// every call without media: refuse it at start.
			if _, err := net.InterfaceByName(n); err != nil {
				return g, fmt.Errorf("rooms: embedded interface %q: %w", n, err)
			}
			names[n] = true
		}
		g.iface = func(n string) bool { return names[n] }
	}
	if len(cfg.IPs) > 0 {
		var keep []net.IP
		for _, s := range cfg.IPs {
			ip := net.ParseIP(s)
			if ip == nil {
				return g, fmt.Errorf("rooms: embedded ip %q is not an IP address", s)
			}
			if !localAddr(ip) {
				return g, fmt.Errorf("rooms: embedded ip %s is not an address of this machine (for the address browsers should use, set publicIPs)", s)
			}
			keep = append(keep, ip)
			g.loopback = g.loopback || ip.IsLoopback()
		}
		g.ip = func(ip net.IP) bool {
			for _, k := range keep {
				if k.Equal(ip) {
					return true
				}
			}
			return false
		}
	} else {
		g.loopback = len(cfg.PublicIPs) == 0
	}
	if len(cfg.Interfaces) > 0 && g.loopback {
		// Loopback addresses only if a named interface is the loopback one.
		g.loopback = false
		for _, n := range cfg.Interfaces {
			if ifc, err := net.InterfaceByName(n); err == nil && ifc.Flags&net.FlagLoopback != 0 {
				g.loopback = true
			}
		}
	}
	return g, nil
}

// localAddr reports whether ip is an address of one of this machine's
// interfaces.
func localAddr(ip net.IP) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

func listOr(l []string, none string) string {
	if len(l) == 0 {
		return none
	}
	return strings.Join(l, ",")
}

func (e *embedded) name() string { return BackendEmbedded }
func (e *embedded) rate() int    { return embeddedRate }

func (e *embedded) close() error {
	if e.mux != nil {
		return e.mux.Close()
	}
	return nil
}

// embeddedPeer is one room's WebRTC peer, built from pion's ICE, DTLS and
// SRTP packages rather than a PeerConnection: one goroutine reads the ICE
// connection and passes DTLS records to the handshake; once keyed, the
// socket's own reader decrypts the caller's RTP where it reads it (rtpIn,
// srtpconn.Net taps); and the call's playout encrypts and sends each agent
// packet itself. A PeerConnection passes every received
// packet through three more goroutines (its DTLS/SRTP demultiplexer, its
// SRTP session reader, the track reader) and every sent one through its
// interceptor chain; on a 2-core machine that plumbing cost as much CPU per
// call as everything else the box does for it (bench rooms, beside bare
// pion peers). What the peer speaks is what a browser expects of an
// answerer: ICE (full, controlled; mDNS names of the browser resolved),
// DTLS-SRTP as the DTLS client, rtcp-mux, one sendrecv PCMU audio
// section, and an RTCP sender report with the reception report of the
// caller's stream every few seconds.
type embeddedPeer struct {
	e    *embedded
	r    *room
	ctx  context.Context // ends with the peer
	stop context.CancelFunc

	mu      sync.Mutex
	agent   *ice.Agent
	net     *srtpconn.Net // opened the agent's sockets (or the mux's)
	untap   func()        // set once the caller's packets are tapped
	conn    *ice.Conn
	dtls    *dtls.Conn
	done    bool
	offered bool
	ready   bool        // SRTP keyed: agent audio goes out
	down    atomic.Bool // the browser left (ICE failed or closed, DTLS closed)
	// snd, on the shared port, sends the agent's packets to the caller
	// at to with the other calls' due at the same moment (one system
	// call), when the pacer's round ends; nil: each goes out through the
	// ICE connection.
	snd *rtpmux.Sender
	to  netip.AddrPort
	// rd reads the caller's packets with the other calls' on the shared
	// port (voice.SharedReader); nil: they come as they are read.
	rd *rtpmux.Reader

	smu       sync.Mutex // the sending side
	enc       *srtp.Context
	pcmu      []byte     // one encoded frame
	plain     []byte     // the packet before encryption
	sealed    []byte     // and after
	pkt       rtp.Packet // the last packet's header
	lastSent  time.Time  // when the last packet went out
	talkspurt bool       // the next frame starts a talkspurt
	sent      uint32     // packets and payload octets sent, for the sender report
	octets    uint32
	lastSR    time.Time

	in rtpIn   // the caller's packets
	rx rxStats // the caller's stream, for the reception report
}

// rtpIn decrypts and decodes the caller's RTP into frames for the
// controller. Packets reach it from the reader of the ICE connection until
// the call is keyed and tapped, then from the socket's reader (see
// srtpconn.Net); its lock keeps the two in order while one hands over to
// the other.
type rtpIn struct {
	p     *embeddedPeer
	mu    sync.Mutex
	dec   *srtp.Context
	plain []byte
	pcm   []int16
	pkt   rtp.Packet
	hdr   rtp.Header // DecryptRTP allocates one per packet without it
}

// handle takes one SRTP or SRTCP packet: the caller's RTP is heard (any
// packet that is not PCMU only says the caller is there); RTCP (the
// browser's reports), a packet before the keys or one that does not
// decrypt or parse is dropped.
func (in *rtpIn) handle(b []byte) {
	if srtpconn.IsRTCP(b) {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.dec == nil {
		return
	}
	out, err := in.dec.DecryptRTP(in.plain, b, &in.hdr)
	if err != nil || in.pkt.Unmarshal(out) != nil {
		return
	}
	p := in.p
	p.rx.received(&in.pkt)
	if in.pkt.PayloadType != 0 || len(in.pkt.Payload) == 0 {
		p.r.call.Alive()
		return
	}
	in.pcm = companding.AppendFromUlaw(in.pcm[:0], in.pkt.Payload)
	p.r.call.Hear(in.pcm)
}

func (in *rtpIn) key(dec *srtp.Context) {
	in.mu.Lock()
	in.dec = dec
	in.mu.Unlock()
}

// srInterval is how often the peer sends an RTCP sender report.
const srInterval = 5 * time.Second

func (e *embedded) open(ctx context.Context, r *room) (Join, error) {
	p := &embeddedPeer{e: e, r: r, pcmu: make([]byte, 0, 160), plain: make([]byte, 1500), sealed: make([]byte, 1500)}
	p.in = rtpIn{p: p, plain: make([]byte, 1500), pcm: make([]int16, 0, 160)}
	p.ctx, p.stop = context.WithCancel(context.WithoutCancel(ctx))
	p.pkt.Version = 2
	p.pkt.PayloadType = 0
	p.pkt.SSRC = rand.Uint32()
	p.pkt.SequenceNumber = uint16(rand.Uint32())
	p.pkt.Timestamp = rand.Uint32()
	r.media = newPeerMedia(p.send)
	r.media.mark = p.markTalkspurt
	r.media.batch = p.batch
	r.media.readBy = p.readBy
	r.answer = p.answer
	r.teardown = p.close
	return Join{OfferURL: "/api/voice/rooms/" + r.id + "/offer"}, nil
}

// send writes one agent frame as one PCMU packet. Its RTP time advances by
// a frame, except at a talkspurt that starts ahead of the 20 ms schedule
// (see voice.Talkspurter): that packet carries the marker bit and is
// stamped with the time that really passed since the previous one, so the
// browser's jitter buffer sees a new talkspurt on time, not a packet early.
func (p *embeddedPeer) send(pcm []int16) error {
	p.mu.Lock()
	conn, ready, snd, to := p.conn, p.ready, p.snd, p.to
	p.mu.Unlock()
	if !ready {
		return nil
	}
	p.smu.Lock()
	defer p.smu.Unlock()
	p.pcmu = companding.AppendUlaw(p.pcmu[:0], pcm)
	now := time.Now()
	if !p.lastSent.IsZero() {
		step := uint32(len(pcm))
		if gap := now.Sub(p.lastSent); p.talkspurt && gap < voice.FrameDuration {
			step = uint32(int64(gap) * embeddedRate / int64(time.Second))
		} else {
			p.e.pacing.Record(gap - voice.FrameDuration)
		}
		p.pkt.Timestamp += step
		p.pkt.SequenceNumber++
	}
	p.pkt.Marker, p.talkspurt = p.talkspurt, false
	p.lastSent = now
	p.pkt.Payload = p.pcmu
	n, err := p.pkt.MarshalTo(p.plain)
	if err != nil {
		return err
	}
	out, err := p.enc.EncryptRTP(p.sealed[:0], p.plain[:n], &p.pkt.Header)
	if err != nil {
		return err
	}
	if snd != nil {
		err = snd.Queue(out, to)
	} else {
		_, err = conn.Write(out)
	}
	if err != nil {
		if p.down.Load() {
			return nil // the browser left; its hang-up ends the call
		}
		return err
	}
	p.sent++
	p.octets += uint32(len(p.pcmu))
	if now.Sub(p.lastSR) >= srInterval {
		p.lastSR = now
		p.report(conn, now)
	}
	return nil
}

// batch is what the agent's packets are queued in (voice.Batcher): the
// shared port's sender once the call is keyed there, else nil.
func (p *embeddedPeer) batch() pace.Flusher {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.snd == nil {
		return nil
	}
	return p.snd
}

// readBy says whether the shared port's reader has handed on every packet
// that arrived by t (voice.SharedReader); true off the shared port.
func (p *embeddedPeer) readBy(t time.Time) bool {
	p.mu.Lock()
	rd := p.rd
	p.mu.Unlock()
	return rd == nil || rd.ReadBy(t)
}

// report sends an RTCP sender report (with the reception report of the
// caller's stream once it arrived) on the send side's lock. A report that
// cannot be sent is not worth failing the call for.
func (p *embeddedPeer) report(conn *ice.Conn, now time.Time) {
	sr := rtcp.SenderReport{SSRC: p.pkt.SSRC, NTPTime: ntpTime(now), RTPTime: p.pkt.Timestamp, PacketCount: p.sent, OctetCount: p.octets}
	if rr, ok := p.rx.report(); ok {
		sr.Reports = []rtcp.ReceptionReport{rr}
	}
	b, err := sr.Marshal()
	if err != nil {
		return
	}
	out, err := p.enc.EncryptRTCP(p.sealed[:0], b, nil)
	if err != nil {
		return
	}
	_, _ = conn.Write(out)
}

// ntpTime is t in the NTP timestamp format of RTCP.
func ntpTime(t time.Time) uint64 {
	const unixToNTP = 2208988800
	s := uint64(t.Unix() + unixToNTP)
	frac := uint64(t.Nanosecond()) << 32 / uint64(time.Second)
	return s<<32 | frac
}

// markTalkspurt says the next frame starts a talkspurt.
func (p *embeddedPeer) markTalkspurt() {
	p.smu.Lock()
	p.talkspurt = true
	p.smu.Unlock()
}

// offered is what the peer takes from the browser's offer.
type offered struct {
	mid, ufrag, pwd, fingerprint, setup, direction string
	candidates                                     []string
	bundle                                         bool
	media                                          []*sdp.MediaDescription
	audio                                          int // index of the audio section answered
}

// parseOffer finds the first audio section offering PCMU over DTLS-SRTP
// and the ICE and DTLS parameters that go with it.
func parseOffer(offer string) (offered, error) {
	var o offered
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(offer); err != nil {
		return o, fmt.Errorf("%w: %v", ErrBadOffer, err)
	}
	o.media, o.audio = sd.MediaDescriptions, -1
	if g, ok := sd.Attribute(sdp.AttrKeyGroup); ok && strings.HasPrefix(g, "BUNDLE") {
		o.bundle = true
	}
	for i, m := range sd.MediaDescriptions {
		if m.MediaName.Media != "audio" || m.MediaName.Port.Value == 0 || !slices.Contains(m.MediaName.Formats, "0") {
			continue
		}
		if !slices.Contains(m.MediaName.Protos, "TLS") && !slices.Contains(m.MediaName.Protos, "DTLS") {
			continue
		}
		o.audio = i
		break
	}
	if o.audio < 0 {
		return o, fmt.Errorf("%w: the offer needs an audio section with PCMU/8000 over DTLS-SRTP", ErrBadOffer)
	}
	m := sd.MediaDescriptions[o.audio]
	attr := func(key string) string {
		if v, ok := m.Attribute(key); ok {
			return v
		}
		v, _ := sd.Attribute(key)
		return v
	}
	o.mid, o.ufrag, o.pwd, o.setup = attr("mid"), attr("ice-ufrag"), attr("ice-pwd"), attr("setup")
	if f := strings.Fields(attr("fingerprint")); len(f) == 2 && strings.EqualFold(f[0], "sha-256") {
		o.fingerprint = strings.ToUpper(f[1])
	}
	o.direction = "sendrecv"
	for _, d := range []string{"sendonly", "recvonly", "inactive"} {
		if _, ok := m.Attribute(d); ok {
			o.direction = d
		}
	}
	for _, a := range m.Attributes {
		if a.Key == "candidate" {
			o.candidates = append(o.candidates, a.Value)
		}
	}
	// Every value taken here goes back into the answer; a control
	// character (a lone CR the SDP lexer keeps) would split its lines.
	for _, v := range append([]string{o.mid, o.ufrag, o.pwd, o.setup, o.fingerprint}, o.candidates...) {
		if strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return o, fmt.Errorf("%w: an attribute of the offer holds a control character", ErrBadOffer)
		}
	}
	if o.ufrag == "" || o.pwd == "" {
		return o, fmt.Errorf("%w: the offer has no ICE credentials", ErrBadOffer)
	}
	if o.fingerprint == "" {
		return o, fmt.Errorf("%w: the offer has no SHA-256 certificate fingerprint", ErrBadOffer)
	}
	if _, ok := m.Attribute("rtcp-mux"); !ok {
		return o, fmt.Errorf("%w: the offer's audio section does not multiplex RTCP (rtcp-mux)", ErrBadOffer)
	}
	return o, nil
}

// answer takes the browser's offer: a sendrecv audio section with PCMU.
func (p *embeddedPeer) answer(ctx context.Context, offer string) (string, error) {
	if !strings.Contains(offer, "m=audio") || !strings.Contains(strings.ToUpper(offer), "PCMU/8000") {
		return "", fmt.Errorf("%w: the offer needs an audio section with PCMU/8000", ErrBadOffer)
	}
	// What the browser offers decides whether the call can connect; the
	// log says how many candidates and how many are mDNS names (never the
	// addresses themselves).
	total, mdns := offerCandidates(offer)
	p.e.log.Debug("rooms: browser offer", "room", p.r.id, "candidates", total, "mdnsCandidates", mdns)
	if total == 0 {
		p.e.log.Warn("rooms: the browser offered no ICE candidates; a browser gathers none on a machine without a network interface other than loopback", "room", p.r.id)
	}
	p.mu.Lock()
	if p.offered || p.done {
		p.mu.Unlock()
		return "", ErrAlreadyJoined
	}
	p.offered = true // one offer per room, good or bad
	p.mu.Unlock()
	fail := func(err error) (string, error) {
		p.close()
		return "", err
	}
	o, err := parseOffer(offer)
	if err != nil {
		return fail(err)
	}
	agent, anet, err := p.e.newAgent()
	if err != nil {
		return fail(fmt.Errorf("rooms: ICE agent: %w", err))
	}
	p.mu.Lock()
	p.agent, p.net = agent, anet
	closed := p.done
	p.mu.Unlock()
	if closed {
		_ = agent.Close()
		return "", ErrAlreadyJoined
	}
	cert, err := selfsign.GenerateSelfSigned()
	if err != nil {
		return fail(fmt.Errorf("rooms: certificate: %w", err))
	}
	gathered := make(chan struct{})
	var cmu sync.Mutex
	var local []string
	if err := agent.OnCandidate(func(c ice.Candidate) {
		if c == nil {
			close(gathered)
			return
		}
		cmu.Lock()
		local = append(local, c.Marshal())
		cmu.Unlock()
	}); err != nil {
		return fail(err)
	}
	if err := agent.OnConnectionStateChange(func(s ice.ConnectionState) {
		if s == ice.ConnectionStateFailed || s == ice.ConnectionStateClosed {
			// The browser went away (closed the page, lost the network):
			// a caller hang-up.
			p.down.Store(true)
			p.r.left()
		}
	}); err != nil {
		return fail(err)
	}
	for _, raw := range o.candidates {
		// A candidate the agent cannot use (TCP, another family) is
		// skipped, as a browser skips ours.
		if c, err := ice.UnmarshalCandidate(raw); err == nil {
			_ = agent.AddRemoteCandidate(c)
		}
	}
	if err := agent.GatherCandidates(); err != nil {
		return fail(fmt.Errorf("rooms: ICE gathering: %w", err))
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	select {
	case <-gathered:
	case <-wait.Done():
		return fail(errors.New("rooms: ICE gathering did not complete"))
	}
	ufrag, pwd, err := agent.GetLocalUserCredentials()
	if err != nil {
		return fail(err)
	}
	cmu.Lock()
	cands := slices.Clone(local)
	cmu.Unlock()
	if len(cands) == 0 {
		return fail(errors.New("rooms: the embedded peer has no ICE candidate (rooms.embedded interfaces/ips)"))
	}
	// The browser offers actpass (or passive): the box is the DTLS client,
	// as a PeerConnection answers; an offer that insists on active gets a
	// passive box.
	client := o.setup != "active"
	go p.connect(o, cert, client)
	return p.answerSDP(o, ufrag, pwd, srtpconn.Fingerprint(cert.Certificate[0]), client, cands), nil
}

// answerSDP writes the answer: the audio section accepted, every other
// section rejected (port 0), one bundle.
func (p *embeddedPeer) answerSDP(o offered, ufrag, pwd, fp string, client bool, cands []string) string {
	setup, dir := "passive", "sendrecv"
	if client {
		setup = "active"
	}
	switch o.direction {
	case "sendonly":
		dir = "recvonly"
	case "recvonly":
		dir = "sendonly"
	case "inactive":
		dir = "inactive"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=- %d 2 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n", rand.Uint64()>>2)
	if o.bundle && o.mid != "" {
		fmt.Fprintf(&b, "a=group:BUNDLE %s\r\n", o.mid)
	}
	b.WriteString("a=msid-semantic: WMS stackbone\r\n")
	for i, m := range o.media {
		if i != o.audio {
			fmt.Fprintf(&b, "m=%s 0 %s %s\r\nc=IN IP4 0.0.0.0\r\n", m.MediaName.Media, strings.Join(m.MediaName.Protos, "/"), strings.Join(m.MediaName.Formats, " "))
			if mid, ok := m.Attribute("mid"); ok {
				fmt.Fprintf(&b, "a=mid:%s\r\n", mid)
			}
			b.WriteString("a=inactive\r\n")
			continue
		}
		fmt.Fprintf(&b, "m=audio 9 %s 0\r\nc=IN IP4 0.0.0.0\r\na=rtcp:9 IN IP4 0.0.0.0\r\n", strings.Join(m.MediaName.Protos, "/"))
		fmt.Fprintf(&b, "a=ice-ufrag:%s\r\na=ice-pwd:%s\r\na=fingerprint:sha-256 %s\r\na=setup:%s\r\n", ufrag, pwd, fp, setup)
		if o.mid != "" {
			fmt.Fprintf(&b, "a=mid:%s\r\n", o.mid)
		}
		fmt.Fprintf(&b, "a=%s\r\na=rtcp-mux\r\na=rtpmap:0 PCMU/8000\r\n", dir)
		fmt.Fprintf(&b, "a=msid:stackbone agent\r\na=ssrc:%d cname:stackbone\r\na=ssrc:%d msid:stackbone agent\r\n", p.pkt.SSRC, p.pkt.SSRC)
		for _, c := range cands {
			fmt.Fprintf(&b, "a=candidate:%s\r\n", c)
		}
		b.WriteString("a=end-of-candidates\r\n")
	}
	return b.String()
}

// connect waits for ICE, runs the DTLS handshake, keys SRTP and tells the
// room the caller's audio path is up. The room's join timeout, or the
// browser leaving, closes the peer, which ends the wait.
func (p *embeddedPeer) connect(o offered, cert tls.Certificate, client bool) {
	p.mu.Lock()
	agent := p.agent
	p.mu.Unlock()
	conn, err := agent.Accept(p.ctx, o.ufrag, o.pwd)
	if err != nil {
		return // closed: the room ends on its own
	}
	pipe := srtpconn.NewPipe(conn)
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.conn = conn
	p.mu.Unlock()
	go p.read(conn, pipe)
	hctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	d, err := srtpconn.Handshake(hctx, pipe, cert, o.fingerprint, client)
	cancel()
	var enc, de *srtp.Context
	if err == nil {
		if enc, de, err = srtpconn.Contexts(d, client); err != nil {
			_ = d.Close()
		}
	}
	if err != nil {
		if p.ctx.Err() == nil { // not the room's own teardown
			p.e.log.Warn("rooms: DTLS-SRTP with the browser failed", "room", p.r.id, "error", err)
			p.r.left()
		}
		return
	}
	p.in.key(de)
	p.smu.Lock()
	p.enc = enc
	p.smu.Unlock()
	// The browser, controlling, may nominate another pair later: the
	// shared port's tap and sender follow it.
	_ = agent.OnSelectedCandidatePairChange(p.follow)
	remote, local, tap := p.tapFrom(agent)
	p.mu.Lock()
	if p.done { // the room ended during the handshake
		p.mu.Unlock()
		_ = d.Close()
		return
	}
	p.dtls, p.ready = d, true
	if tap {
		p.untap = p.net.Tap(remote, p.in.handle)
	}
	if tap && local.IsValid() {
		p.snd, p.to, p.rd = p.net.Sender(local), remote, p.net.Reader(local)
	}
	p.mu.Unlock()
	go func() { // the browser's close_notify: a hang-up
		buf := make([]byte, 1500)
		for {
			if _, err := d.Read(buf); err != nil {
				p.down.Store(true)
				p.r.left()
				return
			}
		}
	}()
	p.r.connected()
}

// offerCandidates counts the candidates of an SDP and those whose address
// is an mDNS name.
func offerCandidates(sdp string) (total, mdns int) {
	for _, line := range strings.Split(sdp, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "a=candidate:") {
			continue
		}
		total++
		// foundation component transport priority address port typ …
		if f := strings.Fields(line); len(f) > 4 && strings.HasSuffix(f[4], ".local") {
			mdns++
		}
	}
	return total, mdns
}

// read is the one goroutine that reads the ICE connection: DTLS records go
// to the handshake, SRTP to the caller's side (rtpIn) until the socket's
// reader taps it.
func (p *embeddedPeer) read(conn *ice.Conn, pipe *srtpconn.Pipe) {
	defer pipe.Close()
	buf := make([]byte, 1500)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			return // the agent closed; its state change reports the end
		}
		b := buf[:n]
		if srtpconn.IsDTLS(b) {
			pipe.Deliver(b)
		} else if srtpconn.IsRTP(b) {
			p.in.handle(b)
		}
	}
}

// tapFrom is where the caller's packets come from, for the tap: any
// address on the call's own sockets, the selected candidate pair's remote
// address on the shared port; none when that address is not known as an
// IP (a browser's mDNS name), and the caller's packets go on through the
// ICE connection. local is the pair's local address on the shared port
// (the socket the call's batches go out on), zero elsewhere.
func (p *embeddedPeer) tapFrom(agent *ice.Agent) (remote, local netip.AddrPort, ok bool) {
	if p.e.mux == nil {
		return netip.AddrPort{}, netip.AddrPort{}, true
	}
	pair, err := agent.GetSelectedCandidatePair()
	if err != nil || pair == nil {
		return netip.AddrPort{}, netip.AddrPort{}, false
	}
	remote, ok = candidateAddr(pair.Remote)
	local, _ = candidateAddr(pair.Local)
	return remote, local, ok
}

// follow moves the shared port's tap and sender to the pair the browser
// selected since the call was keyed; the ICE connection carries what
// neither takes (a pair on an mDNS name, or an IPv6 one for the sender).
func (p *embeddedPeer) follow(lc, rc ice.Candidate) {
	if p.e.mux == nil {
		return
	}
	remote, ok := candidateAddr(rc)
	local, _ := candidateAddr(lc)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || !p.ready {
		return // keyed later: connect reads the pair selected then
	}
	if p.untap != nil {
		p.untap()
		p.untap = nil
	}
	p.snd, p.rd = nil, nil
	if !ok {
		return
	}
	p.untap = p.net.Tap(remote, p.in.handle)
	if local.IsValid() {
		p.snd, p.to, p.rd = p.net.Sender(local), remote, p.net.Reader(local)
	}
}

// candidateAddr is a candidate's address and port; false when the address
// is not an IP.
func candidateAddr(c ice.Candidate) (netip.AddrPort, bool) {
	ip, err := netip.ParseAddr(c.Address())
	if err != nil || c.Port() <= 0 || c.Port() > 65535 {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip, uint16(c.Port())), true
}

func (p *embeddedPeer) close() {
	p.mu.Lock()
	agent, d, untap := p.agent, p.dtls, p.untap
	p.done, p.ready, p.untap, p.snd, p.rd = true, false, nil, nil, nil
	p.mu.Unlock()
	p.stop()
	if untap != nil {
		untap()
	}
	if d != nil {
		_ = d.Close() // close_notify: the browser sees the call end
	}
	if agent != nil {
		_ = agent.Close()
	}
}

// newAgent is a call's ICE agent, gathering as the config says, and the
// Net its sockets are on (the mux's on the shared port).
func (e *embedded) newAgent() (*ice.Agent, *srtpconn.Net, error) {
	disconnected, failed, keepalive := 3*time.Second, 6*time.Second, time.Second
	c := &ice.AgentConfig{
		NetworkTypes:        []ice.NetworkType{ice.NetworkTypeUDP4, ice.NetworkTypeUDP6},
		CandidateTypes:      []ice.CandidateType{ice.CandidateTypeHost},
		InterfaceFilter:     e.g.iface,
		IPFilter:            e.g.ip,
		IncludeLoopback:     e.g.loopback,
		MulticastDNSMode:    ice.MulticastDNSModeQueryOnly,
		DisconnectedTimeout: &disconnected,
		FailedTimeout:       &failed,
		KeepaliveInterval:   &keepalive,
	}
	if e.cfg.NoMDNS {
		c.MulticastDNSMode = ice.MulticastDNSModeDisabled
	}
	if len(e.cfg.PublicIPs) > 0 {
		// A box behind a one-to-one NAT: the browser is told the public
		// address in place of the local one.
		c.NAT1To1IPs, c.NAT1To1IPCandidateType = e.cfg.PublicIPs, ice.CandidateTypeHost
	}
	n := e.muxNet
	if e.mux != nil {
		c.UDPMux = e.mux
	} else {
		var err error
		if n, err = srtpconn.NewNet(); err != nil {
			return nil, nil, err
		}
		c.Net = n
	}
	a, err := ice.NewAgent(c)
	return a, n, err
}

// rxStats follows the caller's stream for the reception report (RFC 3550
// A.1, A.3, A.8).
type rxStats struct {
	mu               sync.Mutex
	ssrc             uint32
	started          bool
	base, maxSeq     uint16
	cycles           uint32
	count            int64
	expectedPrior    int64
	receivedPrior    int64
	transit          int64
	jitter           float64
	lastArrivalNanos int64
}

func (s *rxStats) received(pkt *rtp.Packet) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || pkt.SSRC != s.ssrc {
		s.ssrc, s.started, s.base, s.maxSeq, s.cycles = pkt.SSRC, true, pkt.SequenceNumber, pkt.SequenceNumber, 0
		s.count, s.expectedPrior, s.receivedPrior, s.jitter, s.lastArrivalNanos = 0, 0, 0, 0, 0
	} else if d := pkt.SequenceNumber - s.maxSeq; d > 0 && d < 1<<15 {
		if pkt.SequenceNumber < s.maxSeq {
			s.cycles += 1 << 16
		}
		s.maxSeq = pkt.SequenceNumber
	}
	s.count++
	arrival := now * embeddedRate / int64(time.Second)
	transit := arrival - int64(pkt.Timestamp)
	if s.lastArrivalNanos != 0 {
		d := transit - s.transit
		if d < 0 {
			d = -d
		}
		s.jitter += (float64(d) - s.jitter) / 16
	}
	s.transit, s.lastArrivalNanos = transit, now
}

func (s *rxStats) report() (rtcp.ReceptionReport, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return rtcp.ReceptionReport{}, false
	}
	extMax := s.cycles + uint32(s.maxSeq)
	expected := int64(extMax) - int64(s.base) + 1
	lost := max(expected-s.count, 0)
	expectedInterval, receivedInterval := expected-s.expectedPrior, s.count-s.receivedPrior
	s.expectedPrior, s.receivedPrior = expected, s.count
	var fraction uint8
	if lostInterval := expectedInterval - receivedInterval; expectedInterval > 0 && lostInterval > 0 {
		fraction = uint8(lostInterval << 8 / expectedInterval)
	}
	return rtcp.ReceptionReport{SSRC: s.ssrc, FractionLost: fraction, TotalLost: uint32(min(lost, 1<<23-1)),
		LastSequenceNumber: extMax, Jitter: uint32(s.jitter)}, true
}
