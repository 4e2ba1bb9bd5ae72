package sip_test

import (
	"context"
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
	openai "github.com/sashabaranov/go-openai"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/voice"
)

// An answered call carries audio both ways (the caller hears the greeting,
// the caller's speech reaches speech-to-text), a keypad digit reaches the
// agent as a turn, and the caller's BYE ends it with caller_hangup.
func TestInboundCallAudioDTMFAndCallerBye(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	srv := b.sip
	p := newPeer(t, nil)
	ctx := context.Background()

	d, med, err := p.call(ctx, "+15550100", srv.Addr(), diago.InviteOptions{
		Headers: []sipgosip.Header{&sipgosip.FromHeader{Address: uri(t, "+34600111222", "127.0.0.1"), Params: sipgosip.NewParams()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	r, err := b.mgr.Get(ctx, c.ID())
	if err != nil {
		t.Fatal(err)
	}
	if r.Direction != voice.Inbound || r.Agent != "a" || r.PhoneNumber == nil || *r.PhoneNumber != "+34600111222" ||
		r.Trunk == nil || *r.Trunk != "local" || r.Memory == nil || r.Memory.Identity != "+34600111222" {
		t.Fatalf("call record %+v", r)
	}
	if port := med.MediaSession().Raddr.Port; port != srv.Stats().Shared.Port {
		t.Fatalf("the answer names RTP port %d, not the shared %d", port, srv.Stats().Shared.Port)
	}
	heard := listen(med)
	poll.Until(t, "the peer to hear the greeting", 10*time.Second, func() bool { return heard.Voiced() > 10 })
	if got := b.model.SpeechRequests(); len(got) == 0 || got[0] != "Hello, this is the front desk." {
		t.Fatalf("speech requests %q", got)
	}
	stop := make(chan struct{})
	spoke := talk(med, stop, 1)
	poll.Until(t, "the caller's speech to reach speech-to-text", 10*time.Second, func() bool { return b.voicedUploads() > 0 })
	poll.Until(t, "the answer to the caller's turn", 10*time.Second, func() bool { return b.chatContains("Hello there.") })
	close(stop) // one writer at a time on the peer's RTP stream
	<-spoke

	w, err := med.AudioWriterDTMF()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteDTMF('5'); err != nil {
		t.Fatal(err)
	}
	const keypad = "(The caller pressed 5 on the keypad.)"
	poll.Until(t, "the digit to reach the agent", 10*time.Second, func() bool { return b.chatContains(keypad) })

	if err := d.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	r = b.ended(t, c)
	if outcome(r) != voice.OutcomeCallerHangup || r.AnsweredAt == nil {
		t.Fatalf("call record: outcome %q answered %v", outcome(r), r.AnsweredAt)
	}
	var users []string
	for _, e := range r.Transcript {
		if e.Role == voice.RoleUser {
			users = append(users, e.Text)
		}
	}
	if strings.Join(users, "|") != "Hello there.|"+keypad {
		t.Fatalf("caller turns in the transcript: %q", users)
	}
	// The call's setup was timed once, INVITE to 200 OK.
	var timed int64
	for _, n := range srv.Stats().Setup {
		timed += n
	}
	if timed != 1 {
		t.Fatalf("%d setups timed for one call", timed)
	}
	// Both ways went through the shared port. A packet or two the caller
	// had in flight as it hung up may reach the route after it closed.
	if st := srv.Stats().Shared; st.Received < 50 || st.Sent < 50 || st.Unrouted > 2 {
		t.Fatalf("shared port: %+v", st)
	}
	b.idle(t)
}

// A trunk that needs its own port: the call is answered on a port of its
// own and carries audio both ways without the shared port.
func TestTrunkWithItsOwnRTPPort(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.Trunks.Inbound[0].OwnRTPPort = true
	b := newProtocolBox(t, cfg, "", nil)
	p := newPeer(t, nil)
	ctx := context.Background()
	d, med, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	shared := b.sip.Stats().Shared.Port
	if port := med.MediaSession().Raddr.Port; port == shared || port == 0 {
		t.Fatalf("the answer names RTP port %d (shared %d)", port, shared)
	}
	heard := listen(med)
	poll.Until(t, "the peer to hear the greeting", 10*time.Second, func() bool { return heard.Voiced() > 10 })
	stop := make(chan struct{})
	spoke := talk(med, stop, 1)
	poll.Until(t, "the answer to the caller's turn", 10*time.Second, func() bool { return b.chatContains("Hello there.") })
	close(stop)
	<-spoke
	if st := b.sip.Stats().Shared; st.Received != 0 || st.Sent != 0 {
		t.Fatalf("the shared port carried %+v", st)
	}
	_ = d.Hangup(ctx)
	if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup {
		t.Fatalf("outcome %q", outcome(r))
	}
}

// The controller ends the call (Call.Close): the box sends BYE.
func TestBoxHangsUp(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	p := newPeer(t, nil)
	d, _, err := p.call(context.Background(), "100", b.sip.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	c.End(voice.OutcomeCompleted, "")
	select {
	case <-d.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no BYE from the box")
	}
	if r := b.ended(t, c); outcome(r) != voice.OutcomeCompleted {
		t.Fatalf("outcome %q", outcome(r))
	}
	b.idle(t)
}

// Refusals: an unknown source 403, an unrouted number 404, a route to an
// agent the controller does not know 404, the SIP call limit and the
// controller's 503, a controller that cannot record the call 500; each
// limit frees once the call ended.
func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("unknown source", func(t *testing.T) {
		t.Parallel()
		cfg := inboundConfig()
		cfg.Trunks.Inbound[0].Sources = []string{"10.0.0.0/8"}
		b := newProtocolBox(t, cfg, "", nil)
		_, _, err := newPeer(t, nil).call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
		if statusOf(err) != sipgosip.StatusForbidden {
			t.Fatalf("got %v, want 403", err)
		}
	})
	t.Run("unrouted number and unknown agent", func(t *testing.T) {
		t.Parallel()
		cfg := inboundConfig()
		cfg.Trunks.Inbound[0].Routes = []config.Route{{Number: "+1999*", Agent: "ghost"}, {Number: "+1555*", Agent: "a"}}
		b := newProtocolBox(t, cfg, "", nil)
		p := newPeer(t, nil)
		if _, _, err := p.call(ctx, "+34999", b.sip.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusNotFound {
			t.Fatalf("unrouted: got %v, want 404", err)
		}
		if _, _, err := p.call(ctx, "+19990001", b.sip.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusNotFound {
			t.Fatalf("unknown agent: got %v, want 404", err)
		}
		d, med, err := p.call(ctx, "+15550123", b.sip.Addr(), diago.InviteOptions{})
		if err != nil {
			t.Fatalf("routed number: %v", err)
		}
		c := b.next(t)
		hearGreeting(t, med)
		_ = d.Hangup(ctx)
		if r := b.ended(t, c); r.Agent != "a" || outcome(r) != voice.OutcomeCallerHangup {
			t.Fatalf("call record %+v outcome %q", r, outcome(r))
		}
	})
	limit := func(t *testing.T, cfg config.SIP, tune func(*voice.Config)) {
		b := newProtocolBox(t, cfg, "", tune)
		p := newPeer(t, nil)
		d, _, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := b.next(t)
		if _, _, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusServiceUnavailable {
			t.Fatalf("got %v, want 503", err)
		}
		_ = d.Hangup(ctx)
		b.ended(t, c)
		b.idle(t)
		d, _, err = p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
		if err != nil {
			t.Fatalf("after the limit freed: %v", err)
		}
		c = b.next(t)
		_ = d.Hangup(ctx)
		b.ended(t, c)
	}
	t.Run("SIP call limit", func(t *testing.T) {
		t.Parallel()
		cfg := inboundConfig()
		cfg.MaxCalls = 1
		limit(t, cfg, nil)
	})
	t.Run("controller fails", func(t *testing.T) {
		t.Parallel()
		b := newProtocolBox(t, inboundConfig(), "", nil)
		// The calls table is gone: Open cannot record the call.
		if _, err := b.pool.Exec(ctx, `ALTER TABLE stackbone_platform.voice_calls RENAME TO voice_calls_away`); err != nil {
			t.Fatal(err)
		}
		p := newPeer(t, nil)
		if _, _, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{}); statusOf(err) != sipgosip.StatusInternalServerError {
			t.Fatalf("got %v, want 500", err)
		}
		b.idle(t)
		if _, err := b.pool.Exec(ctx, `ALTER TABLE stackbone_platform.voice_calls_away RENAME TO voice_calls`); err != nil {
			t.Fatal(err)
		}
		d, _, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
		if err != nil {
			t.Fatalf("after the table came back: %v", err)
		}
		c := b.next(t)
		_ = d.Hangup(ctx)
		b.ended(t, c)
	})
}

// A caller that gives up while the box is still opening the call (CANCEL
// before the answer, the controller waiting on the database) gets no
// answer, but the missed call is recorded: the open completes and the call
// ends as cancelled, unanswered, without a word spoken; the slots free and
// the next call is answered.
func TestCancelWhileOpening(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	ctx := context.Background()
	// Hold the calls table so the controller's Open waits on it.
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `LOCK TABLE stackbone_platform.voice_calls IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	p := newPeer(t, nil)
	callCtx, cancel := context.WithCancel(ctx)
	ringing := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, _, err := p.call(callCtx, "100", b.sip.Addr(), diago.InviteOptions{OnResponse: func(res *sipgosip.Response) error {
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
	case <-time.After(10 * time.Second):
		t.Fatal("no 180 Ringing")
	}
	poll.Until(t, "the controller to be opening the call", 10*time.Second, func() bool { return b.mgr.Active() == 1 })
	cancel() // sends CANCEL
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the call was answered after CANCEL")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the INVITE did not end after CANCEL")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	missed := b.next(t)
	if r := b.ended(t, missed); outcome(r) != voice.OutcomeCancelled || r.AnsweredAt != nil {
		t.Fatalf("the cancelled call's record: %+v", r)
	}
	b.idle(t)
	if n := len(b.model.SpeechRequests()); n != 0 {
		t.Fatalf("%d speech requests for a cancelled call", n)
	}
	d, _, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatalf("the call after the cancelled one: %v", err)
	}
	c := b.next(t)
	_ = d.Hangup(ctx)
	b.ended(t, c)
}

// Hold (re-INVITE sendonly) and a codec change (re-INVITE offering PCMA
// only) keep the call; on hold the media timeout does not fire and the box
// sends nothing; after the change the box speaks and hears PCMA.
func TestReInviteHoldAndCodecChangeKeepTheCall(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.MediaTimeout = 1500 * time.Millisecond
	b := newProtocolBox(t, cfg, "", nil)
	p := newPeer(t, nil)
	ctx := context.Background()
	d, med, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	heard := listen(med)
	stop := make(chan struct{})
	spoke := talk(med, stop, 0)
	poll.Until(t, "PCMU audio", 10*time.Second, func() bool { return heard.Packets(0) > 10 && heard.Voiced() > 10 })

	// Hold: the peer stops sending for longer than the media timeout.
	close(stop)
	<-spoke
	if err := d.Hold(ctx); err != nil {
		t.Fatalf("hold: %v", err)
	}
	before := heard.Packets(0)
	holdUntil := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(holdUntil) {
		if !running(c) {
			t.Fatalf("the call ended on hold: %q", outcome(b.ended(t, c)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := heard.Packets(0) - before; got > 5 {
		t.Fatalf("the box sent %d packets to a held call", got)
	}
	if err := d.Unhold(ctx); err != nil {
		t.Fatalf("unhold: %v", err)
	}

	// Codec change: offer PCMA only.
	ms := med.MediaSession()
	ms.Codecs = []media.Codec{media.CodecAudioAlaw, media.CodecTelephoneEvent8000}
	if err := d.ReInvite(ctx); err != nil {
		t.Fatalf("re-INVITE PCMA: %v", err)
	}
	uploads := b.voicedUploads()
	answers := len(b.model.SpeechRequests())
	stop = make(chan struct{})
	defer close(stop)
	talk(med, stop, 0)
	poll.Until(t, "PCMA audio from the box", 10*time.Second, func() bool { return heard.Packets(8) > 10 })
	poll.Until(t, "the box to hear PCMA speech", 15*time.Second, func() bool { return b.voicedUploads() > uploads })
	poll.Until(t, "the answer spoken in PCMA", 15*time.Second, func() bool { return len(b.model.SpeechRequests()) > answers })
	v := heard.Voiced()
	poll.Until(t, "the peer to hear it", 10*time.Second, func() bool { return heard.Voiced() > v })
	if !running(c) {
		t.Fatalf("the call ended: %q", outcome(b.ended(t, c)))
	}
	_ = d.Hangup(ctx)
	if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup {
		t.Fatalf("outcome %q", outcome(r))
	}
}

// No RTP for the media timeout: the call ends with media_timeout and the
// box sends BYE.
func TestMediaTimeout(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.MediaTimeout = time.Second
	b := newProtocolBox(t, cfg, "", nil)
	d, _, err := newPeer(t, nil).call(context.Background(), "100", b.sip.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	select {
	case <-d.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no BYE after the media timeout")
	}
	if r := b.ended(t, c); outcome(r) != voice.OutcomeMediaTimeout {
		t.Fatalf("outcome %q", outcome(r))
	}
}

// A call longer than the SIP side's maximum (sip.maxCallDuration, enforced
// by the controller) ends with max_duration and a BYE.
func TestMaximumCallLength(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		sip  time.Duration
		tune func(*voice.Config)
	}{
		"SIP maximum": {sip: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := inboundConfig()
			cfg.MaxCallDuration = c.sip
			b := newProtocolBox(t, cfg, "", c.tune)
			d, med, err := newPeer(t, nil).call(context.Background(), "100", b.sip.Addr(), diago.InviteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			talk(med, stop, 0)
			call := b.next(t)
			select {
			case <-d.Context().Done():
			case <-time.After(10 * time.Second):
				t.Fatal("no BYE at the maximum length")
			}
			r := b.ended(t, call)
			if outcome(r) != voice.OutcomeMaxDuration || r.DurationSeconds == nil || *r.DurationSeconds < 1 || *r.DurationSeconds > 8 {
				t.Fatalf("outcome %q duration %v", outcome(r), r.DurationSeconds)
			}
		})
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
		b := newProtocolBox(t, cfg, "", nil)
		p := newPeer(t, nil)
		d, med, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{Headers: []sipgosip.Header{
			sipgosip.NewHeader("Session-Expires", "2;refresher=uac"), sipgosip.NewHeader("Supported", "timer"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer close(stop)
		talk(med, stop, 0)
		res := d.InviteResponse
		if se := res.GetHeader("Session-Expires"); se == nil || se.Value() != "2;refresher=uac" || res.GetHeader("Require") == nil {
			t.Fatalf("200 OK lacks the session timer: %s", res.String())
		}
		c := b.next(t)
		select {
		case <-d.Context().Done():
		case <-time.After(10 * time.Second):
			t.Fatal("no BYE after the session expired")
		}
		if r := b.ended(t, c); outcome(r) != voice.OutcomeFailed {
			t.Fatalf("outcome %q", outcome(r))
		}
	})
	t.Run("caller refreshes with UPDATE", func(t *testing.T) {
		t.Parallel()
		b := newProtocolBox(t, cfg, "", nil)
		p := newPeer(t, nil)
		d, med, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{Headers: []sipgosip.Header{
			sipgosip.NewHeader("Session-Expires", "2;refresher=uac"), sipgosip.NewHeader("Supported", "timer"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		defer close(stop)
		talk(med, stop, 0)
		c := b.next(t)
		for range 4 {
			time.Sleep(500 * time.Millisecond) // the refresh interval of this peer, not a wait on the box
			req := sipgosip.NewRequest(sipgosip.UPDATE, d.RemoteContact().Address)
			req.AppendHeader(sipgosip.NewHeader("Session-Expires", "2;refresher=uac"))
			res, err := d.Do(ctx, req)
			if err != nil || res.StatusCode != 200 || res.GetHeader("Session-Expires") == nil {
				t.Fatalf("UPDATE: %v %v", res, err)
			}
		}
		if !running(c) {
			t.Fatalf("refreshed call ended: %q", outcome(b.ended(t, c)))
		}
		_ = d.Hangup(ctx)
		if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup {
			t.Fatalf("outcome %q", outcome(r))
		}
	})
	t.Run("the box refreshes", func(t *testing.T) {
		t.Parallel()
		b := newProtocolBox(t, cfg, "", nil)
		p := newPeer(t, nil)
		// No Supported: timer, so the box must refresh: a re-INVITE every
		// half interval, which the peer sees as a media update.
		d, err := p.dg.NewDialog(uri(t, "100", b.sip.Addr()), diago.NewDialogOptions{})
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
		talk(med, stop, 0)
		if se := d.InviteResponse.GetHeader("Session-Expires"); se == nil || se.Value() != "2;refresher=uas" {
			t.Fatalf("200 OK: %s", d.InviteResponse.String())
		}
		c := b.next(t)
		start := time.Now()
		poll.Until(t, "three refreshes", 10*time.Second, func() bool { return updates.Load() >= 3 })
		if time.Since(start) < 2500*time.Millisecond {
			t.Fatalf("three refreshes within %s, want one a second", time.Since(start))
		}
		// The refresh offers the shared port again, so the caller's audio
		// still reaches the box after it.
		shared := b.sip.Stats().Shared
		if port := med.MediaSession().Raddr.Port; port != shared.Port {
			t.Fatalf("after the refresh the caller sends to port %d, not the shared %d", port, shared.Port)
		}
		poll.Until(t, "the caller's packets after the refresh", 5*time.Second, func() bool {
			return b.sip.Stats().Shared.Received > shared.Received+25
		})
		if !running(c) {
			t.Fatalf("the call ended: %q", outcome(b.ended(t, c)))
		}
		_ = d.Hangup(ctx)
		if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup {
			t.Fatalf("outcome %q", outcome(r))
		}
	})
	t.Run("interval too small", func(t *testing.T) {
		t.Parallel()
		b := newProtocolBox(t, cfg, "", nil)
		_, _, err := newPeer(t, nil).call(ctx, "100", b.sip.Addr(), diago.InviteOptions{Headers: []sipgosip.Header{
			sipgosip.NewHeader("Session-Expires", "1"), sipgosip.NewHeader("Supported", "timer"),
		}})
		if statusOf(err) != 422 {
			t.Fatalf("got %v, want 422", err)
		}
		if b.mgr.Active() != 0 {
			t.Fatal("a refused INVITE opened a call")
		}
	})
}

// Malformed requests get a 4xx, never a crash, and the server answers the
// next INVITE.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	srv := b.sip
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
	d, med, err := newPeer(t, nil).call(context.Background(), "100", srv.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatalf("the INVITE after the malformed ones: %v", err)
	}
	c := b.next(t)
	hearGreeting(t, med)
	_ = d.Hangup(context.Background())
	if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup || r.AnsweredAt == nil {
		t.Fatalf("the INVITE after the malformed ones: %+v", r)
	}
}

// INVITE over TCP works like UDP.
func TestInviteOverTCP(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "", nil)
	p := newPeer(t, nil)
	d, med, err := p.dg.Invite(context.Background(), uri(t, "100", b.sip.Addr()+";transport=tcp"), diago.InviteOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	heard := listen(med)
	c := b.next(t)
	poll.Until(t, "the greeting over a TCP-signalled call", 10*time.Second, func() bool { return heard.Voiced() > 5 })
	_ = d.Hangup(context.Background())
	if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup {
		t.Fatalf("outcome %q", outcome(r))
	}
}

// A trunk with credentials challenges (401) and accepts the right answer;
// a wrong password is refused with 403.
func TestDigestTrunk(t *testing.T) {
	t.Parallel()
	cfg := inboundConfig()
	cfg.Trunks.Inbound[0].Sources = nil
	cfg.Trunks.Inbound[0].Username = "carrier"
	cfg.Trunks.Inbound[0].Password = "s3cret"
	b := newProtocolBox(t, cfg, "", nil)
	p := newPeer(t, nil)
	ctx := context.Background()
	if _, _, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{Username: "carrier", Password: "wrong"}); statusOf(err) != sipgosip.StatusForbidden {
		t.Fatalf("wrong password: %v", err)
	}
	d, med, err := p.call(ctx, "100", b.sip.Addr(), diago.InviteOptions{Username: "carrier", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	hearGreeting(t, med)
	_ = d.Hangup(ctx)
	if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup || r.Trunk == nil || *r.Trunk != "local" {
		t.Fatalf("call record %+v", r)
	}
}

// transferCall is a scripted model answer calling the transfer tool.
var transferCall = providertest.Reply{ToolCalls: []providertest.Call{providertest.ToolCall("t1", "transfer_call", map[string]string{})}}

// The agent transfers the call (the model calls transfer_call after the
// caller's turn): the box sends REFER; once the transfer target answered
// (NOTIFY 200) the box hangs up and the outcome is transferred.
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
	target := "sip:operator@127.0.0.1:" + itoa(operator.port)
	b := newProtocolBox(t, inboundConfig(), "    voice: {transferTo: \""+target+"\"}\n", nil)
	b.model.Script(transferCall)
	p := newPeer(t, nil)
	// The caller's phone follows the REFER: it calls the target, and the
	// box hears NOTIFY 200 once the target answered.
	d, err := p.dg.NewDialog(uri(t, "100", b.sip.Addr()), diago.NewDialogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	med, err := d.Invite(ctx, diago.InviteClientOptions{OnRefer: func(referDialog *diago.DialogClientSession) error {
		if _, err := referDialog.Invite(ctx, diago.InviteClientOptions{}); err != nil {
			return err
		}
		return referDialog.Ack(ctx)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	stop := make(chan struct{})
	defer close(stop)
	talk(med, stop, 1) // one caller turn, answered by the transfer
	select {
	case got := <-operatorCalls:
		if got != "operator" {
			t.Fatalf("the operator got a call for %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the transfer did not reach the operator")
	}
	select {
	case <-d.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the box did not hang up after the transfer")
	}
	if r := b.ended(t, c); outcome(r) != voice.OutcomeTransferred {
		t.Fatalf("outcome %q", outcome(r))
	}
	first := b.model.ChatRequests()[0]
	if !strings.Contains(fmtTools(first.Tools), "transfer_call") {
		t.Fatalf("the model was not offered transfer_call: %+v", first.Tools)
	}
}

// A transfer the caller's side refuses (REFER answered 406) is reported to
// the model as failed and the call goes on.
func TestTransferRefused(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "    voice: {transferTo: \"sip:operator@127.0.0.1:5099\"}\n", nil)
	b.model.Script(transferCall)
	ctx := context.Background()
	// A peer without OnRefer answers REFER 406 Not Acceptable.
	d, med, err := newPeer(t, nil).call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	stop := make(chan struct{})
	defer close(stop)
	talk(med, stop, 1)
	poll.Until(t, "the failed transfer to reach the model", 20*time.Second, func() bool {
		return b.chatContains(`"transferred":false`) && b.chatContains(sip.ErrTransferFailed.Error())
	})

	if !running(c) {
		t.Fatalf("the call ended: %q", outcome(b.ended(t, c)))
	}
	_ = d.Hangup(ctx)
	if r := b.ended(t, c); outcome(r) != voice.OutcomeCallerHangup {
		t.Fatalf("outcome %q", outcome(r))
	}
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

// fmtTools joins the names of the tools offered to the model.
func fmtTools(tools []openai.Tool) string {
	var names []string
	for _, tl := range tools {
		if tl.Function != nil {
			names = append(names, tl.Function.Name)
		}
	}
	return strings.Join(names, ",")
}
