package sip_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/media"

	"github.com/stackbone/box/internal/poll"
	"github.com/stackbone/box/provider/providertest"
	"github.com/stackbone/box/sip/siptest"
)

// keyPacket is one RFC 4733 telephone-event packet as the phone got it.
type keyPacket struct {
	seq    uint16
	ts     uint32
	marker bool
	ev     media.DTMFEvent
}

// digits are the keys the packets spell, one per event (a start
// timestamp), and the packets of each.
func (l *listener) digits() (string, [][]keyPacket) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []rune
	var events [][]keyPacket
	for i, p := range l.keys {
		if i == 0 || p.ts != l.keys[i-1].ts {
			out = append(out, media.DTMFToRune(p.ev.Event))
			events = append(events, nil)
		}
		events[len(events)-1] = append(events[len(events)-1], p)
	}
	return string(out), events
}

// The model presses keys (send_dtmf "12w#"): the phone receives RFC 4733
// events that spell the digits, each started by a marked packet, its
// duration growing by a frame per packet, ended by three packets with the
// end bit and the final duration, all on the event's start timestamp; the
// audio after each event is stamped as if it had played through it (the
// stream's clock does not stop); w puts half a second between two keys;
// and the model hears that the keys went out.
func TestSendDTMFSendsTelephoneEvents(t *testing.T) {
	t.Parallel()
	b := newProtocolBox(t, inboundConfig(), "    voice: {keypad: true}\n", nil)
	b.model.Script(providertest.Reply{ToolCalls: []providertest.Call{
		providertest.ToolCall("k1", "send_dtmf", map[string]string{"digits": "12w#"})}})
	ctx := context.Background()
	d, med, err := newPeer(t, nil).call(ctx, "100", b.sip.Addr(), diago.InviteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Hangup(ctx) }()
	c := b.next(t)
	log := listen(med)
	stop := make(chan struct{})
	defer close(stop)
	talk(med, stop, 1)
	poll.Until(t, "the keys to reach the model as sent", 30*time.Second, func() bool {
		return b.chatContains(`{"sent":"12w#"}`)
	})
	got, events := log.digits()
	if got != "12#" {
		t.Fatalf("the phone decoded %q, want 12#", got)
	}
	for i, ev := range events {
		if len(ev) != 8 || !ev[0].marker {
			t.Fatalf("event %d: %d packets (want 8), first marked %v", i, len(ev), ev[0].marker)
		}
		for j, p := range ev {
			end := j >= 5
			want := uint16(min(j+1, 5) * 160)
			if p.ev.EndOfEvent != end || p.ev.Duration != want || (j > 0 && p.marker) {
				t.Fatalf("event %d packet %d: end %v duration %d marker %v, want end %v duration %d", i, j, p.ev.EndOfEvent, p.ev.Duration, p.marker, end, want)
			}
			if j > 0 && p.seq != ev[j-1].seq+1 {
				t.Fatalf("event %d packet %d: sequence %d after %d", i, j, p.seq, ev[j-1].seq)
			}
		}
	}
	// The audio after each event: 8 frames of the clock later.
	log.mu.Lock()
	audio := append([]uint32(nil), log.audio...)
	log.mu.Unlock()
	for i, ev := range events {
		next := uint32(0)
		for _, ts := range audio {
			if ts > ev[0].ts {
				next = ts
				break
			}
		}
		if next != ev[0].ts+8*160 {
			t.Fatalf("event %d at %d: the audio after it is stamped %d, want %d", i, ev[0].ts, next, ev[0].ts+8*160)
		}
	}
	// Between the starts of 1 and 2: the event and its 60 ms gap; between
	// 2 and #: those and the 500 ms pause.
	if gap := events[1][0].ts - events[0][0].ts; gap != 11*160 {
		t.Fatalf("1 to 2: %d samples, want %d", gap, 11*160)
	}
	if gap := events[2][0].ts - events[1][0].ts; gap != 36*160 {
		t.Fatalf("2 to #: %d samples, want %d (with the 500 ms pause)", gap, 36*160)
	}
	if first := b.model.ChatRequests()[0]; !strings.Contains(fmtTools(first.Tools), "send_dtmf") {
		t.Fatalf("the model was not offered send_dtmf: %+v", first.Tools)
	}
	if !running(c) {
		t.Fatalf("the call ended: %q", outcome(b.ended(t, c)))
	}
}

// A real softphone hears the keys the agent presses: baresip decodes the
// box's telephone-events into the digits sent, in order.
func TestBaresipDecodesTheKeysTheAgentPresses(t *testing.T) {
	t.Parallel()
	siptest.NeedBaresip(t)
	b := newProtocolBox(t, inboundConfig(), "    voice: {keypad: true}\n", nil)
	b.model.Script(providertest.Reply{ToolCalls: []providertest.Call{
		providertest.ToolCall("k1", "send_dtmf", map[string]string{"digits": "4#0*"})}})
	mic := siptest.SpeechFile(t, t.TempDir(), "Press four, then pound.", 2, 8)
	ph := siptest.StartBaresip(t, "+15550001", mic, "sip:100@"+b.sip.Addr())
	b.next(t)
	poll.Until(t, "baresip to decode four keys", 30*time.Second, func() bool { return len(ph.Keys()) >= 4 })
	if got := ph.Keys(); got != "4#0*" {
		t.Fatalf("baresip decoded %q, want 4#0*", got)
	}
	poll.Until(t, "the model to be told the keys went out", 20*time.Second, func() bool {
		return b.chatContains(`{"sent":"4#0*"}`)
	})
}
