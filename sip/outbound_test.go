package sip_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/emiago/diago"
	sipgosip "github.com/emiago/sipgo/sip"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/sip"
	"github.com/stackbone/box/voice"
)

func outboundConfig(proxyPort int) config.SIP {
	cfg := inboundConfig()
	cfg.Trunks.Outbound = []config.OutboundTrunk{{Name: "out", Proxy: "127.0.0.1:" + itoa(proxyPort), CallerNumber: "+15550100"}}
	return cfg
}

// Dial rings the destination through the trunk with the box's number as
// the caller; the identity is the destination; the callee hears the agent.
func TestDialThroughTrunk(t *testing.T) {
	t.Parallel()
	type seen struct{ from, to string }
	answered := make(chan seen, 1)
	heardCh := make(chan *listener, 1)
	callee := newPeer(t, func(d *diago.DialogServerSession) {
		answered <- seen{d.FromUser(), d.ToUser()}
		_ = d.Ringing()
		med, err := d.Answer(diago.AnswerOptions{})
		if err != nil {
			return
		}
		heard := listen(med)
		heardCh <- heard
		stop := make(chan struct{})
		defer close(stop)
		speak(med, stop)
		for heard.Voiced() < 25 {
			select {
			case <-d.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		_ = d.Hangup(context.Background()) // the callee hangs up
	})
	ctl := newFakeController()
	srv := startServer(t, outboundConfig(callee.port), ctl)
	id, err := srv.Dial(context.Background(), voice.DialRequest{Agent: "a", To: "+34 600 111 222"})
	if err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	if id != c.ID() || c.info.Direction != voice.Outbound || c.info.PhoneNumber != "+34600111222" || c.info.Trunk != "out" || c.info.Agent != "a" {
		t.Fatalf("id %q, call info %+v", id, c.info)
	}
	select {
	case s := <-answered:
		if s.from != "+15550100" || s.to != "+34600111222" {
			t.Fatalf("INVITE from %q to %q", s.from, s.to)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the callee was not called")
	}
	c.waitDone(t)
	if c.Outcome() != voice.OutcomeCallerHangup {
		t.Fatalf("outcome %q", c.Outcome())
	}
	if c.Voiced() < 10 {
		t.Fatalf("the agent heard %d voiced frames", c.Voiced())
	}
	waitFor(t, "the call to be released", 5*time.Second, func() bool { return srv.Active() == 0 })
}

// A busy callee ends the call as no_answer; bad requests are refused at once.
func TestDialFailures(t *testing.T) {
	t.Parallel()
	busy := newPeer(t, func(d *diago.DialogServerSession) {
		_ = d.Respond(sipgosip.StatusBusyHere, "Busy Here", nil)
	})
	ctl := newFakeController()
	srv := startServer(t, outboundConfig(busy.port), ctl)
	ctx := context.Background()
	if _, err := srv.Dial(ctx, voice.DialRequest{Agent: "a", To: "100"}); err != nil {
		t.Fatal(err)
	}
	c := ctl.next(t)
	waitFor(t, "the busy call to close", 10*time.Second, func() bool { return c.Outcome() != "" })
	if c.Outcome() != voice.OutcomeNoAnswer {
		t.Fatalf("outcome %q", c.Outcome())
	}
	if _, err := srv.Dial(ctx, voice.DialRequest{Agent: "a", To: "100", Trunk: "nope"}); !errors.Is(err, sip.ErrUnknownTrunk) {
		t.Fatalf("unknown trunk: %v", err)
	}
	if _, err := srv.Dial(ctx, voice.DialRequest{Agent: "a", To: "call me maybe"}); !errors.Is(err, sip.ErrInvalidNumber) {
		t.Fatalf("bad number: %v", err)
	}
	noTrunks := startServer(t, inboundConfig(), ctl)
	if _, err := noTrunks.Dial(ctx, voice.DialRequest{Agent: "a", To: "100"}); !errors.Is(err, sip.ErrNoTrunk) {
		t.Fatalf("no trunk: %v", err)
	}
	ctl.mu.Lock()
	ctl.err = voice.ErrUnknownAgent
	ctl.mu.Unlock()
	if _, err := srv.Dial(ctx, voice.DialRequest{Agent: "zz", To: "100"}); !errors.Is(err, voice.ErrUnknownAgent) {
		t.Fatalf("unknown agent: %v", err)
	}
	waitFor(t, "no calls left", 5*time.Second, func() bool { return srv.Active() == 0 })
}
