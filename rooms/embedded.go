package rooms

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"github.com/zaf/g711"

	"github.com/stackbone/box/config"
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
	api *webrtc.API
	mux *ice.MultiUDPMuxDefault // nil: a free port per room
	// pacing records each agent packet's interval error, as the SIP
	// server does (Service.Pacing).
	pacing voice.Pacing
}

func newEmbedded(cfg config.EmbeddedRooms, log *slog.Logger) (*embedded, error) {
	me := &webrtc.MediaEngine{}
	if err := me.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: embeddedRate},
		PayloadType:        0,
	}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, fmt.Errorf("rooms: codec: %w", err)
	}
	// Only the RTCP reports (sender and receiver reports, one a second per
	// stream), which a browser's stats and lip sync read. pion's defaults
	// add NACK (video only), transport-wide congestion control (feedback
	// for a sender that adapts its bitrate; PCMU is fixed at 64 kbit/s) and
	// a stats recorder nobody reads: each costs work on every packet both
	// ways and goroutines per call, and held the peer to a few dozen calls.
	reg := &interceptor.Registry{}
	if err := webrtc.ConfigureRTCPReports(reg); err != nil {
		return nil, fmt.Errorf("rooms: interceptors: %w", err)
	}
	g, err := gatherOn(cfg)
	if err != nil {
		return nil, err
	}
	var se webrtc.SettingEngine
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6})
	se.SetInterfaceFilter(g.iface)
	se.SetIPFilter(g.ip)
	se.SetIncludeLoopbackCandidate(g.loopback)
	// A browser as it ships names its host candidates with mDNS (….local);
	// the peer resolves them (it queries, it never publishes names of its
	// own, so its addresses stay in the answer as they are).
	if cfg.NoMDNS {
		se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	} else {
		se.SetICEMulticastDNSMode(ice.MulticastDNSModeQueryOnly)
	}
	if len(cfg.PublicIPs) > 0 {
		// A box behind a one-to-one NAT: the browser is told the public
		// address in place of the local one.
		se.SetNAT1To1IPs(cfg.PublicIPs, webrtc.ICECandidateTypeHost)
	}
	// A browser that vanishes without closing is noticed within seconds.
	se.SetICETimeouts(3*time.Second, 6*time.Second, time.Second)
	e := &embedded{cfg: cfg, log: log}
	if cfg.UDPPort != 0 {
		opts := []ice.UDPMuxFromPortOption{
			ice.UDPMuxFromPortWithInterfaceFilter(g.iface), ice.UDPMuxFromPortWithIPFilter(g.ip),
			ice.UDPMuxFromPortWithNetworks(ice.NetworkTypeUDP4, ice.NetworkTypeUDP6),
		}
		if g.loopback {
			opts = append(opts, ice.UDPMuxFromPortWithLoopback())
		}
		mux, err := ice.NewMultiUDPMuxFromPort(cfg.UDPPort, opts...)
		if err != nil {
			return nil, fmt.Errorf("rooms: embedded udp port %d: %w", cfg.UDPPort, err)
		}
		if len(mux.GetListenAddresses()) == 0 {
			_ = mux.Close()
			return nil, fmt.Errorf("rooms: embedded udp port %d: no address matches rooms.embedded interfaces/ips", cfg.UDPPort)
		}
		e.mux = mux
		se.SetICEUDPMux(mux)
	}
	e.api = webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se))
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

// embeddedPeer is one room's peer connection.
type embeddedPeer struct {
	e    *embedded
	r    *room
	mu   sync.Mutex
	pc   *webrtc.PeerConnection
	tr   *webrtc.TrackLocalStaticRTP // set once connected
	done bool

	smu       sync.Mutex // the sending side
	enc       []byte     // one encoded frame; WriteRTP has sent it when it returns
	pkt       rtp.Packet // the last packet's header (the track sets SSRC and payload type)
	lastSent  time.Time  // when the last packet went out
	talkspurt bool       // the next frame starts a talkspurt
}

func (e *embedded) open(_ context.Context, r *room) (Join, error) {
	p := &embeddedPeer{e: e, r: r}
	p.pkt.Version = 2
	p.pkt.SequenceNumber = uint16(rand.Uint32())
	p.pkt.Timestamp = rand.Uint32()
	r.media = newPeerMedia(p.send)
	r.media.mark = p.markTalkspurt
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
	tr := p.tr
	p.mu.Unlock()
	if tr == nil {
		return nil
	}
	p.smu.Lock()
	defer p.smu.Unlock()
	p.enc = p.enc[:0]
	for _, v := range pcm {
		p.enc = append(p.enc, g711.EncodeUlawFrame(v))
	}
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
	p.pkt.Payload = p.enc
	return tr.WriteRTP(&p.pkt)
}

// markTalkspurt says the next frame starts a talkspurt.
func (p *embeddedPeer) markTalkspurt() {
	p.smu.Lock()
	p.talkspurt = true
	p.smu.Unlock()
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
	if p.pc != nil || p.done {
		p.mu.Unlock()
		return "", ErrAlreadyJoined
	}
	pc, err := p.e.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		p.mu.Unlock()
		return "", fmt.Errorf("rooms: peer connection: %w", err)
	}
	p.pc = pc
	p.mu.Unlock()

	fail := func(err error) (string, error) {
		_ = pc.Close()
		return "", err
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrBadOffer, err))
	}
	tr, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: embeddedRate}, "agent", "stackbone")
	if err != nil {
		return fail(fmt.Errorf("rooms: track: %w", err))
	}
	sender, err := pc.AddTrack(tr)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrBadOffer, err))
	}
	go drainRTCP(sender)
	pc.OnTrack(func(t *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		if t.Kind() == webrtc.RTPCodecTypeAudio {
			go p.read(t)
		}
	})
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			p.mu.Lock()
			p.tr = tr
			p.mu.Unlock()
			p.r.connected()
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			// The browser went away (closed the page, lost the network):
			// a caller hang-up.
			p.r.left()
		}
	})
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrBadOffer, err))
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return fail(fmt.Errorf("%w: %v", ErrBadOffer, err))
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	select {
	case <-gathered:
	case <-wait.Done():
		return fail(errors.New("rooms: ICE gathering did not complete"))
	}
	local := pc.LocalDescription()
	if !strings.Contains(local.SDP, "PCMU/8000") {
		return fail(fmt.Errorf("%w: no audio codec in common", ErrBadOffer))
	}
	return local.SDP, nil
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

// read decodes the caller's PCMU packets into frames for the controller.
// It reads into one buffer (TrackRemote.ReadRTP allocates an MTU-sized one
// per packet) and skips a packet it cannot parse.
func (p *embeddedPeer) read(t *webrtc.TrackRemote) {
	pcm := make([]int16, 0, 160)
	buf := make([]byte, 1500)
	var pkt rtp.Packet
	for {
		n, _, err := t.Read(buf)
		if err != nil {
			return // the peer connection closed; its state change reports the end
		}
		if pkt.Unmarshal(buf[:n]) != nil {
			continue
		}
		if pkt.PayloadType != 0 || len(pkt.Payload) == 0 {
			p.r.call.Alive()
			continue
		}
		pcm = pcm[:0]
		for _, b := range pkt.Payload {
			pcm = append(pcm, g711.DecodeUlawFrame(b))
		}
		p.r.call.Hear(pcm)
	}
}

func (p *embeddedPeer) close() {
	p.mu.Lock()
	pc := p.pc
	p.done = true
	p.mu.Unlock()
	if pc != nil {
		_ = pc.Close()
	}
}

// drainRTCP reads the sender's RTCP so the interceptors see receiver
// reports.
func drainRTCP(s *webrtc.RTPSender) {
	buf := make([]byte, 1500)
	for {
		if _, _, err := s.Read(buf); err != nil {
			return
		}
	}
}
