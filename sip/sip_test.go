package sip_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"
	"github.com/emiago/diago/media/sdp"
	sipgosip "github.com/emiago/sipgo/sip"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/voice"
)

// An answered call carries audio both ways, a keypad digit reaches the
// agent, and the caller's BYE ends it with caller_hangup.
func TestInboundCallAudioDTMFAndCallerBye(t *testing.T) {
	t.Parallel()
	ctl := newFakeController()
	srv := startServer(t, inboundConfig(), ctl)
	p := newPeer(t, nil)
	ctx := context.Background()

	d, med, err := p.call(ctx, "+15550100", srv.Addr(), diago.InviteOptions{
		Headers: []sipgosip.Header{&sipgosip.FromHeader{Address: uri(t, "+34600111222", "127.0.0.1"), Params: sipgosip.NewParams()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	if c.info.Direction != voice.Inbound || c.info.Agent != "a" || c.info.PhoneNumber != "+34600111222" || c.info.Trunk != "local" {
		t.Fatalf("call info %+v", c.info)
	}
	heard := listen(med)
	stop := make(chan struct{})
	spoke := speak(med, stop)
	waitFor(t, "the peer to hear the agent", 5*time.Second, func() bool { return heard.Voiced() > 10 })
	waitFor(t, "the agent to hear the peer", 5*time.Second, func() bool { return c.Voiced() > 10 })
	close(stop) // one writer at a time on the peer's RTP stream
	<-spoke

	w, err := med.AudioWriterDTMF()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteDTMF('5'); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the digit", 5*time.Second, func() bool { return c.Digits() == "5" })

	if err := d.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitDone(t)
	if c.Outcome() != voice.OutcomeCallerHangup {
		t.Fatalf("outcome %q", c.Outcome())
	}
	waitFor(t, "the call to be released", 5*time.Second, func() bool { return srv.Active() == 0 })
}

// The agent hangs up: the box sends BYE.
func TestBoxHangsUp(t *testing.T) {
	t.Parallel()
	ctl := newFakeController()
	ctl.onRun = func(c *fakeCall) {
		c.Close(voice.OutcomeCompleted)
		_ = c.Controls().Hangup(context.Background())
	}
	srv := startServer(t, inboundConfig(), ctl)
	p := newPeer(t, nil)
	d, _, err := p.call(context.Background(), "100", srv.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	select {
	case <-d.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("no BYE from the box")
	}
	c.waitDone(t)
	if c.Outcome() != voice.OutcomeCompleted {
		t.Fatalf("outcome %q", c.Outcome())
	}
}

// Refusals: an unknown source 403, an unrouted number 404, the call limit
// 503, an agent the controller does not know 404.
func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("unknown source", func(t *testing.T) {
		t.Parallel()
		cfg := inboundConfig()
		cfg.Trunks.Inbound[0].Sources = []string{"10.0.0.0/8"}
		srv := startServer(t, cfg, newFakeController())
		_, _, err := newPeer(t, nil).call(ctx, "100", srv.Addr(), diago.InviteOptions{})
		if statusOf(err) != sipgosip.StatusForbidden {
			t.Fatalf("got %v, want 403", err)
		}
	})
	t.Run("unrouted number", func(t *testing.T) {
		t.Parallel()
		cfg := inboundConfig()
		cfg.Trunks.Inbound[0].Routes = []config.Route{{Number: "+1555*", Agent: "a"}}
		ctl := newFakeController()
		srv := startServer(t, cfg, ctl)
		p := newPeer(t, nil)
		if _, _, err := p.call(ctx, "+34999", srv.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusNotFound {
			t.Fatalf("got %v, want 404", err)
		}
		d, _, err := p.call(ctx, "+15550123", srv.Addr(), diago.InviteOptions{})
		if err != nil {
			t.Fatalf("routed number: %v", err)
		}
		ctl.next(t)
		_ = d.Hangup(ctx)
	})
	t.Run("call limit", func(t *testing.T) {
		t.Parallel()
		cfg := inboundConfig()
		cfg.MaxCalls = 1
		ctl := newFakeController()
		srv := startServer(t, cfg, ctl)
		p := newPeer(t, nil)
		d, _, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctl.next(t)
		if _, _, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusServiceUnavailable {
			t.Fatalf("got %v, want 503", err)
		}
		_ = d.Hangup(ctx)
		waitFor(t, "the first call to end", 5*time.Second, func() bool { return srv.Active() == 0 })
		d, _, err = p.call(ctx, "100", srv.Addr(), diago.InviteOptions{})
		if err != nil {
			t.Fatalf("after the limit freed: %v", err)
		}
		_ = d.Hangup(ctx)
	})
	t.Run("controller refuses", func(t *testing.T) {
		t.Parallel()
		ctl := newFakeController()
		ctl.err = voice.ErrAtCapacity
		srv := startServer(t, inboundConfig(), ctl)
		if _, _, err := newPeer(t, nil).call(ctx, "100", srv.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusServiceUnavailable {
			t.Fatalf("got %v, want 503", err)
		}
		ctl.mu.Lock()
		ctl.err = voice.ErrUnknownAgent
		ctl.mu.Unlock()
		if _, _, err := newPeer(t, nil).call(ctx, "100", srv.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusNotFound {
			t.Fatalf("got %v, want 404", err)
		}
	})
}

// A caller that gives up while the box is still opening the call (CANCEL
// before the answer) gets 487 and the call closes as cancelled.
func TestCancelBeforeAnswer(t *testing.T) {
	t.Parallel()
	ctl := newFakeController()
	gate := make(chan struct{})
	ctl.gate = gate
	srv := startServer(t, inboundConfig(), ctl)
	p := newPeer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ringing := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, _, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{OnResponse: func(res *sipgosip.Response) error {
			if res.StatusCode == sipgosip.StatusRinging {
				select {
				case ringing <- struct{}{}:
				default:
				}
			}
			return nil
		}})
		errc <- err
	}()
	select {
	case <-ringing:
	case <-time.After(5 * time.Second):
		t.Fatal("no 180 Ringing")
	}
	cancel() // sends CANCEL
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the call was answered after CANCEL")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the INVITE did not end after CANCEL")
	}
	waitFor(t, "the call to be released", 5*time.Second, func() bool { return srv.Active() == 0 })
	close(gate) // a late Open must not answer anything
	ctl.mu.Lock()
	n := len(ctl.calls)
	ctl.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d calls opened after CANCEL", n)
	}
}

// The controller finishes opening after the caller cancelled: the call is
// closed as cancelled and never answered or run.
func TestCancelWhileOpeningClosesTheCall(t *testing.T) {
	t.Parallel()
	ctl := newFakeController()
	gate := make(chan struct{})
	ctl.gate, ctl.ignoreCancel = gate, true
	ctl.onRun = func(c *fakeCall) { t.Error("a cancelled call ran") }
	srv := startServer(t, inboundConfig(), ctl)
	p := newPeer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	_, _, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{OnResponse: func(res *sipgosip.Response) error {
		if res.StatusCode == sipgosip.StatusRinging {
			cancel()
		}
		return nil
	}})
	if err == nil {
		t.Fatal("answered after CANCEL")
	}
	close(gate) // the open completes only now
	c := ctl.next(t)
	waitFor(t, "the call to close", 5*time.Second, func() bool { return c.Outcome() != "" })
	if c.Outcome() != voice.OutcomeCancelled {
		t.Fatalf("outcome %q", c.Outcome())
	}
	waitFor(t, "the call to be released", 5*time.Second, func() bool { return srv.Active() == 0 })
}

// Hold (re-INVITE sendonly) and a codec change (re-INVITE offering PCMA
// only) keep the call; on hold the media timeout does not fire.
func TestReInviteHoldAndCodecChangeKeepTheCall(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.MediaTimeout = 1500 * time.Millisecond
	ctl := newFakeController()
	srv := startServer(t, cfg, ctl)
	p := newPeer(t, nil)
	ctx := context.Background()
	d, med, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	heard := listen(med)
	stop := make(chan struct{})
	spoke := speak(med, stop)
	waitFor(t, "PCMU audio", 5*time.Second, func() bool { return heard.Packets(0) > 10 })

	// Hold: the peer stops sending for longer than the media timeout.
	close(stop)
	<-spoke
	if err := d.Hold(ctx); err != nil {
		t.Fatalf("hold: %v", err)
	}
	before := heard.Packets(0)
	holdUntil := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(holdUntil) {
		if c.Outcome() != "" {
			t.Fatalf("the call ended on hold: %q", c.Outcome())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := heard.Packets(0) - before; got > 5 {
		t.Fatalf("the box sent %d packets to a held call", got)
	}
	if err := d.Unhold(ctx); err != nil {
		t.Fatalf("unhold: %v", err)
	}
	stop = make(chan struct{})
	defer close(stop)
	speak(med, stop)

	// Codec change: offer PCMA only.
	ms := med.MediaSession()
	ms.Codecs = []media.Codec{media.CodecAudioAlaw, media.CodecTelephoneEvent8000}
	if err := d.ReInvite(ctx); err != nil {
		t.Fatalf("re-INVITE PCMA: %v", err)
	}
	waitFor(t, "PCMA audio from the box", 5*time.Second, func() bool { return heard.Packets(8) > 10 })
	if c.Outcome() != "" {
		t.Fatalf("the call ended: %q", c.Outcome())
	}
	n := c.Voiced()
	waitFor(t, "the box to decode PCMA", 5*time.Second, func() bool { return c.Voiced() > n+10 })
	_ = d.Hangup(ctx)
	c.waitDone(t)
}

// No RTP for the media timeout: the call ends with media_timeout and the
// box sends BYE.
func TestMediaTimeout(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.MediaTimeout = time.Second
	ctl := newFakeController()
	srv := startServer(t, cfg, ctl)
	d, _, err := newPeer(t, nil).call(context.Background(), "100", srv.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	select {
	case <-d.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no BYE after the media timeout")
	}
	c.waitDone(t)
	if c.Outcome() != voice.OutcomeMediaTimeout {
		t.Fatalf("outcome %q", c.Outcome())
	}
}

// A call longer than the maximum ends with max_duration and a BYE.
func TestMaximumCallLength(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.MaxCallDuration = time.Second
	ctl := newFakeController()
	srv := startServer(t, cfg, ctl)
	p := newPeer(t, nil)
	d, med, err := p.call(context.Background(), "100", srv.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	speak(med, stop)
	c := ctl.next(t)
	select {
	case <-d.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no BYE at the maximum length")
	}
	c.waitDone(t)
	if c.Outcome() != voice.OutcomeMaxDuration {
		t.Fatalf("outcome %q", c.Outcome())
	}
}

// Session timers (RFC 4028): the box answers Session-Expires, refreshes
// when it is the refresher, and ends a session the other side stopped
// refreshing.
func TestSessionTimers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := inboundConfig()
	cfg.SessionTimer = 2 * time.Second // below RFC 4028's 90 s, for the test

	t.Run("caller refreshes and stops", func(t *testing.T) {
		t.Parallel()
		ctl := newFakeController()
		srv := startServer(t, cfg, ctl)
		p := newPeer(t, nil)
		d, med, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{Headers: []sipgosip.Header{
			sipgosip.NewHeader("Session-Expires", "2;refresher=uac"), sipgosip.NewHeader("Supported", "timer"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer close(stop)
		speak(med, stop)
		res := d.InviteResponse
		if se := res.GetHeader("Session-Expires"); se == nil || se.Value() != "2;refresher=uac" || res.GetHeader("Require") == nil {
			t.Fatalf("200 OK lacks the session timer: %s", res.String())
		}
		c := ctl.next(t)
		select {
		case <-d.Context().Done():
		case <-time.After(10 * time.Second):
			t.Fatal("no BYE after the session expired")
		}
		c.waitDone(t)
		if c.Outcome() != voice.OutcomeFailed {
			t.Fatalf("outcome %q", c.Outcome())
		}
	})
	t.Run("caller refreshes with UPDATE", func(t *testing.T) {
		t.Parallel()
		ctl := newFakeController()
		srv := startServer(t, cfg, ctl)
		p := newPeer(t, nil)
		d, med, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{Headers: []sipgosip.Header{
			sipgosip.NewHeader("Session-Expires", "2;refresher=uac"), sipgosip.NewHeader("Supported", "timer"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer close(stop)
		speak(med, stop)
		c := ctl.next(t)
		for range 4 {
			time.Sleep(500 * time.Millisecond) // the refresh interval of this peer
			req := sipgosip.NewRequest(sipgosip.UPDATE, d.RemoteContact().Address)
			req.AppendHeader(sipgosip.NewHeader("Session-Expires", "2;refresher=uac"))
			res, err := d.Do(ctx, req)
			if err != nil || res.StatusCode != 200 || res.GetHeader("Session-Expires") == nil {
				t.Fatalf("UPDATE: %v %v", res, err)
			}
		}
		if c.Outcome() != "" {
			t.Fatalf("refreshed call ended: %q", c.Outcome())
		}
		_ = d.Hangup(ctx)
		c.waitDone(t)
	})
	t.Run("the box refreshes", func(t *testing.T) {
		t.Parallel()
		ctl := newFakeController()
		srv := startServer(t, cfg, ctl)
		p := newPeer(t, nil)
		// No Supported: timer, so the box must refresh: a re-INVITE every
		// half interval, which the peer sees as a media update.
		d, err := p.dg.NewDialog(uri(t, "100", srv.Addr()), diago.NewDialogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var updates atomic.Int32
		med, err := d.Invite(ctx, diago.InviteClientOptions{OnMediaUpdate: func(*diago.DialogMedia) { updates.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer close(stop)
		speak(med, stop)
		if se := d.InviteResponse.GetHeader("Session-Expires"); se == nil || se.Value() != "2;refresher=uas" {
			t.Fatalf("200 OK: %s", d.InviteResponse.String())
		}
		c := ctl.next(t)
		start := time.Now()
		waitFor(t, "three refreshes", 10*time.Second, func() bool { return updates.Load() >= 3 })
		if time.Since(start) < 2500*time.Millisecond {
			t.Fatalf("three refreshes within %s, want one a second", time.Since(start))
		}
		if c.Outcome() != "" {
			t.Fatalf("the call ended: %q", c.Outcome())
		}
		_ = d.Hangup(ctx)
		c.waitDone(t)
	})
	t.Run("interval too small", func(t *testing.T) {
		t.Parallel()
		srv := startServer(t, cfg, newFakeController())
		_, _, err := newPeer(t, nil).call(ctx, "100", srv.Addr(), diago.InviteOptions{Headers: []sipgosip.Header{
			sipgosip.NewHeader("Session-Expires", "1"), sipgosip.NewHeader("Supported", "timer"),
		}})
		if statusOf(err) != 422 {
			t.Fatalf("got %v, want 422", err)
		}
	})
}

// Malformed requests get a 4xx, never a crash, and the server answers the
// next INVITE.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	ctl := newFakeController()
	srv := startServer(t, inboundConfig(), ctl)
	conn, err := net.Dial("udp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(raw string) string {
		t.Helper()
		if _, err := conn.Write([]byte(strings.ReplaceAll(raw, "\n", "\r\n"))); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			if s := string(buf[:n]); !strings.HasPrefix(s, "SIP/2.0 1") {
				return s
			}
		}
	}
	local := conn.LocalAddr().String()
	head := func(branch, callID string) string {
		return "Via: SIP/2.0/UDP " + local + ";branch=z9hG4bK" + branch + "\n" +
			"From: <sip:x@127.0.0.1>;tag=1\nTo: <sip:100@127.0.0.1>\nCall-ID: " + callID + "\nMax-Forwards: 70\n"
	}
	offer := string(sdpOffer(t, conn.LocalAddr().(*net.UDPAddr).IP, 40000, "0", "8"))
	for name, c := range map[string]struct {
		raw  string
		want string
	}{
		"broken CSeq": {"INVITE sip:100@127.0.0.1 SIP/2.0\n" + head("a1", "m1") + "CSeq: one INVITE\nContent-Length: 0\n\n", "SIP/2.0 400"},
		"no Contact": {"INVITE sip:100@127.0.0.1 SIP/2.0\n" + head("a2", "m2") + "CSeq: 1 INVITE\nContent-Type: application/sdp\nContent-Length: " +
			itoa(len(offer)) + "\n\n" + offer, "SIP/2.0 400"},
		"bad SDP": {"INVITE sip:100@127.0.0.1 SIP/2.0\n" + head("a3", "m3") + "CSeq: 1 INVITE\nContact: <sip:x@" + local + ">\n" +
			"Content-Type: application/sdp\nContent-Length: 9\n\nnot sdp\n\n", "SIP/2.0 400"},
		"no G.711": {"INVITE sip:100@127.0.0.1 SIP/2.0\n" + head("a4", "m4") + "CSeq: 1 INVITE\nContact: <sip:x@" + local + ">\n" +
			"Content-Type: application/sdp\nContent-Length: " + itoa(len(sdpOpusOnly(t))) + "\n\n" + sdpOpusOnly(t), "SIP/2.0 488"},
		"body not SDP": {"INVITE sip:100@127.0.0.1 SIP/2.0\n" + head("a5", "m5") + "CSeq: 1 INVITE\nContact: <sip:x@" + local + ">\n" +
			"Content-Type: text/plain\nContent-Length: 5\n\nhello", "SIP/2.0 415"},
		"late offer": {"INVITE sip:100@127.0.0.1 SIP/2.0\n" + head("a8", "m8") + "CSeq: 1 INVITE\nContact: <sip:x@" + local + ">\n" +
			"Content-Length: 0\n\n", "SIP/2.0 488"},
		"unsupported extension": {"INVITE sip:100@127.0.0.1 SIP/2.0\n" + head("a6", "m6") + "CSeq: 1 INVITE\nContact: <sip:x@" + local + ">\n" +
			"Require: 100rel\nContent-Length: 0\n\n", "SIP/2.0 420"},
		"BYE outside a dialog": {"BYE sip:100@127.0.0.1 SIP/2.0\n" + strings.Replace(head("a7", "m7"), "<sip:100@127.0.0.1>", "<sip:100@127.0.0.1>;tag=9", 1) +
			"CSeq: 2 BYE\nContent-Length: 0\n\n", "SIP/2.0 481"},
	} {
		if got := send(c.raw); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: got %q, want %s", name, firstLine(got), c.want)
		}
	}
	// Garbage that is no request at all is dropped; the server still works.
	_, _ = conn.Write([]byte("\x00\x01garbage\r\n\r\n"))
	d, _, err := newPeer(t, nil).call(context.Background(), "100", srv.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatalf("the INVITE after the malformed ones: %v", err)
	}
	ctl.next(t)
	_ = d.Hangup(context.Background())
}

// INVITE over TCP works like UDP.
func TestInviteOverTCP(t *testing.T) {
	t.Parallel()
	ctl := newFakeController()
	srv := startServer(t, inboundConfig(), ctl)
	p := newPeer(t, nil)
	d, med, err := p.dg.Invite(context.Background(), uri(t, "100", srv.Addr()+";transport=tcp"), diago.InviteOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	heard := listen(med)
	c := ctl.next(t)
	waitFor(t, "audio over a TCP-signalled call", 5*time.Second, func() bool { return heard.Voiced() > 5 })
	_ = d.Hangup(context.Background())
	c.waitDone(t)
}

// A trunk with credentials challenges (401) and accepts the right answer;
// a wrong password is refused with 403.
func TestDigestTrunk(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.Trunks.Inbound[0].Sources = nil
	cfg.Trunks.Inbound[0].Username = "carrier"
	cfg.Trunks.Inbound[0].Password = "s3cret"
	ctl := newFakeController()
	srv := startServer(t, cfg, ctl)
	p := newPeer(t, nil)
	ctx := context.Background()
	if _, _, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{Username: "carrier", Password: "wrong"}); statusOf(err) != sipgosip.StatusForbidden {
		t.Fatalf("wrong password: %v", err)
	}
	d, _, err := p.call(ctx, "100", srv.Addr(), diago.InviteOptions{Username: "carrier", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	ctl.next(t)
	_ = d.Hangup(ctx)
}

// Transfer sends REFER; once the transfer target answered (NOTIFY 200) the
// box hangs up and the outcome is transferred.
func TestTransferSendsRefer(t *testing.T) {
	t.Parallel()
	operatorCalls := make(chan string, 1)
	operator := newPeer(t, func(d *diago.DialogServerSession) {
		operatorCalls <- d.ToUser()
		_ = d.Trying()
		if _, err := d.Answer(diago.AnswerOptions{}); err != nil {
			return
		}
		<-d.Context().Done()
	})
	ctl := newFakeController()
	transferred := make(chan error, 1)
	target := "sip:operator@127.0.0.1:" + itoa(operator.port)
	ctl.onRun = func(c *fakeCall) {
		transferred <- c.Controls().Transfer(context.Background(), target)
	}
	srv := startServer(t, inboundConfig(), ctl)
	p := newPeer(t, nil)
	// The caller's phone follows the REFER: it calls the target, and the
	// box hears NOTIFY 200 once the target answered.
	d, err := p.dg.NewDialog(uri(t, "100", srv.Addr()), diago.NewDialogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.Invite(ctx, diago.InviteClientOptions{OnRefer: func(referDialog *diago.DialogClientSession) error {
		if _, err := referDialog.Invite(ctx, diago.InviteClientOptions{}); err != nil {
			return err
		}
		return referDialog.Ack(ctx)
	}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	select {
	case err := <-transferred:
		if err != nil {
			t.Fatalf("transfer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the transfer did not finish")
	}
	if got := <-operatorCalls; got != "operator" {
		t.Fatalf("the operator got a call for %q", got)
	}
	select {
	case <-d.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the box did not hang up after the transfer")
	}
	c.waitDone(t)
	if c.Outcome() != voice.OutcomeTransferred {
		t.Fatalf("outcome %q", c.Outcome())
	}
}

// A refused transfer returns ErrTransferFailed and the call goes on.
func TestTransferRefused(t *testing.T) {
	t.Parallel()
	ctl := newFakeController()
	transferred := make(chan error, 1)
	ctl.onRun = func(c *fakeCall) {
		transferred <- c.Controls().Transfer(context.Background(), "not a target")
	}
	srv := startServer(t, inboundConfig(), ctl)
	d, _, err := newPeer(t, nil).call(context.Background(), "100", srv.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	if err := <-transferred; !errors.Is(err, sip.ErrTransferFailed) {
		t.Fatalf("transfer: %v", err)
	}
	if c.Outcome() != "" {
		t.Fatalf("the call ended: %q", c.Outcome())
	}
	_ = d.Hangup(context.Background())
	c.waitDone(t)
}

func itoa(n int) string { return strconv.Itoa(n) }

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

// sdpOffer is an audio offer made by diago's SDP helper.
func sdpOffer(t testing.TB, ip net.IP, port int, formats ...string) []byte {
	t.Helper()
	return sdp.GenerateForAudio(ip, ip, port, sdp.ModeSendrecv, sdp.NewFormats(formats...))
}

// sdpOpusOnly offers Opus alone, which the box does not take.
func sdpOpusOnly(t testing.TB) string {
	return string(sdpOffer(t, net.IPv4(127, 0, 0, 1), 40002, sdp.FORMAT_TYPE_OPUS))
}
