package sip

import (
	"strings"
	"testing"

	"github.com/emiago/diago/media"
	"github.com/pion/rtp"
)

// The answer names the shared port (RTCP on the next); a refused stream
// keeps port 0.
func TestAnswerNamesTheSharedPort(t *testing.T) {
	body := "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n" +
		"m=audio 31000 RTP/AVP 0 101\r\na=rtcp:31001 IN IP4 127.0.0.1\r\na=rtpmap:0 PCMU/8000\r\n" +
		"m=video 0 RTP/AVP 96\r\na=rtcp:31001\r\n"
	got := string(withRTPPort([]byte(body), 20000))
	for _, want := range []string{"m=audio 20000 RTP/AVP 0 101\r\n", "a=rtcp:20001 IN IP4 127.0.0.1\r\n", "m=video 0 RTP/AVP 96\r\na=rtcp:31001\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("answer %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "31000") {
		t.Errorf("answer %q still names the call's own port", got)
	}
}

// Plain RTP over IPv4 can share the port; SRTP, IPv6, a held stream's
// 0.0.0.0 and a refused audio cannot.
func TestWhichOffersShareThePort(t *testing.T) {
	offer := func(c, m, extra string) []byte {
		return []byte("v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=" + c + "\r\nt=0 0\r\nm=" + m + "\r\na=rtpmap:0 PCMU/8000\r\n" + extra)
	}
	if a, ok := offerPeer(offer("IN IP4 10.0.0.9", "audio 4000 RTP/AVP 0", "")); !ok || a.String() != "10.0.0.9:4000" {
		t.Fatalf("plain offer: %v %v", a, ok)
	}
	for name, o := range map[string][]byte{
		"srtp":    offer("IN IP4 10.0.0.9", "audio 4000 RTP/SAVP 0", "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:x\r\n"),
		"sdes":    offer("IN IP4 10.0.0.9", "audio 4000 RTP/AVP 0", "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:x\r\n"),
		"ipv6":    offer("IN IP6 ::1", "audio 4000 RTP/AVP 0", ""),
		"zero":    offer("IN IP4 0.0.0.0", "audio 4000 RTP/AVP 0", ""),
		"refused": offer("IN IP4 10.0.0.9", "audio 0 RTP/AVP 0", ""),
		"garbage": []byte("not sdp"),
	} {
		if a, ok := offerPeer(o); ok {
			t.Errorf("%s offer shares the port at %v", name, a)
		}
	}
}

// A key is one digit at its first end packet, however often the end and
// the tone packets repeat; an end without its start is nothing.
func TestTelephoneEventsBecomeOneDigitEach(t *testing.T) {
	var s dtmfState
	var got []rune
	send := func(ev uint8, end bool, ts uint32, marker bool) {
		p := media.DTMFEncode(media.DTMFEvent{Event: ev, EndOfEvent: end, Volume: 10, Duration: 160})
		if d, ok := s.take(p, rtp.Header{Timestamp: ts, Marker: marker}); ok {
			got = append(got, d)
		}
	}
	send(5, true, 100, false) // an end heard without its start
	for _, ts := range []uint32{800, 1600} {
		send(1, false, ts, true)
		send(1, false, ts, false)
		send(1, true, ts, false)
		send(1, true, ts, false)
		send(1, true, ts, false)
	}
	send(11, false, 2400, false) // no marker, but a new timestamp
	send(11, true, 2400, false)
	if string(got) != "11#" {
		t.Fatalf("heard %q, want 11#", string(got))
	}
}
