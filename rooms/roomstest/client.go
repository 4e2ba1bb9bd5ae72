// Package roomstest is a Go WebRTC caller for embedded rooms, standing in
// for a browser where a browser is too heavy (load runs, quick API tests):
// it joins a room through its offer route, sends PCMU caller audio paced
// at real time, and records the agent's packets as they arrive.
//
//	c, err := roomstest.Join(ctx, roomstest.Options{BaseURL: url, Key: key, OfferURL: room.Join.OfferURL})
//	defer c.Close()
//	c.Say(roomstest.Speech(1200))          // 1.2 s of speech-like sound
//	c.WaitVoiced(ctx, 50)                   // the agent answered aloud
//
// By default the caller is a pion PeerConnection; Options.Direct runs the
// same protocols (ICE, DTLS-SRTP, rtcp-mux) with pion's packages on one
// reader goroutine, for load runs.
package roomstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/stackbone/box/internal/companding"
	"github.com/stackbone/box/internal/pace"
	"github.com/stackbone/box/internal/rawudp"
	"github.com/stackbone/box/voice"
)

// Rate is the caller's sample rate (PCMU).
const Rate = 8000

const frameSamples = Rate / 50

// Options join a room.
type Options struct {
	// BaseURL of the box (http://127.0.0.1:PORT) and an API key with the
	// voice scope.
	BaseURL, Key string
	// OfferURL is the room's join.offerUrl.
	OfferURL string
	// HTTP is the client for the offer (default http.DefaultClient).
	HTTP *http.Client
	// API builds the caller's peer connection (default: NewAPI()). Share
	// one between callers: a load run then pays for one media engine
	// instead of one per caller.
	API *webrtc.API
	// Pacers, when set, send the caller's frames (shared between
	// callers: a load run then wakes once for the frames of many callers
	// due together instead of once per caller and frame, as the box's
	// own playout does); else each caller has a ticker.
	Pacers *pace.Group
	// Direct runs the caller's ICE, DTLS and SRTP without a
	// PeerConnection, the box's SRTP decrypted where it is read (see
	// direct): the same peer on the wire at a fraction of the CPU, for
	// load runs.
	Direct bool
	// Raw, with Direct and Pacers, sends each caller's SRTP from its ICE
	// port through this raw socket (shared between callers), every packet
	// due on a pacer's round in one system call, as the box sends its
	// own; the box receives what each port's own writes would send.
	Raw *rawudp.Sender
}

// NewAPI is the callers' WebRTC setup: PCMU only, loopback host
// candidates, no mDNS, and no interceptors (a caller needs neither NACK
// nor congestion feedback nor stats, and a load run would pay for them on
// every packet, beside the box it measures).
func NewAPI() (*webrtc.API, error) {
	me := &webrtc.MediaEngine{}
	if err := me.RegisterCodec(webrtc.RTPCodecParameters{
		RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: Rate}, PayloadType: 0,
	}, webrtc.RTPCodecTypeAudio); err != nil {
		return nil, err
	}
	var se webrtc.SettingEngine
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetIncludeLoopbackCandidate(true)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	return webrtc.NewAPI(webrtc.WithMediaEngine(me), webrtc.WithSettingEngine(se),
		webrtc.WithInterceptorRegistry(&interceptor.Registry{})), nil
}

// Arrival is one agent packet as received.
type Arrival struct {
	At        time.Time
	Seq       uint16
	Timestamp uint32 // RTP time
	Marker    bool   // the first packet of a talkspurt
	Voiced    bool   // louder than -40 dBFS
}

// arrival is an Arrival as a Client keeps it: its time in nanoseconds
// since the client's epoch, so the arrivals hold no pointer (a Time does)
// and the collector of a load's process never scans them (400 callers of
// five minutes keep six million).
type arrival struct {
	at        int64 // since Client.epoch
	timestamp uint32
	seq       uint16
	marker    bool
	voiced    bool
}

// Client is one caller.
type Client struct {
	pc        *webrtc.PeerConnection      // nil when direct
	track     *webrtc.TrackLocalStaticRTP // the PeerConnection's
	d         *direct
	connected chan struct{}
	stop      chan struct{}
	stopOnce  sync.Once
	wg        sync.WaitGroup
	unpace    func() // takes the sender off Options.Pacers

	mu        sync.Mutex
	muted     bool      // send nothing at all (a dead transport)
	queue     [][]int16 // caller frames still to send
	lastVoice time.Time // when the last voiced caller frame was sent
	epoch     time.Time // of the arrivals' times
	arrivals  []arrival
	closedErr error
}

// Join offers the room a sendrecv PCMU audio section with loopback
// candidates and starts sending quiet line noise at real time.
func Join(ctx context.Context, opt Options) (*Client, error) {
	if opt.HTTP == nil {
		opt.HTTP = http.DefaultClient
	}
	if opt.Direct {
		return joinDirect(ctx, opt)
	}
	api := opt.API
	if api == nil {
		var err error
		if api, err = NewAPI(); err != nil {
			return nil, err
		}
	}
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, err
	}
	c := &Client{pc: pc, connected: make(chan struct{}), stop: make(chan struct{}), epoch: time.Now(), arrivals: make([]arrival, 0, 1024)}
	c.track, err = webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypePCMU, ClockRate: Rate}, "mic", "caller")
	if err != nil {
		pc.Close()
		return nil, err
	}
	if _, err := pc.AddTrack(c.track); err != nil {
		pc.Close()
		return nil, err
	}
	var once sync.Once
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		if s == webrtc.PeerConnectionStateConnected {
			once.Do(func() { close(c.connected) })
		}
	})
	pc.OnTrack(func(t *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		c.wg.Add(1)
		go c.receive(t)
	})
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		pc.Close()
		return nil, err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		pc.Close()
		return nil, err
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		pc.Close()
		return nil, ctx.Err()
	}
	answer, err := postOffer(ctx, opt, pc.LocalDescription().SDP)
	if err != nil {
		pc.Close()
		return nil, err
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer}); err != nil {
		pc.Close()
		return nil, err
	}
	select {
	case <-c.connected:
	case <-ctx.Done():
		pc.Close()
		return nil, fmt.Errorf("roomstest: not connected: %w", ctx.Err())
	}
	c.start(opt)
	return c, nil
}

// joinDirect is Join with a direct caller.
func joinDirect(ctx context.Context, opt Options) (*Client, error) {
	d, err := newDirect()
	if err != nil {
		return nil, err
	}
	c := &Client{d: d, stop: make(chan struct{}), epoch: time.Now(), arrivals: make([]arrival, 0, 1024)}
	offer, err := d.offer(ctx)
	if err != nil {
		d.close()
		return nil, err
	}
	answer, err := postOffer(ctx, opt, offer)
	if err != nil {
		d.close()
		return nil, err
	}
	if err := d.connect(ctx, answer, c.arrive); err != nil {
		d.close()
		return nil, err
	}
	if opt.Raw != nil && opt.Pacers != nil {
		d.batchOn(opt.Raw)
	}
	c.start(opt)
	return c, nil
}

func postOffer(ctx context.Context, opt Options, sdp string) (string, error) {
	body, _ := json.Marshal(map[string]string{"type": "offer", "sdp": sdp})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, opt.BaseURL+opt.OfferURL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+opt.Key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := opt.HTTP.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var env struct {
		Data struct {
			SDP string `json:"sdp"`
		} `json:"data"`
		Error *struct {
			Code, Message string
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return "", fmt.Errorf("roomstest: offer: %s: %w", resp.Status, err)
	}
	if env.Error != nil {
		return "", fmt.Errorf("roomstest: offer: %s %s", env.Error.Code, env.Error.Message)
	}
	return env.Data.SDP, nil
}

// start begins sending caller frames at 20 ms: on the shared pacers of
// Options.Pacers, else on a ticker of its own.
func (c *Client) start(opt Options) {
	sf := &sender{c: c, quiet: Noise(frameSamples, 30), buf: make([]byte, frameSamples),
		pkt: rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: uint16(rand.Uint32()), Timestamp: rand.Uint32()}}}
	if opt.Pacers != nil {
		_, c.unpace = opt.Pacers.Add(sf)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-tick.C:
			}
			if !sf.Frame() {
				return
			}
		}
	}()
}

// Batch is the batch the caller's frames go out in (Options.Raw), nil
// when each is written as it is made.
func (s *sender) Batch() pace.Flusher {
	if d := s.c.d; d != nil && d.raw != nil {
		return d.raw
	}
	return nil
}

// sender sends a caller's frames, one PCMU packet each: queued speech, else
// quiet noise.
type sender struct {
	c     *Client
	quiet []int16
	buf   []byte
	pkt   rtp.Packet
}

// Frame sends the next frame; false once the media is gone.
func (s *sender) Frame() bool {
	c := s.c
	c.mu.Lock()
	if c.muted {
		c.mu.Unlock()
		return true
	}
	f := s.quiet
	if len(c.queue) > 0 {
		f, c.queue = c.queue[0], c.queue[1:]
		if voice.Level(f) > -40 {
			c.lastVoice = time.Now()
		}
	}
	c.mu.Unlock()
	s.buf = companding.AppendUlaw(s.buf[:0], f)
	s.pkt.Payload = s.buf
	var err error
	if c.d != nil {
		err = c.d.writeRTP(&s.pkt)
	} else {
		err = c.track.WriteRTP(&s.pkt) // sends it before returning
	}
	if err != nil {
		return false
	}
	s.pkt.SequenceNumber++
	s.pkt.Timestamp += frameSamples
	return true
}

func (c *Client) receive(t *webrtc.TrackRemote) {
	defer c.wg.Done()
	buf := make([]byte, 1500) // one buffer: ReadRTP allocates one per packet
	var pkt rtp.Packet
	for {
		n, _, err := t.Read(buf)
		if err != nil {
			c.mu.Lock()
			c.closedErr = err
			c.mu.Unlock()
			return
		}
		if pkt.Unmarshal(buf[:n]) != nil {
			continue
		}
		c.arrive(&pkt)
	}
}

// arrive records one agent packet.
func (c *Client) arrive(pkt *rtp.Packet) {
	var buf [frameSamples]int16
	pcm := companding.AppendFromUlaw(buf[:0], pkt.Payload[:min(len(pkt.Payload), frameSamples)])
	a := arrival{at: int64(time.Since(c.epoch)), seq: pkt.SequenceNumber, timestamp: pkt.Timestamp, marker: pkt.Marker,
		voiced: voice.Level(pcm) > -40}
	c.mu.Lock()
	c.arrivals = append(c.arrivals, a)
	c.mu.Unlock()
}

// Say queues caller audio at 8 kHz, sent after what is already queued.
func (c *Client) Say(pcm []int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(pcm) >= frameSamples {
		c.queue = append(c.queue, pcm[:frameSamples])
		pcm = pcm[frameSamples:]
	}
}

// Mute stops sending packets while the connection stays up, as a
// browser whose network died would.
func (c *Client) Mute() {
	c.mu.Lock()
	c.muted = true
	c.mu.Unlock()
}

// Saying reports whether queued caller audio is still being sent.
func (c *Client) Saying() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) > 0
}

// LastVoice is when the last voiced caller frame was sent.
func (c *Client) LastVoice() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastVoice
}

// Arrivals returns the agent packets received so far.
func (c *Client) Arrivals() []Arrival {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Arrival, len(c.arrivals))
	for i, a := range c.arrivals {
		out[i] = Arrival{At: c.at(a), Seq: a.seq, Timestamp: a.timestamp, Marker: a.marker, Voiced: a.voiced}
	}
	return out
}

// at is when a arrived.
func (c *Client) at(a arrival) time.Time { return c.epoch.Add(time.Duration(a.at)) }

// Voiced counts agent packets louder than -40 dBFS.
func (c *Client) Voiced() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.arrivals {
		if a.voiced {
			n++
		}
	}
	return n
}

// FirstVoicedAfter is the arrival of the first voiced agent packet after
// t. It looks from the first arrival after t (they arrive in order),
// copying nothing: a load's callers ask it every turn, and a five-minute
// call holds 15,000 arrivals.
func (c *Client) FirstVoicedAfter(t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	after := int64(t.Sub(c.epoch))
	i, _ := slices.BinarySearchFunc(c.arrivals, after, func(a arrival, after int64) int {
		if a.at > after {
			return 1
		}
		return -1
	})
	for _, a := range c.arrivals[i:] {
		if a.voiced {
			return c.at(a), true
		}
	}
	return time.Time{}, false
}

// WaitVoiced waits until n voiced agent packets arrived.
func (c *Client) WaitVoiced(ctx context.Context, n int) error {
	for c.Voiced() < n {
		select {
		case <-ctx.Done():
			return fmt.Errorf("roomstest: %d of %d voiced agent packets: %w", c.Voiced(), n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// SenderReport is the last RTCP sender report the box sent (direct
// callers only; nil before the first).
func (c *Client) SenderReport() *rtcp.SenderReport {
	if c.d == nil {
		return nil
	}
	return c.d.lastSR.Load()
}

// Ended reports whether the box ended the media (its side closed).
func (c *Client) Ended() bool {
	if c.d != nil {
		return c.d.isEnded()
	}
	s := c.pc.ConnectionState()
	return s == webrtc.PeerConnectionStateClosed || s == webrtc.PeerConnectionStateFailed || s == webrtc.PeerConnectionStateDisconnected
}

// Close hangs up: the peer connection closes, which the box notices as the
// browser leaving.
func (c *Client) Close() {
	c.stopOnce.Do(func() { close(c.stop) })
	if c.unpace != nil {
		c.unpace()
	}
	if c.d != nil {
		c.d.close()
	} else {
		_ = c.pc.Close()
	}
	c.wg.Wait()
}

// Speech is ms of speech-like caller audio at 8 kHz: 160 ms syllables of a
// 300 Hz tone with short quiet gaps, as the voice tests use.
func Speech(ms int) []int16 {
	var out []int16
	for i := 0; i < ms/20; i++ {
		if i%10 >= 8 {
			out = append(out, Noise(frameSamples, 30)...)
			continue
		}
		for j := 0; j < frameSamples; j++ {
			out = append(out, int16(10000*math.Sin(2*math.Pi*300*float64(i*frameSamples+j)/Rate)))
		}
	}
	return out
}

// Noise is n samples of quiet line noise.
func Noise(n, amp int) []int16 {
	f := make([]int16, n)
	for i := range f {
		f[i] = int16((i*7919)%(2*amp+1) - amp)
	}
	return f
}
