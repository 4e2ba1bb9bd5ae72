// Package siptest is the phones of tests outside package sip. Caller is a
// real user agent (diago over sipgo) on loopback that calls the box, speaks
// speech-like G.711 audio with pauses, and measures what it hears; Baresip
// runs the real softphone with a recorded voice (SpeechFile). They stand
// in for phones, never for the box.
//
//	c := siptest.NewCaller(t)
//	call, err := c.Call(ctx, "100", boxSIPAddr)
//	call.Talk(2) // two bursts of speech, then line noise
//	poll.Until(t, "the greeting", 10*time.Second, func() bool { return call.Voiced() > 20 })
//	<-call.Ended()
//
//	ph := siptest.StartBaresip(t, "+34600111222", siptest.SpeechFile(t, dir, "Hello.", 2.5, 5), "sip:100@"+boxSIPAddr)
//	ph.CallEnded(t, time.Minute)
package siptest

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/zaf/g711"

	"github.com/stackbone/box/internal/freeport"
	boxsip "github.com/stackbone/box/sip"
)

// Caller is a SIP phone on 127.0.0.1.
type Caller struct {
	dg    *diago.Diago
	close func()
}

// NewCaller starts a user agent on a free loopback port; it stops when the
// test ends.
func NewCaller(t testing.TB) *Caller {
	t.Helper()
	c, err := Start(freeport.Get(t, freeport.UDP))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Phone is a SIP phone on 127.0.0.1 that answers every call it gets: the
// far end of an outbound trunk, whose proxy is Addr.
type Phone struct {
	*Caller
	// Addr is where it listens (host:port).
	Addr      string
	calls     chan *Call
	rang      atomic.Int32
	cancelled atomic.Int32
}

// NewPhone starts an answering phone on a free loopback port; it stops
// when the test ends.
func NewPhone(t testing.TB) *Phone { return startPhone(t, true) }

// NewRingingPhone starts a phone that rings and never answers: the far end
// of a call nobody picks up, until the caller cancels it.
func NewRingingPhone(t testing.TB) *Phone { return startPhone(t, false) }

func startPhone(t testing.TB, answer bool) *Phone {
	t.Helper()
	port := freeport.Get(t, freeport.UDP)
	p := &Phone{Addr: "127.0.0.1:" + strconv.Itoa(port), calls: make(chan *Call, 16)}
	c, err := serve(port, func(d *diago.DialogServerSession) {
		p.rang.Add(1)
		_ = d.Ringing()
		if !answer {
			<-d.Context().Done() // a CANCEL (or the phone's end)
			p.cancelled.Add(1)
			return
		}
		med, err := d.Answer(diago.AnswerOptions{})
		if err != nil {
			return
		}
		call := &Call{d: d, med: med, To: d.ToUser(), stop: make(chan struct{})}
		go call.hear()
		p.calls <- call
		<-d.Context().Done() // the dialog lives while the handler runs
	})
	if err != nil {
		t.Fatal(err)
	}
	p.Caller = c
	t.Cleanup(c.Close)
	return p
}

// Cancelled is how many calls that rang at a ringing phone were given up.
func (p *Phone) Cancelled() int { return int(p.cancelled.Load()) }

// Rang is how many calls reached the phone.
func (p *Phone) Rang() int { return int(p.rang.Load()) }

// Answered returns the calls the phone answered, as it answers them.
func (p *Phone) Answered() <-chan *Call { return p.calls }

// Start starts a user agent on a loopback port (load tools; tests use
// NewCaller, whose port comes from freeport: one the kernel handed out and
// the test closed again could go to another test's socket before the agent
// bound it). Port 0 takes one the kernel hands out. Close stops it.
func Start(port int) (*Caller, error) {
	return serve(port, func(d *diago.DialogServerSession) {
		_ = d.Respond(sip.StatusBusyHere, "Busy Here", nil)
	})
}

// serve starts a user agent on port whose incoming calls go to answer.
func serve(port int, answer func(d *diago.DialogServerSession)) (*Caller, error) {
	// The box's SIP server lifts two process-wide limits of sipgo once; a
	// phone started before the box in the same process would read them
	// while they change.
	boxsip.PrepareLibrary()
	if port == 0 {
		l, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port = l.LocalAddr().(*net.UDPAddr).Port
		l.Close()
	}
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("siptest"))
	if err != nil {
		return nil, err
	}
	dg := diago.NewDiago(ua, diago.WithTransport(diago.Transport{Transport: "udp", BindHost: "127.0.0.1", BindPort: port}))
	ctx, cancel := context.WithCancel(context.Background())
	if err := dg.ServeBackground(ctx, answer); err != nil {
		cancel()
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if c, err := ua.TransportLayer().GetConnection("udp", addr); err == nil && c != nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			ua.Close()
			return nil, errors.New("siptest: the caller's listener did not start")
		}
	}
	return &Caller{dg: dg, close: func() { cancel(); ua.Close() }}, nil
}

// Close stops the user agent.
func (c *Caller) Close() { c.close() }

// Call is one answered call.
type Call struct {
	d   dialog
	med *diago.DialogMedia
	// To is the number dialled, on a call the phone answered.
	To string

	mu     sync.Mutex
	voiced int         // 20 ms packets heard with speech in them
	onsets []time.Time // when speech began after a pause (see Onsets)
	last   time.Time   // the latest packet with speech
	bursts []time.Time // when each burst of speech Talk sends began
	stop   chan struct{}
	once   sync.Once
	talks  chan int // to the call's audio writer, once Talk started it
}

// Call dials user at addr (host:port) from the number from, and returns
// once the box answered. It hears from then on.
func (c *Caller) Call(ctx context.Context, user, addr, from string) (*Call, error) {
	var u sip.Uri
	if err := sip.ParseUri("sip:"+user+"@"+addr, &u); err != nil {
		return nil, err
	}
	opts := diago.InviteOptions{}
	if from != "" {
		opts.Headers = []sip.Header{sip.NewHeader("P-Asserted-Identity", "<sip:"+from+"@127.0.0.1>")}
	}
	d, med, err := c.dg.Invite(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	call := &Call{d: d, med: med, stop: make(chan struct{})}
	go call.hear()
	return call, nil
}

// dialog is a call's SIP dialog, placed or answered.
type dialog interface {
	Context() context.Context
	Hangup(ctx context.Context) error
}

// Status is the SIP status of a failed Call's final response, 0 if none.
func Status(err error) int {
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

func (c *Call) hear() {
	r, err := c.med.AudioReader()
	if err != nil {
		return
	}
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
		var sum float64
		for _, b := range buf[:n] {
			v := float64(g711.DecodeUlawFrame(b))
			sum += v * v
		}
		if n > 0 && math.Sqrt(sum/float64(n)) > 1000 {
			now := time.Now()
			c.mu.Lock()
			c.voiced++
			if now.Sub(c.last) >= onsetPause && len(c.onsets) < 10000 {
				c.onsets = append(c.onsets, now)
			}
			c.last = now
			c.mu.Unlock()
		}
	}
}

// onsetPause is the silence before speech that makes it an onset.
const onsetPause = 300 * time.Millisecond

// Onsets are the times the caller heard speech begin after at least 300
// ms without any: the starts of the agent's sentences, as the caller's ear
// has them.
func (c *Call) Onsets() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.onsets...)
}

// Voiced is how many 20 ms packets with speech the caller heard so far.
func (c *Call) Voiced() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.voiced
}

// Talk sends audio until the call ends: bursts times 0.8 s of speech-like
// tone (syllables with short gaps) after 0.4 s of line noise, each burst
// followed by 1.2 s of line noise, then line noise only. A later Talk
// starts its bursts afresh on the same stream (one writer a call).
func (c *Call) Talk(bursts int) {
	c.mu.Lock()
	start := c.talks == nil
	if start {
		c.talks = make(chan int, 8)
	}
	talks := c.talks
	c.mu.Unlock()
	talks <- bursts
	if start {
		go c.speak(talks)
	}
}

// speak is the call's one audio writer (see Talk).
func (c *Call) speak(talks <-chan int) {
	w, err := c.med.AudioWriter()
	if err != nil {
		return
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	payload := make([]byte, 160)
	bursts, i := 0, 0
	for {
		select {
		case <-c.stop:
			return
		case <-c.d.Context().Done():
			return
		case bursts = <-talks:
			i = 0
			continue
		case <-tick.C:
		}
		voiced := i%100 >= 20 && i%100 < 60 && i%10 < 8 && i/100 < bursts
		for j := range payload {
			v := int16((j*7919)%61 - 30)
			if voiced {
				v = int16(10000 * math.Sin(2*math.Pi*300*float64(i*160+j)/8000))
			}
			payload[j] = g711.EncodeUlawFrame(v)
		}
		if _, err := w.Write(payload); err != nil {
			return
		}
		if voiced && i%100 == 20 {
			now := time.Now()
			c.mu.Lock()
			c.bursts = append(c.bursts, now)
			c.mu.Unlock()
		}
		i++
	}
}

// Bursts are the times Talk's bursts of speech began: when each one's
// first packet was written (on a loaded machine later than Talk's schedule
// says).
func (c *Call) Bursts() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.bursts...)
}

// Ended is closed when the dialog ended (the box's BYE, or Hangup).
func (c *Call) Ended() <-chan struct{} { return c.d.Context().Done() }

// Hangup sends BYE.
func (c *Call) Hangup(ctx context.Context) error {
	c.once.Do(func() { close(c.stop) })
	return c.d.Hangup(ctx)
}
