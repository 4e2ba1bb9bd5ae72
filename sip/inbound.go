package sip

import (
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/fault"
	"github.com/stackbone/box/voice"
)

// responses is the one table of this edge: the SIP answer to an INVITE
// the controller would not open, by the error's kind (package fault).
var responses = map[fault.Kind]struct {
	code   int
	reason string
}{
	fault.NotFound:    {sip.StatusNotFound, "Not Found"},
	fault.Invalid:     {sip.StatusBadRequest, "Bad Request"},
	fault.Forbidden:   {sip.StatusForbidden, "Forbidden"},
	fault.Unavailable: {sip.StatusServiceUnavailable, "Service Unavailable"},
}

// statusFor maps the controller's Open errors to the SIP answer
// (responses; anything else is 500).
func statusFor(err error) (int, string) {
	if r, ok := responses[fault.KindOf(err)]; ok {
		return r.code, r.reason
	}
	return sip.StatusInternalServerError, "Server Internal Error"
}

// serveInbound carries one inbound call, from the INVITE to its end; diago
// calls it for each new INVITE (after middleware accepted it).
func (s *Server) serveInbound(d *diago.DialogServerSession) {
	in := &inbound{s: s, d: d, req: d.InviteRequest, received: time.Now()}
	in.log = s.log.With("sipCallId", in.req.CallID().Value(), "direction", voice.Inbound)
	c, agentName, trunk, ok := in.admit()
	if !ok {
		return
	}
	defer s.release(c)
	_ = d.Trying()
	_ = d.Ringing()
	setup := time.Now()
	ctl, ok := in.open(c, agentName, trunk)
	if !ok {
		return
	}
	m, offer, ok := in.answer(c, ctl)
	if !ok {
		return
	}
	if onHold(offer) {
		m.setHeld(true)
	}
	in.log.Info("sip: answered", "agent", agentName, "trunk", trunk, "setupMs", time.Since(setup).Milliseconds())
	s.carry(c, m, d.Context())
}

// inbound is one INVITE being served: admitted, opened on the
// controller, answered.
type inbound struct {
	s        *Server
	d        *diago.DialogServerSession
	req      *sip.Request
	log      *slog.Logger
	received time.Time
	ownPort  bool // the trunk's calls each get an RTP port of their own
}

// refuse answers the INVITE with a final failure.
func (in *inbound) refuse(code int, reason string, headers ...sip.Header) {
	res := sip.NewResponseFromRequest(in.req, code, reason, nil)
	for _, h := range headers {
		res.AppendHeader(h)
	}
	if err := in.d.WriteResponse(res); err != nil {
		in.log.Debug("sip: refusing", "code", code, "error", err)
	}
}

// admit checks the INVITE's source, route and session timer and takes a
// place under the call limit: the call, its agent and its trunk, or ok
// false once refused.
func (in *inbound) admit() (c *call, agentName, trunk string, ok bool) {
	s, req := in.s, in.req
	auth := s.authorize(req)
	if auth.res != nil {
		in.log.Info("sip: INVITE refused", "code", auth.res.StatusCode, "source", req.Source())
		if err := in.d.WriteResponse(auth.res); err != nil {
			in.log.Debug("sip: refusing", "error", err)
		}
		return nil, "", "", false
	}
	dialled := req.Recipient.User
	if dialled == "" {
		dialled = in.d.ToUser()
	}
	agentName = auth.trunk.route(dialled)
	if agentName == "" {
		in.log.Info("sip: no route for the dialled number", "trunk", auth.trunk.Name)
		in.refuse(sip.StatusNotFound, "Not Found")
		return nil, "", "", false
	}
	timer, err := s.negotiateTimer(req)
	if err != nil { // checked by middleware already
		in.refuse(sip.StatusBadRequest, "Bad Session-Expires")
		return nil, "", "", false
	}
	if s.calls.Draining() {
		// The box is stopping: a proxy in front of several boxes tries
		// another one.
		in.log.Info("sip: draining, INVITE refused")
		in.refuse(sip.StatusServiceUnavailable, "Service Unavailable", sip.NewHeader("Retry-After", "5"))
		return nil, "", "", false
	}
	c = s.newCall(req.CallID().Value(), voice.Inbound)
	c.invited = in.received
	c.timer = timer
	c.remote = req.Source()
	if !s.admit(c) {
		in.log.Info("sip: at the call limit", "max", s.cfg.MaxCalls)
		in.refuse(sip.StatusServiceUnavailable, "Service Unavailable", sip.NewHeader("Retry-After", "5"))
		return nil, "", "", false
	}
	in.ownPort = auth.trunk.OwnRTPPort
	return c, agentName, auth.trunk.Name, true
}

// open opens the call on the controller while it rings; ok is false when
// it was refused, cancelled or shut down meanwhile (then it is ended).
func (in *inbound) open(c *call, agentName, trunk string) (*voice.Call, bool) {
	s, d := in.s, in.d
	// Until the answer only this goroutine responds to the INVITE: an end
	// meanwhile (shutdown) cancels the open and leaves the refusal to it.
	// A CANCEL does not: the open completes and the call is closed as
	// cancelled, so a missed call leaves its record.
	openCtx, cancelOpen := context.WithCancel(context.WithoutCancel(d.Context()))
	defer cancelOpen()
	go func() {
		select {
		case <-c.ended:
			cancelOpen()
		case <-openCtx.Done():
		}
	}()
	ctl, err := s.calls.Open(openCtx, voice.CallInfo{
		Direction: voice.Inbound, Agent: agentName, PhoneNumber: phoneNumber(in.req), Trunk: trunk,
		SampleRate: sampleRate, MediaTimeout: s.cfg.MediaTimeout, MaxDuration: s.cfg.MaxCallDuration,
	})
	if err != nil {
		if openCtx.Err() != nil {
			in.log.Info("sip: cancelled while opening")
			return nil, false
		}
		code, reason := statusFor(err)
		in.log.Warn("sip: the call could not open", "code", code, "error", err)
		in.refuse(code, reason)
		return nil, false
	}
	c.setController(ctl)
	in.log = in.log.With("callId", ctl.ID())
	if c.isEnded() { // shut down while opening
		ctl.End(voice.OutcomeShutdown, "")
		return nil, false
	}
	if d.Context().Err() != nil {
		in.log.Info("sip: cancelled before answer")
		ctl.End(voice.OutcomeCancelled, "")
		return nil, false
	}
	return ctl, true
}

// answer answers the INVITE (or its late offer) and starts the call's
// media: the media and the offer, ok false when it ended meanwhile.
func (in *inbound) answer(c *call, ctl *voice.Call) (*rtpMedia, []byte, bool) {
	s, d := in.s, in.d
	var med *diago.DialogMedia
	var err error
	onUpdate := func(*diago.DialogMedia) {
		if m := c.getMedia(); m != nil {
			m.updateCodec()
		}
	}
	offer := in.req.Body()
	var shared *rtpMedia
	if len(offer) == 0 {
		med, offer, err = s.answerLate(c, d)
	} else {
		if raddr, ok := offerPeer(offer); ok && s.mux != nil && !in.ownPort {
			if shared = newSharedMedia(s.mux, raddr, ctl, in.log); shared != nil {
				c.rtpPort.Store(int32(s.mux.Addr().Port))
			}
		}
		med, err = d.Answer(diago.AnswerOptions{Codecs: s.codecs, OnMediaUpdate: onUpdate})
	}
	if err != nil {
		if shared != nil {
			shared.stop()
		}
		outcome := voice.OutcomeFailed
		switch {
		case errors.Is(context.Cause(d.Context()), sip.ErrTransactionCanceled):
			outcome = voice.OutcomeCancelled // CANCEL before the answer
		case d.Context().Err() != nil:
			// The dialog ended otherwise while answering: the caller hung up
			// (a BYE racing our 200 OK and its ACK).
			outcome = voice.OutcomeCallerHangup
		}
		in.log.Info("sip: not answered", "outcome", outcome, "error", err)
		ctl.End(outcome, "")
		return nil, nil, false
	}
	reinvite := d.ReInvite
	if shared != nil {
		port := int(c.rtpPort.Load())
		reinvite = func(ctx context.Context) error { return reinviteOffering(ctx, d, med, port) }
	}
	c.setLeg(leg{hangup: d.Hangup, reinvite: reinvite, done: d.Context().Done(),
		refer: func(ctx context.Context, to sip.Uri, onNotify func(int)) error {
			return d.ReferOptions(ctx, to, diago.ReferServerOptions{OnNotify: onNotify})
		}})
	m := shared
	if m != nil {
		m.attach(med)
	} else {
		m = newRTPMedia(med, ctl, in.log)
	}
	m.pacing = s.recordPacing
	c.setMedia(m)
	if c.isEnded() { // shut down while answering: stop could not send BYE yet
		m.stop()
		bye(d.Hangup)
		ctl.End(voice.OutcomeShutdown, "")
		return nil, nil, false
	}
	return m, offer, true
}

// bye hangs up an answered dialog, bounded like end's BYE.
func bye(hangup func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	_ = hangup(ctx)
}

// carry runs an answered call on the controller until it completed. The
// SIP side only reports: a BYE from the other side is the caller hanging
// up; the controller decides the outcome and hangs up (stop).
func (s *Server) carry(c *call, m *rtpMedia, dialog context.Context) {
	ctl := c.controller()
	go c.watch()
	go func() {
		select {
		case <-dialog.Done():
			c.report(voice.OutcomeCallerHangup, "")
		case <-c.ended:
		}
	}()
	if err := ctl.Run(s.ctx, c); err != nil {
		c.log.Warn("sip: call run", "error", err)
	}
	c.stop()
	select {
	case <-m.readDone:
	case <-time.After(5 * time.Second):
		c.log.Warn("sip: the RTP reader did not stop")
	}
	s.carried.Add(1)
	s.rtpIn.Add(m.received.Load())
	s.dropped.Add(ctl.Dropped())
	c.log.Info("sip: call done", "rtpPackets", m.received.Load(), "framesDropped", ctl.Dropped())
}

// phoneRe is a caller number that can select a person: digits with an
// optional leading +.
var phoneRe = regexp.MustCompile(`^\+?[0-9]{3,20}$`)

// phoneNumber is the caller's number as the person's identity, or "" when
// the caller withheld it (Privacy: id, anonymous) or the caller is not a
// number (a SIP user name), so the call goes on without memory rather than
// binding every anonymous caller to one person.
func phoneNumber(req *sip.Request) string {
	for _, h := range req.GetHeaders("Privacy") {
		for _, v := range strings.Split(h.Value(), ";") {
			if v = strings.ToLower(strings.TrimSpace(v)); v == "id" || v == "user" {
				return ""
			}
		}
	}
	n := config.NormalizeNumber(callerNumber(req))
	if !phoneRe.MatchString(n) {
		return ""
	}
	return n
}

// callerNumber is who is calling: the trunk's asserted identity, else From.
func callerNumber(req *sip.Request) string {
	for _, name := range []string{"P-Asserted-Identity", "P-Preferred-Identity"} {
		if h := req.GetHeader(name); h != nil {
			var u sip.Uri
			params := sip.NewParams()
			if _, err := sip.ParseAddressValue(h.Value(), &u, &params); err == nil && u.User != "" {
				return u.User
			}
		}
	}
	if f := req.From(); f != nil {
		return f.Address.User
	}
	return ""
}
