package sip_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	sipgosip "github.com/emiago/sipgo/sip"
	"github.com/zaf/g711"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/store/storetest"
	"github.com/stackbone/box/voice"
)

// waitFor polls cond until it holds or the limit passes.
func waitFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freePort returns a port free for UDP and TCP on 127.0.0.1 (and, for
// baresip, whose TLS listener takes the next port, the next one for TCP).
func freePort(t testing.TB, pair bool) int {
	t.Helper()
	for range 50 {
		u, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := u.LocalAddr().(*net.UDPAddr).Port
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			u.Close()
			continue
		}
		var l2 net.Listener
		if pair {
			if l2, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1)); err != nil {
				u.Close()
				l.Close()
				continue
			}
			l2.Close()
		}
		u.Close()
		l.Close()
		return p
	}
	t.Fatal("no free port")
	return 0
}

// fakeController stands in for the call controller in the protocol tests:
// it records what the transport gave it and plays a tone.
type fakeController struct {
	mu    sync.Mutex
	calls []*fakeCall
	gate  chan struct{} // when set, Open waits for it (or the caller's cancel)
	// ignoreCancel makes Open wait for the gate even when the caller
	// cancelled, like an open that is already past its database work.
	ignoreCancel bool
	err          error
	onRun        func(c *fakeCall) // runs once the call is answered
	opened       chan *fakeCall
}

func newFakeController() *fakeController {
	return &fakeController{opened: make(chan *fakeCall, 16)}
}

func (f *fakeController) Open(ctx context.Context, info voice.CallInfo) (sip.Call, error) {
	f.mu.Lock()
	gate, err, ignore := f.gate, f.err, f.ignoreCancel
	f.mu.Unlock()
	if gate != nil {
		done := ctx.Done()
		if ignore {
			done = nil
		}
		select {
		case <-gate:
		case <-done:
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	c := &fakeCall{id: fmt.Sprintf("call_%d", len(f.calls)+1), info: info, onRun: f.onRun,
		closing: make(chan struct{}), running: make(chan struct{}), done: make(chan struct{})}
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	f.opened <- c
	return c, nil
}

// next waits for the next opened call.
func (f *fakeController) next(t testing.TB) *fakeCall {
	t.Helper()
	select {
	case c := <-f.opened:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no call opened")
		return nil
	}
}

type fakeCall struct {
	id    string
	info  voice.CallInfo
	onRun func(c *fakeCall)

	mu      sync.Mutex
	outcome string
	digits  []rune
	frames  int
	voiced  int
	readErr error
	media   voice.Media
	ctl     voice.Controls

	closeOnce sync.Once
	closing   chan struct{}
	running   chan struct{}
	done      chan struct{}
}

func (c *fakeCall) ID() string { return c.id }

func (c *fakeCall) Close(outcome string) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.outcome = outcome
		c.mu.Unlock()
		close(c.closing)
	})
}

func (c *fakeCall) DTMF(d rune) {
	c.mu.Lock()
	c.digits = append(c.digits, d)
	c.mu.Unlock()
}

// Run plays a 440 Hz tone paced at real time and reads the caller's frames,
// as the controller does: it returns once closed and the reader stopped.
func (c *fakeCall) Run(ctx context.Context, m voice.Media, ctl voice.Controls) error {
	defer close(c.done)
	c.mu.Lock()
	c.media, c.ctl = m, ctl
	c.mu.Unlock()
	close(c.running)
	if c.onRun != nil {
		go c.onRun(c)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			f, err := m.ReadFrame()
			if err != nil {
				c.mu.Lock()
				c.readErr = err
				c.mu.Unlock()
				switch {
				case errors.Is(err, io.EOF):
					c.Close(voice.OutcomeCallerHangup)
				case errors.Is(err, voice.ErrMediaTimeout):
					c.Close(voice.OutcomeMediaTimeout)
				default:
					c.Close(voice.OutcomeFailed)
				}
				return
			}
			c.mu.Lock()
			c.frames++
			if rms(f) > 1000 {
				c.voiced++
			}
			c.mu.Unlock()
		}
	}()
	tick := time.NewTicker(voice.FrameDuration)
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-c.closing:
			<-readDone
			return nil
		case <-ctx.Done():
			c.Close(voice.OutcomeShutdown)
			_ = ctl.Hangup(context.Background())
		case <-tick.C:
			f := make([]int16, m.SampleRate()/50)
			for i := range f {
				f[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(n+i)/float64(m.SampleRate())))
			}
			n += len(f)
			if err := m.WriteFrame(f); err != nil {
				c.Close(voice.OutcomeFailed)
			}
		}
	}
}

func (c *fakeCall) Outcome() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outcome
}

func (c *fakeCall) Digits() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.digits)
}

func (c *fakeCall) Voiced() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.voiced
}

func (c *fakeCall) Controls() voice.Controls {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctl
}

func (c *fakeCall) waitDone(t testing.TB) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the call's Run did not return")
	}
}

func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, v := range pcm {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// inboundConfig has one trunk on 127.0.0.1 sending every number to agent a.
func inboundConfig() config.SIP {
	return config.SIP{
		MediaTimeout: 5 * time.Second,
		Trunks: config.Trunks{Inbound: []config.InboundTrunk{{
			Name: "local", Sources: []string{"127.0.0.1"},
			Routes: []config.Route{{Number: "*", Agent: "a"}},
		}}},
	}
}

// startServer starts the box's SIP server on a free port.
func startServer(t testing.TB, cfg config.SIP, ctl sip.Controller) *sip.Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	srv, err := sip.New(sip.Config{Config: cfg, Manager: ctl, Logger: storetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		cancel()
	})
	return srv
}

// peer is a SIP phone made of sipgo and diago, the other side in the
// protocol tests.
type peer struct {
	t    testing.TB
	dg   *diago.Diago
	ua   *sipgo.UserAgent
	port int
}

// newPeer listens on a free UDP port; serve answers calls to it (nil: the
// peer only calls).
func newPeer(t testing.TB, serve func(d *diago.DialogServerSession)) *peer {
	t.Helper()
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("peer"))
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t, false)
	log := storetest.Logger(t).With("side", "peer")
	dg := diago.NewDiago(ua, diago.WithLogger(log),
		diago.WithTransport(diago.Transport{Transport: "udp", BindHost: "127.0.0.1", BindPort: port}),
		diago.WithTransport(diago.Transport{Transport: "tcp", BindHost: "127.0.0.1", BindPort: port}))
	ctx, cancel := context.WithCancel(context.Background())
	if serve == nil {
		serve = func(d *diago.DialogServerSession) {
			_ = d.Respond(sipgosip.StatusBusyHere, "Busy Here", nil)
		}
	}
	if err := dg.ServeBackground(ctx, serve); err != nil {
		t.Fatal(err)
	}
	// The client sends from the listener once sipgo registered it.
	addr := "127.0.0.1:" + strconv.Itoa(port)
	waitFor(t, "the peer's listener", 5*time.Second, func() bool {
		c, err := ua.TransportLayer().GetConnection("udp", addr)
		return err == nil && c != nil
	})
	t.Cleanup(func() {
		cancel()
		ua.Close()
	})
	return &peer{t: t, dg: dg, ua: ua, port: port}
}

// uri is sip:user@addr.
func uri(t testing.TB, user, addr string) sipgosip.Uri {
	t.Helper()
	var u sipgosip.Uri
	if err := sipgosip.ParseUri("sip:"+user+"@"+addr, &u); err != nil {
		t.Fatal(err)
	}
	return u
}

// call invites user at the box and waits for the answer.
func (p *peer) call(ctx context.Context, user, addr string, opts diago.InviteOptions) (*diago.DialogClientSession, *diago.DialogMedia, error) {
	p.t.Helper()
	return p.dg.Invite(ctx, uri(p.t, user, addr), opts)
}

// statusOf is the SIP status of a refused INVITE.
func statusOf(err error) int {
	var re sipgo.ErrDialogResponse
	if errors.As(err, &re) {
		return re.Res.StatusCode
	}
	var rp *sipgo.ErrDialogResponse
	if errors.As(err, &rp) {
		return rp.Res.StatusCode
	}
	return 0
}

// listener decodes what a peer hears and measures it.
type listener struct {
	mu      sync.Mutex
	voiced  int
	frames  int
	lastPT  uint8
	payload map[uint8]int
}

// listen reads the peer's RTP in the background until the media closes.
func listen(med *diago.DialogMedia) *listener {
	l := &listener{payload: map[uint8]int{}}
	r, err := med.AudioReader()
	if err != nil {
		return l
	}
	go func() {
		buf := make([]byte, media.RTPBufSize)
		for {
			n, err := r.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				return
			}
			pt := med.RTPPacketReader.PacketHeader.PayloadType
			pcm := make([]int16, 0, n)
			for _, b := range buf[:n] {
				if pt == 8 {
					pcm = append(pcm, g711.DecodeAlawFrame(b))
				} else {
					pcm = append(pcm, g711.DecodeUlawFrame(b))
				}
			}
			l.mu.Lock()
			l.frames++
			l.lastPT = pt
			l.payload[pt]++
			if rms(pcm) > 1000 {
				l.voiced++
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *listener) Voiced() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.voiced
}

func (l *listener) Packets(pt uint8) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.payload[pt]
}

// speak sends a tone from the peer, paced by diago's packet writer, until
// stop is closed; the returned channel closes when it stopped.
func speak(med *diago.DialogMedia, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	w, err := med.AudioWriter()
	if err != nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		n := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			payload := make([]byte, 160)
			pt := media.CodecAudioFromSession(med.MediaSession()).PayloadType
			for i := range payload {
				v := int16(8000 * math.Sin(2*math.Pi*300*float64(n+i)/8000))
				if pt == 8 {
					payload[i] = g711.EncodeAlawFrame(v)
				} else {
					payload[i] = g711.EncodeUlawFrame(v)
				}
			}
			n += 160
			if _, err := w.Write(payload); err != nil {
				return
			}
		}
	}()
	return done
}
