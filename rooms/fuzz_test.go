package rooms

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseOffer: whatever a browser (or anyone holding a room's offer
// URL) posts, the embedded peer's offer parser returns an offer it can
// answer or ErrBadOffer, and never panics; an accepted offer has ICE
// credentials, a fingerprint and an audio section.
func FuzzParseOffer(f *testing.F) {
	f.Add("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n" +
		"m=audio 9 UDP/TLS/RTP/SAVPF 111 0\r\nc=IN IP4 0.0.0.0\r\na=ice-ufrag:abcd\r\na=ice-pwd:0123456789012345678901\r\n" +
		"a=fingerprint:sha-256 AA:BB\r\na=setup:actpass\r\na=mid:0\r\na=sendrecv\r\na=rtcp-mux\r\na=rtpmap:0 PCMU/8000\r\n" +
		"a=candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host\r\n")
	f.Add("v=0\r\nm=audio 9 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n")
	f.Add("v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n")
	f.Fuzz(func(t *testing.T, offer string) {
		o, err := parseOffer(offer)
		if err != nil {
			if !errors.Is(err, ErrBadOffer) {
				t.Fatalf("error %v is not ErrBadOffer", err)
			}
			return
		}
		if o.ufrag == "" || o.pwd == "" || o.fingerprint == "" || o.audio < 0 || o.audio >= len(o.media) ||
			o.media[o.audio].MediaName.Media != "audio" {
			t.Fatalf("accepted %+v", o)
		}
		for _, v := range append([]string{o.mid, o.ufrag, o.pwd, o.setup, o.fingerprint}, o.candidates...) {
			if strings.ContainsAny(v, "\r\n") {
				t.Fatalf("accepted a value that splits the answer's lines: %q", v)
			}
		}
	})
}
