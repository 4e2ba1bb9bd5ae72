package sip

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"
	"github.com/google/uuid"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/identity"
	"github.com/stackbone/box/voice"
)

// RingTimeout is how long an outbound call rings before it ends with
// outcome no_answer.
const RingTimeout = 60 * time.Second

// DialRequest asks for an outbound call.
type DialRequest struct {
	// ID is the call's id ("": Dial picks one). A call with that id
	// recorded already is voice.ErrCallExists, and nothing is dialled.
	ID         string
	Agent      string
	To         string
	Trunk      string
	Identities identity.Set
	// AnsweringMachine overrides the agent's answering-machine policy for
	// this call; nil keeps the agent's.
	AnsweringMachine *config.AnsweringMachine
	// Variables fill {name} in the agent's instructions for this call.
	Variables map[string]string
}

// Dial places an outbound call through a trunk (req.Trunk, else the first
// outbound trunk) to req.To, answered by req.Agent. It opens the call on the
// controller first (snapshot, identity = the destination number, recall), so
// the greeting plays as soon as the callee answers, then sends the INVITE
// and returns the call's id while it rings. Errors: ErrNotStarted,
// ErrNoTrunk, ErrUnknownTrunk, ErrInvalidNumber, ErrAtCapacity,
// voice.ErrUnknownAgent or another error of the controller's Open. A callee
// that does not answer or declines ends the call with outcome no_answer, a
// busy one with busy, a trunk failure with failed (and the reason).
func (s *Server) Dial(ctx context.Context, req DialRequest) (string, error) {
	s.mu.Lock()
	running := s.ctx != nil && !s.closed
	s.mu.Unlock()
	if !running {
		return "", ErrNotStarted
	}
	trunk, err := s.outboundTrunk(req.Trunk)
	if err != nil {
		return "", err
	}
	to := config.NormalizeNumber(req.To)
	if !numberRe.MatchString(to) {
		return "", fmt.Errorf("%w %q: a number is 1 to 32 digits, * or #, with an optional leading +", ErrInvalidNumber, req.To)
	}
	c := s.newCall(uuid.NewString(), voice.Outbound)
	c.remote = trunk.Proxy
	if s.cfg.SessionTimer > 0 {
		c.timer = sessionTimer{interval: s.cfg.SessionTimer}
	}
	if !s.admit(c) {
		return "", fmt.Errorf("%w (%d calls)", ErrAtCapacity, s.cfg.MaxCalls)
	}
	ctl, err := s.calls.Open(ctx, voice.CallInfo{
		ID: req.ID, Direction: voice.Outbound, Agent: req.Agent, PhoneNumber: to, Identities: req.Identities, Trunk: trunk.Name, Variables: req.Variables,
		SampleRate: sampleRate, MediaTimeout: s.cfg.MediaTimeout, MaxDuration: s.cfg.MaxCallDuration,
		AnsweringMachine: req.AnsweringMachine,
	})
	if err != nil {
		s.release(c)
		return "", err
	}
	c.setController(ctl)
	go s.place(c, trunk, to)
	return ctl.ID(), nil
}

// place rings the callee and carries the call once answered.
func (s *Server) place(c *call, trunk config.OutboundTrunk, to string) {
	defer s.release(c)
	ctl := c.controller()
	if c.isEnded() { // shut down while opening
		ctl.End(voice.OutcomeShutdown, "")
		return
	}
	log := c.log.With("callId", ctl.ID(), "trunk", trunk.Name)
	d, opts, err := s.outboundDialog(trunk, to, c.sipCallID)
	if err != nil {
		log.Warn("sip: outbound dialog", "error", err)
		ctl.End(voice.OutcomeFailed, "the outbound dialog could not be created")
		return
	}
	defer d.Close()
	if c.timer.interval > 0 {
		opts.Headers = append(opts.Headers,
			sip.NewHeader("Session-Expires", strconv.Itoa(int(c.timer.interval/time.Second))),
			sip.NewHeader("Supported", "timer"))
	}
	opts.OnMediaUpdate = func(*diago.DialogMedia) {
		if m := c.getMedia(); m != nil {
			m.updateCodec()
		}
	}

	ringCtx, cancel := context.WithTimeout(s.ctx, RingTimeout)
	defer cancel()
	go func() {
		select {
		case <-c.ended: // shutdown while ringing
			cancel()
		case <-ctl.Done(): // ended from outside while ringing: CANCEL
			cancel()
		case <-ringCtx.Done():
		}
	}()
	setup := time.Now()
	med, err := d.Invite(ringCtx, opts)
	if err == nil {
		err = d.Ack(ringCtx)
	}
	if err != nil {
		outcome, reason := voice.OutcomeFailed, ""
		res := dialogResponse(err)
		switch {
		case res != nil:
			switch res.StatusCode {
			case sip.StatusBusyHere, sip.StatusGlobalBusyEverywhere:
				outcome = voice.OutcomeBusy
			case sip.StatusGlobalDecline, sip.StatusRequestTerminated,
				sip.StatusTemporarilyUnavailable, sip.StatusRequestTimeout:
				outcome = voice.OutcomeNoAnswer
			default:
				reason = fmt.Sprintf("the trunk answered %d %s", res.StatusCode, res.Reason)
			}
			log.Info("sip: outbound call refused", "code", res.StatusCode, "outcome", outcome)
		case ringCtx.Err() != nil:
			outcome = voice.OutcomeNoAnswer
			if c.isEnded() {
				outcome = voice.OutcomeShutdown
			}
			select {
			case <-ctl.Done():
				log.Info("sip: outbound call ended from outside while ringing")
				return // its outcome is decided
			default:
			}
			log.Info("sip: outbound call not answered", "outcome", outcome)
		default:
			reason = "the trunk could not be reached"
			log.Warn("sip: outbound call failed", "error", err)
		}
		ctl.End(outcome, reason)
		return
	}
	c.mu.Lock()
	c.timer = outboundTimer(d.InviteResponse)
	c.mu.Unlock()
	// Only now may end send BYE; while ringing it cancels the INVITE.
	c.setLeg(leg{hangup: d.Hangup, reinvite: d.ReInvite, done: d.Context().Done(),
		refer: func(ctx context.Context, target sip.Uri, onNotify func(int)) error {
			return d.ReferOptions(ctx, target, diago.ReferClientOptions{OnNotify: onNotify})
		}})
	m := newRTPMedia(med, ctl, log)
	m.pacing = s.recordPacing
	c.setMedia(m)
	if c.isEnded() {
		m.stop()
		bye(d.Hangup)
		ctl.End(voice.OutcomeShutdown, "")
		return
	}
	log.Info("sip: outbound call answered", "setupMs", time.Since(setup).Milliseconds())
	s.carry(c, m, d.Context())
}

// outboundDialog is a dialog to number to through trunk under sipCallID,
// with the INVITE's options every outbound call has (the trunk's caller
// number and credentials).
func (s *Server) outboundDialog(trunk config.OutboundTrunk, to, sipCallID string) (*diago.DialogClientSession, diago.InviteClientOptions, error) {
	host, portStr, _ := net.SplitHostPort(trunk.Proxy)
	port, _ := strconv.Atoi(portStr)
	transport := trunk.Transport
	if transport == "" {
		transport = "udp"
	}
	d, err := s.dg.NewDialog(sip.Uri{Scheme: "sip", User: to, Host: host, Port: port}, diago.NewDialogOptions{Transport: transport})
	if err != nil {
		return nil, diago.InviteClientOptions{}, err
	}
	callID := sip.CallIDHeader(sipCallID)
	d.InviteRequest.AppendHeader(&callID)
	caller := trunk.CallerNumber
	if caller == "" {
		caller = "stackbone"
	}
	fromHost := s.cfg.ExternalHost
	if fromHost == "" {
		fromHost, _, _ = net.SplitHostPort(s.Addr())
	}
	opts := diago.InviteClientOptions{Username: trunk.Username, Password: trunk.Password}
	opts.WithCaller("", caller, fromHost)
	return d, opts, nil
}

// outboundTimer is the session timer the callee's 2xx settled: none when
// it does not say, else its interval, refreshed by the box when the
// refresher is the UAC (the box).
func outboundTimer(res *sip.Response) sessionTimer {
	if res == nil {
		return sessionTimer{}
	}
	d, refresher, ok, err := sessionExpires(res)
	if !ok || err != nil {
		return sessionTimer{}
	}
	if refresher == "" {
		refresher = "uac"
	}
	return sessionTimer{interval: d, refresher: refresher, weRefresh: refresher == "uac"}
}
