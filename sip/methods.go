package sip

import (
	"strings"
	"sync"

	"github.com/emiago/sipgo/sip"
)

// allowHeader lists the methods the box serves: in every Allow it sends
// (OPTIONS, 405, 2xx to INVITE), so all agree.
const allowHeader = "INVITE, ACK, BYE, CANCEL, OPTIONS, REFER, NOTIFY, UPDATE, INFO"

// knownMethods are the SIP methods of the IETF's registry the box does not
// serve: they are answered 405 with Allow; any other method is unknown and
// answered 501 (RFC 3261 section 8.2.1).
var knownMethods = map[string]bool{
	"REGISTER": true, "PRACK": true, "SUBSCRIBE": true, "PUBLISH": true, "MESSAGE": true,
}

// onOptions answers OPTIONS (out of or within a dialog) with what the box
// serves, the same Allow as on its INVITE answers. Out of a dialog, a
// draining box answers 503 with Retry-After as it would an INVITE (RFC 3261
// section 11.2), so a proxy probing its boxes (Kamailio's dispatcher) stops
// sending it new calls; within a dialog it answers 200, the call goes on.
func (s *Server) onOptions(req *sip.Request, tx sip.ServerTransaction) {
	if to := req.To(); s.calls.Draining() && (to == nil || to.Params == nil || !to.Params.Has("tag")) {
		res := sip.NewResponseFromRequest(req, sip.StatusServiceUnavailable, "Service Unavailable", nil)
		res.AppendHeader(sip.NewHeader("Retry-After", "5"))
		_ = tx.Respond(res)
		return
	}
	res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil)
	res.AppendHeader(sip.NewHeader("Allow", allowHeader))
	res.AppendHeader(sip.NewHeader("Accept", "application/sdp"))
	res.AppendHeader(sip.NewHeader("Supported", "timer"))
	_ = tx.Respond(res)
}

// noRoute answers the methods the box does not serve: 405 with Allow for
// the ones SIP defines (the box is no registrar: trunks reach it by
// address), 501 for the rest. An ACK is never answered.
func (s *Server) noRoute(req *sip.Request, tx sip.ServerTransaction) {
	m := strings.ToUpper(req.Method.String())
	if m == "ACK" {
		return
	}
	var res *sip.Response
	if knownMethods[m] {
		res = sip.NewResponseFromRequest(req, sip.StatusMethodNotAllowed, "Method Not Allowed", nil)
	} else {
		res = sip.NewResponseFromRequest(req, sip.StatusNotImplemented, "Not Implemented", nil)
	}
	res.AppendHeader(sip.NewHeader("Allow", allowHeader))
	s.log.Debug("sip: method not served", "code", res.StatusCode)
	_ = tx.Respond(res)
}

// prepareOnce guards PrepareLibrary.
var prepareOnce sync.Once

// PrepareLibrary lifts two process-wide limits of sipgo v1.7.3 to what SIP
// allows; New calls it, and a process that runs other sipgo transports (a
// test's phones) may call it first so none of them reads the limits while
// they change.
//
// sipgo refuses to write any UDP message larger than its MTU setting less
// 200 bytes (1,300 bytes by default), responses included, and returns only
// an error the dialog layer drops: the 200 OK to an INVITE that came
// through a carrier's proxies (several Vias and Record-Routes copied into
// the answer) was never sent. RFC 3261 section 18.1.1 asks a client to move
// a request of that size to TCP; it puts no limit on responses, which must
// go back the way the request came. The box's own requests stay small.
// sipgo also reads UDP into a 32 KB buffer, cutting larger datagrams.
func PrepareLibrary() {
	prepareOnce.Do(func() {
		sip.UDPMTUSize = maxMessage + 200
		sip.TransportBufferReadSize = maxMessage
	})
}
