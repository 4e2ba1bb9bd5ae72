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
// the caller; the identity is the destination; the callee hears the agent
// and the agent hears the callee; the callee's BYE ends it.
func TestDialThroughTrunk(t *testing.T) {
	t.Parallel()
	type seen struct{ from, to string }
	answered := make(chan seen, 1)
	var b *box
	ready := make(chan struct{})
	callee := newPeer(t, func(d *diago.DialogServerSession) {
		<-ready
		answered <- seen{d.FromUser(), d.ToUser()}
		_ = d.Ringing()
		med, err := d.Answer(diago.AnswerOptions{})
		if err != nil {
			return
		}
		heard := listen(med)
		stop := make(chan struct{})
		defer close(stop)
		talk(med, stop, 0)
		for heard.Voiced() < 25 || b.voicedUploads() == 0 {
			select {
			case <-d.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		_ = d.Hangup(context.Background()) // the callee hangs up
	})
	b = newProtocolBox(t, outboundConfig(callee.port), "", nil)
	close(ready)
	ctx := context.Background()
	id, err := b.sip.Dial(ctx, sip.DialRequest{Agent: "a", To: "+34 600 111 222"})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	if id != c.ID() {
		t.Fatalf("Dial returned %q, the controller opened %q", id, c.ID())
	}
	select {
	case s := <-answered:
		if s.from != "+15550100" || s.to != "+34600111222" {
			t.Fatalf("INVITE from %q to %q", s.from, s.to)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the callee was not called")
	}
	r := b.ended(t, c)
	if r.Direction != voice.Outbound || r.Agent != "a" || r.PhoneNumber == nil || *r.PhoneNumber != "+34600111222" ||
		r.Trunk == nil || *r.Trunk != "out" || r.AnsweredAt == nil || outcome(r) != voice.OutcomeCallerHangup {
		t.Fatalf("call record %+v", r)
	}
	if r.Memory == nil || r.Memory.Identity != "+34600111222" {
		t.Fatalf("memory report %+v", r.Memory)
	}
	if b.voicedUploads() == 0 {
		t.Fatal("the agent did not hear the callee")
	}
	b.idle(t)
}

// A busy callee ends the call as busy; bad requests are refused at once.
func TestDialFailures(t *testing.T) {
	t.Parallel()
	busy := newPeer(t, func(d *diago.DialogServerSession) {
		_ = d.Respond(sipgosip.StatusBusyHere, "Busy Here", nil)
	})
	b := newProtocolBox(t, outboundConfig(busy.port), "", nil)
	srv := b.sip
	ctx := context.Background()
	id, err := srv.Dial(ctx, sip.DialRequest{Agent: "a", To: "100"})
	if err != nil {
		t.Fatal(err)
	}
	c := b.next(t)
	if r := b.ended(t, c); r.ID != id || outcome(r) != voice.OutcomeBusy || r.AnsweredAt != nil {
		t.Fatalf("busy call record %+v", r)
	}
	if n := len(b.model.SpeechRequests()); n != 0 {
		t.Fatalf("%d speech requests for an unanswered call", n)
	}
	if _, err := srv.Dial(ctx, sip.DialRequest{Agent: "a", To: "100", Trunk: "nope"}); !errors.Is(err, sip.ErrUnknownTrunk) {
		t.Fatalf("unknown trunk: %v", err)
	}
	if _, err := srv.Dial(ctx, sip.DialRequest{Agent: "a", To: "call me maybe"}); !errors.Is(err, sip.ErrInvalidNumber) {
		t.Fatalf("bad number: %v", err)
	}
	if _, err := srv.Dial(ctx, sip.DialRequest{Agent: "zz", To: "100"}); !errors.Is(err, voice.ErrUnknownAgent) {
		t.Fatalf("unknown agent: %v", err)
	}
	b.idle(t)
	noTrunks := newProtocolBox(t, inboundConfig(), "", nil)
	if _, err := noTrunks.sip.Dial(ctx, sip.DialRequest{Agent: "a", To: "100"}); !errors.Is(err, sip.ErrNoTrunk) {
		t.Fatalf("no trunk: %v", err)
	}
}
