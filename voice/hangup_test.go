package voice

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/postgres/notify"
	"github.com/stackbone/box/postgres/pgtest"
)

// A hang-up asked of a box that does not carry the call reaches the box
// that does (NotifyHangup): the call ends operator_hangup, once. An ended
// call is refused as such, an unknown one as not found.
func TestHangupReachesTheBoxCarryingTheCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	l := notify.New(e.vc.Pool, pgtest.Logger(t))
	var listening atomic.Bool
	l.Subscribe("probe", func(string) { listening.Store(true) }) // called once the listener is connected
	l.Subscribe(NotifyHangup, func(id string) { e.mgr.HangupLocal(id) })
	go l.Run(ctx)
	poll.Until(t, "the listener", 10*time.Second, listening.Load)

	r := e.start(CallInfo{Agent: "talker", PhoneNumber: "+1555"})
	otherCfg := e.vc
	otherCfg.BoxID = "another-box"
	other := NewManager(otherCfg)
	if err := other.Hangup(ctx, r.call.ID()); err != nil {
		t.Fatal(err)
	}
	rec := r.end()
	if rec.Outcome == nil || *rec.Outcome != OutcomeOperatorHangup || e.ends.count(r.call.ID()) != 1 {
		t.Fatalf("the call ended %v, %d completions", rec.Outcome, e.ends.count(r.call.ID()))
	}
	if err := other.Hangup(ctx, r.call.ID()); !errors.Is(err, ErrCallEnded) {
		t.Fatalf("an ended call: %v", err)
	}
	if err := other.Hangup(ctx, "call_nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown call: %v", err)
	}
}
