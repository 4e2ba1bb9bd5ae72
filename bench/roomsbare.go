package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/stackbone/box/internal/companding"
	"github.com/stackbone/box/rooms/roomstest"
	"github.com/stackbone/box/voice"
)

// barePeers is the browser-rooms run's in-run baseline: pion
// PeerConnections set up as the box's embedded peer was before it ran on
// pion's ICE, DTLS and SRTP packages (PCMU only, the RTCP report
// interceptors, mDNS queries on), each sending a 20 ms PCMU stream
// from its own goroutine and timer, as the call controller's playout does,
// and decoding every caller packet, as the peer hands them to the call;
// with nothing of the box between (no call controller, speech, model or
// database). It answers the same Go callers at the same numbers of calls,
// so the step's figures next to the box's say what a PeerConnection and
// this machine cost per call on their own.
type barePeers struct {
	api    *webrtc.API
	srv    *http.Server
	url    string
	pacing voice.Pacing

	mu    sync.Mutex
	peers map[*barePeer]struct{}
	wg    sync.WaitGroup
}

type barePeer struct {
	pc   *webrtc.PeerConnection
	tr   *webrtc.TrackLocalStaticRTP
	stop chan struct{}
	once sync.Once
}

func startBarePeers() (*barePeers, error) {
	me := &webrtc.MediaEngine{}
	if err := me.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: 8000}, PayloadType: 0,
	}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	reg := &interceptor.Registry{}
	if err := webrtc.ConfigureRTCPReports(reg); err != nil {
		return nil, err
	}
	var se webrtc.SettingEngine
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetIncludeLoopbackCandidate(true)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeQueryOnly)
	se.SetICETimeouts(3*time.Second, 6*time.Second, time.Second)
	b := &barePeers{
		api:   webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(se)),
		peers: map[*barePeer]struct{}{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /bare/offer", b.offer)
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	b.url = "http://" + ln.Addr().String()
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

// offerURL is the peers' offer route, relative to url: each offer
// answered there is a peer of its own.
func (b *barePeers) offerURL() string { return "/bare/offer" }

// close ends every peer still up and the signalling server.
func (b *barePeers) close() {
	_ = b.srv.Close()
	b.mu.Lock()
	peers := make([]*barePeer, 0, len(b.peers))
	for p := range b.peers {
		peers = append(peers, p)
	}
	b.mu.Unlock()
	for _, p := range peers {
		b.end(p)
	}
	b.wg.Wait()
}

func (b *barePeers) end(p *barePeer) {
	p.once.Do(func() {
		close(p.stop)
		_ = p.pc.Close()
		b.mu.Lock()
		delete(b.peers, p)
		b.mu.Unlock()
	})
}

// offer answers a caller's offer in the box's envelope ({"data":{"sdp"}}).
func (b *barePeers) offer(w http.ResponseWriter, r *http.Request) {
	var in struct{ SDP string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The peer's goroutines (pion's, started here) carry side=bare in a
	// CPU profile.
	var sdp string
	var err error
	pprof.Do(r.Context(), pprof.Labels("side", "bare"), func(ctx context.Context) { sdp, err = b.answer(ctx, in.SDP) })
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{"sdp": sdp}})
}

func (b *barePeers) answer(ctx context.Context, offer string) (string, error) {
	pc, err := b.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return "", err
	}
	p := &barePeer{pc: pc, stop: make(chan struct{})}
	b.mu.Lock()
	b.peers[p] = struct{}{}
	b.mu.Unlock()
	fail := func(err error) (string, error) {
		b.end(p)
		return "", err
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return fail(err)
	}
	if p.tr, err = webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: 8000}, "agent", "bare"); err != nil {
		return fail(err)
	}
	sender, err := pc.AddTrack(p.tr)
	if err != nil {
		return fail(err)
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, _, err := sender.Read(buf); err != nil {
				return
			}
		}
	}()
	pc.OnTrack(func(t *webrtc.TrackRemote, _ *webrtc.RTPReceiver) { go bareRead(t) })
	var started sync.Once
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			started.Do(func() {
				b.wg.Add(1)
				go b.send(p)
			})
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed, webrtc.PeerConnectionStateDisconnected:
			go b.end(p)
		}
	})
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return fail(err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return fail(err)
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	return pc.LocalDescription().SDP, nil
}

// send paces one PCMU packet every 20 ms on an absolute schedule (the
// timer is set for the next frame before this one goes out), encoding each
// frame as the box's peer does, and records each gap's error as the box's
// peer records its own.
func (b *barePeers) send(p *barePeer) {
	defer b.wg.Done()
	tone := make([]int16, 160)
	for i := range tone {
		tone[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/8000))
	}
	enc := make([]byte, 0, len(tone))
	pkt := rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: uint16(rand.Uint32()), Timestamp: rand.Uint32()}}
	next := time.Now().Add(voice.FrameDuration)
	t := time.NewTimer(voice.FrameDuration)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		next = next.Add(voice.FrameDuration)
		t.Reset(time.Until(next))
		now := time.Now()
		if !last.IsZero() {
			b.pacing.Record(now.Sub(last) - voice.FrameDuration)
			pkt.SequenceNumber++
			pkt.Timestamp += uint32(len(tone))
		}
		last = now
		enc = companding.AppendUlaw(enc[:0], tone)
		pkt.Payload = enc
		if err := p.tr.WriteRTP(&pkt); err != nil {
			return
		}
	}
}

// bareRead decodes the caller's packets, as the box's peer does before it
// hands them to the call.
func bareRead(t *webrtc.TrackRemote) {
	pcm := make([]int16, 0, 160)
	buf := make([]byte, 1500)
	var pkt rtp.Packet
	for {
		n, _, err := t.Read(buf)
		if err != nil {
			return
		}
		if pkt.Unmarshal(buf[:n]) != nil {
			continue
		}
		pcm = companding.AppendFromUlaw(pcm[:0], pkt.Payload)
	}
}

// bareCall is one caller of the baseline: join a bare peer, speak every
// turnCycle until the window ends, hang up.
func bareCall(ctx context.Context, w stepWindow, base, offerURL string, callers roomstest.Options, f *callerFigures) error {
	start := time.Now()
	jctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	callers.BaseURL, callers.OfferURL = base, offerURL
	c, err := roomstest.Join(jctx, callers)
	cancel()
	if err != nil {
		return fmt.Errorf("bench: bare peer: %w", err)
	}
	f.join.add(time.Since(start), nil)
	defer c.Close()
	speak(ctx, c, w, nil)
	f.arrivals(c.Arrivals(), w)
	return nil
}

// settle waits until every peer of the step has gone (at most 10 s).
func (b *barePeers) settle(ctx context.Context) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		b.mu.Lock()
		n := len(b.peers)
		b.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
