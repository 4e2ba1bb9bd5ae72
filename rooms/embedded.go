package rooms

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"
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
// gather their candidates first; on loopback that takes milliseconds).
type embedded struct {
	cfg config.EmbeddedRooms
	log *slog.Logger
	api *webrtc.API
	mux ice.UDPMux // nil: a free port per room
	udp net.PacketConn
}

func newEmbedded(cfg config.EmbeddedRooms, log *slog.Logger) (*embedded, error) {
	host := net.ParseIP(cfg.Host)
	if host == nil {
		return nil, fmt.Errorf("rooms: embedded host %q is not an IP address", cfg.Host)
	}
	me := &webrtc.MediaEngine{}
	if err := me.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: embeddedRate},
		PayloadType:        0,
	}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, fmt.Errorf("rooms: codec: %w", err)
	}
	reg := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(me, reg); err != nil {
		return nil, fmt.Errorf("rooms: interceptors: %w", err)
	}
	var se webrtc.SettingEngine
	// Candidates on the configured address only, no mDNS (it would send
	// multicast off the machine), and a browser on loopback talks to
	// loopback only.
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6})
	se.SetIPFilter(func(ip net.IP) bool { return ip.Equal(host) })
	se.SetIncludeLoopbackCandidate(host.IsLoopback())
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	if host.IsLoopback() {
		se.SetRemoteIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	}
	// A browser that vanishes without closing is noticed within seconds.
	se.SetICETimeouts(3*time.Second, 6*time.Second, time.Second)
	e := &embedded{cfg: cfg, log: log}
	if cfg.UDPPort != 0 {
		conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: host, Port: cfg.UDPPort})
		if err != nil {
			return nil, fmt.Errorf("rooms: embedded udp port: %w", err)
		}
		e.udp = conn
		e.mux = webrtc.NewICEUDPMux(nil, conn)
		se.SetICEUDPMux(e.mux)
	}
	e.api = webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se))
	return e, nil
}

func (e *embedded) name() string { return BackendEmbedded }
func (e *embedded) rate() int    { return embeddedRate }

func (e *embedded) close() error {
	if e.mux != nil {
		_ = e.mux.Close()
	}
	if e.udp != nil {
		return e.udp.Close()
	}
	return nil
}

// embeddedPeer is one room's peer connection.
type embeddedPeer struct {
	e    *embedded
	r    *room
	mu   sync.Mutex
	pc   *webrtc.PeerConnection
	tr   *webrtc.TrackLocalStaticSample // set once connected
	done bool
}

func (e *embedded) open(_ context.Context, r *room) (Join, error) {
	p := &embeddedPeer{e: e, r: r}
	r.media = newPeerMedia(p.send)
	r.answer = p.answer
	r.teardown = p.close
	return Join{OfferURL: "/api/voice/rooms/" + r.id + "/offer"}, nil
}

// send writes one agent frame as one PCMU packet; the track stamps RTP
// time from the sample's duration.
func (p *embeddedPeer) send(pcm []int16) error {
	p.mu.Lock()
	tr := p.tr
	p.mu.Unlock()
	if tr == nil {
		return nil
	}
	data := make([]byte, len(pcm))
	for i, v := range pcm {
		data[i] = g711.EncodeUlawFrame(v)
	}
	return tr.WriteSample(media.Sample{Data: data, Duration: voice.FrameDuration})
}

// answer takes the browser's offer: a sendrecv audio section with PCMU.
func (p *embeddedPeer) answer(ctx context.Context, offer string) (string, error) {
	if !strings.Contains(offer, "m=audio") || !strings.Contains(strings.ToUpper(offer), "PCMU/8000") {
		return "", fmt.Errorf("%w: the offer needs an audio section with PCMU/8000", ErrBadOffer)
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
	tr, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: embeddedRate}, "agent", "stackbone")
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

// read decodes the caller's PCMU packets into frames for the controller.
func (p *embeddedPeer) read(t *webrtc.TrackRemote) {
	pcm := make([]int16, 0, 160)
	for {
		pkt, _, err := t.ReadRTP()
		if err != nil {
			return // the peer connection closed; its state change reports the end
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
