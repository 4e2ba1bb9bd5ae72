package sip

import (
	"testing"

	"github.com/emiago/sipgo/sip"
)

// FuzzHeaders: any SIP request the parser takes gives the headers the box
// reads (the caller's number, the identity number, session timers) without
// a panic.
func FuzzHeaders(f *testing.F) {
	f.Add("INVITE sip:100@127.0.0.1 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK1\r\nFrom: <sip:+34600111222@127.0.0.1>;tag=1\r\n" +
		"To: <sip:100@127.0.0.1>\r\nCall-ID: a\r\nCSeq: 1 INVITE\r\nMax-Forwards: 70\r\nP-Asserted-Identity: <sip:+15550123@carrier>\r\n" +
		"Session-Expires: 1800;refresher=uac\r\nSupported: timer\r\nContent-Length: 0\r\n\r\n")
	f.Add("INVITE sip:100@127.0.0.1 SIP/2.0\r\nFrom: \"Anonymous\" <sip:anonymous@anonymous.invalid>;tag=2\r\nPrivacy: id\r\nSession-Expires: x\r\nContent-Length: 0\r\n\r\n")
	f.Add("INVITE sip:100@127.0.0.1 SIP/2.0\r\nFrom: <tel:+1-555-0100>;tag=3\r\nRemote-Party-ID: <sip:0600111222@x>\r\nContent-Length: 0\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		msg, err := sip.ParseMessage([]byte(raw))
		if err != nil {
			return
		}
		req, ok := msg.(*sip.Request)
		if !ok {
			return
		}
		_ = phoneNumber(req)
		_ = callerNumber(req)
		_, _, _, _ = sessionExpires(req)
		_ = hasOption(req, []string{"Supported", "Require"}, "timer")
	})
}
