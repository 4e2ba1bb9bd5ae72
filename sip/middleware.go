package sip

import (
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emiago/diago/media/sdp"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// SIP status codes sipgo names differently or not at all.
const (
	statusUnsupportedURIScheme = 416
	statusIntervalTooSmall     = 422
)

// middleware runs before diago's handlers: it refuses malformed INVITEs
// with a 4xx before a dialog exists, adds the session timer and Allow
// headers to 2xx answers, tracks hold and session refreshes on re-INVITEs,
// and turns a panic in any handler into a 500 instead of a crash.
func (s *Server) middleware(next sipgo.RequestHandler) sipgo.RequestHandler {
	return func(req *sip.Request, tx sip.ServerTransaction) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("sip: handler panic", "method", req.Method.String(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusInternalServerError, "Server Internal Error", nil))
			}
		}()
		if req.Method == sip.ACK {
			if c := s.lookup(req); c != nil {
				c.takeLateAnswer(req)
			}
			next(req, tx)
			return
		}
		if res := checkRequest(req); res != nil {
			_ = tx.Respond(res)
			return
		}
		if req.Method != sip.CANCEL {
			// RFC 3261 section 8.2.2.3: every request but ACK and CANCEL.
			if res := unsupported(req); res != nil {
				_ = tx.Respond(res)
				return
			}
		}
		if req.Method != sip.INVITE {
			next(req, tx)
			return
		}
		var streams *offerStreams
		if body := req.Body(); len(body) > 0 {
			var kept []byte
			if kept, streams = splitOffer(body); streams != nil {
				req.SetBody(kept)
			}
		}
		to := req.To()
		inDialog := to != nil && to.Params.Has("tag")
		if !inDialog {
			if res := s.checkInvite(req); res != nil {
				_ = tx.Respond(res)
				return
			}
			next(req, &answerTx{ServerTransaction: tx, s: s, req: req, streams: streams})
			return
		}
		c := s.lookup(req)
		atx := &answerTx{ServerTransaction: tx, s: s, req: req, refresh: true, streams: streams}
		next(req, atx)
		if c != nil && atx.status.Load()/100 == 2 {
			c.refreshedNow()
			if m := c.getMedia(); m != nil && len(req.Body()) > 0 {
				held := onHold(req.Body())
				m.setHeld(held)
				c.log.Info("sip: media updated", "hold", held)
			}
		}
	}
}

// answerTx adds headers to the 2xx answering an INVITE and remembers the
// status it sent.
type answerTx struct {
	sip.ServerTransaction
	s       *Server
	req     *sip.Request
	refresh bool
	// streams is the offer's streams when it had several (answered with
	// the refused ones at port 0).
	streams *offerStreams
	status  atomic.Int32
	timed   atomic.Bool // the call's setup was recorded at its 200 OK
}

func (t *answerTx) Respond(res *sip.Response) error {
	if res.IsSuccess() {
		addAnswerHeaders(t.s, t.req, res, t.refresh)
		if c := t.s.lookup(t.req); c != nil {
			if port := c.rtpPort.Load(); port > 0 && len(res.Body()) > 0 {
				res.SetBody(withRTPPort(res.Body(), int(port)))
			}
			if !t.refresh && !c.invited.IsZero() && t.timed.CompareAndSwap(false, true) {
				// INVITE to 200 OK (open, recall, answer), not the wait
				// for the ACK after it.
				t.s.recordSetup(time.Since(c.invited))
			}
		}
		if body := res.Body(); t.streams != nil && len(body) > 0 {
			res.SetBody(t.streams.answer(body))
		}
	}
	t.status.Store(int32(res.StatusCode))
	return t.ServerTransaction.Respond(res)
}

func addAnswerHeaders(s *Server, req *sip.Request, res *sip.Response, refresh bool) {
	if res.GetHeader("Allow") == nil {
		res.AppendHeader(sip.NewHeader("Allow", allowHeader))
	}
	if res.GetHeader("Supported") == nil {
		res.AppendHeader(sip.NewHeader("Supported", "timer"))
	}
	if res.GetHeader("Session-Expires") != nil {
		return
	}
	if refresh {
		// A refresh: mirror the interval, the requester refreshes unless it
		// says otherwise.
		d, refresher, ok, err := sessionExpires(req)
		if !ok || err != nil {
			return
		}
		if refresher == "" {
			refresher = "uac"
		}
		for _, h := range (sessionTimer{interval: d, refresher: refresher}).headers() {
			res.AppendHeader(h)
		}
		return
	}
	if c := s.lookup(req); c != nil {
		c.mu.Lock()
		t := c.timer
		c.mu.Unlock()
		for _, h := range t.headers() {
			res.AppendHeader(h)
		}
	}
}

// singleHeaders may appear once in a request (RFC 4475's multi01).
var singleHeaders = []string{"Call-ID", "CSeq", "From", "To", "Max-Forwards", "Content-Length", "Content-Type"}

// checkRequest refuses with 400 what sipgo's parser lets through although
// the request is malformed: a header that may appear once appearing twice,
// a CSeq naming another method (mismatch01, mismatch02). It also trims the
// spaces sipgo leaves around the names and values of the From and To
// parameters ("tag = 98asjd8", which RFC 3261's grammar allows: wsinv), so
// the tags match.
func checkRequest(req *sip.Request) *sip.Response {
	bad := func(reason string) *sip.Response {
		return sip.NewResponseFromRequest(req, sip.StatusBadRequest, reason, nil)
	}
	for _, name := range singleHeaders {
		if len(req.GetHeaders(name)) > 1 {
			return bad("Duplicate " + name)
		}
	}
	if cs := req.CSeq(); cs != nil && !strings.EqualFold(cs.MethodName.String(), req.Method.String()) {
		return bad("CSeq Method Mismatch")
	}
	if f := req.From(); f != nil {
		trimParams(&f.Params)
		// diago drops an INVITE without a From tag unanswered, and the
		// caller retransmits into silence. The transports give an RFC 2543
		// peer's null tag one of the box's (rfc2543.go), so this guards
		// only a request that reached the server some other way.
		if req.Method == sip.INVITE && !f.Params.Has("tag") {
			return bad("Missing From Tag")
		}
	}
	if t := req.To(); t != nil {
		trimParams(&t.Params)
	}
	return nil
}

// trimParams drops the white space sipgo's parser leaves around parameter
// names and values. It writes only when there is some: sipgo's 100 Trying
// timer reads the same header from another goroutine.
func trimParams(p *sip.HeaderParams) {
	clean := true
	for _, kv := range *p {
		if kv.K == "" || kv.K != strings.TrimSpace(kv.K) || kv.V != strings.TrimSpace(kv.V) {
			clean = false
			break
		}
	}
	if clean {
		return
	}
	out := make(sip.HeaderParams, 0, len(*p))
	for _, kv := range *p {
		kv.K, kv.V = strings.TrimSpace(kv.K), strings.TrimSpace(kv.V)
		if kv.K != "" {
			out = append(out, kv)
		}
	}
	*p = out
}

// unsupported refuses a request that requires an extension the box lacks
// (420 with Unsupported); the box supports only timer (RFC 4028).
func unsupported(req *sip.Request) *sip.Response {
	for _, h := range req.GetHeaders("Require") {
		for _, o := range strings.Split(h.Value(), ",") {
			if o = strings.TrimSpace(o); o != "" && !strings.EqualFold(o, "timer") {
				res := sip.NewResponseFromRequest(req, sip.StatusBadExtension, "Bad Extension", nil)
				res.AppendHeader(sip.NewHeader("Unsupported", o))
				return res
			}
		}
	}
	return nil
}

// checkInvite validates a new INVITE; a non-nil response refuses it.
func (s *Server) checkInvite(req *sip.Request) *sip.Response {
	bad := func(code int, reason string) *sip.Response {
		return sip.NewResponseFromRequest(req, code, reason, nil)
	}
	if req.From() == nil || req.To() == nil || req.CallID() == nil || req.CSeq() == nil {
		return bad(sip.StatusBadRequest, "Missing Header")
	}
	if req.Contact() == nil {
		return bad(sip.StatusBadRequest, "Missing Contact")
	}
	if mf := req.MaxForwards(); mf != nil && mf.Val() == 0 {
		return bad(sip.StatusTooManyHops, "Too Many Hops")
	}
	if sch := strings.ToLower(req.Recipient.Scheme); sch != "sip" && sch != "sips" && sch != "" {
		return bad(statusUnsupportedURIScheme, "Unsupported URI Scheme")
	}
	if _, err := s.negotiateTimer(req); err != nil {
		if err == errIntervalTooSmall {
			res := bad(statusIntervalTooSmall, "Session Interval Too Small")
			res.AppendHeader(sip.NewHeader("Min-SE", strconv.Itoa(int(s.minSE/time.Second))))
			return res
		}
		return bad(sip.StatusBadRequest, "Bad Session-Expires")
	}
	body := req.Body()
	if len(body) == 0 {
		// A late offer (RFC 3261 section 13.3.1): the box offers in its
		// 200 and takes the answer from the ACK (serveInbound).
		return nil
	}
	if ct := req.ContentType(); ct == nil || !strings.EqualFold(strings.TrimSpace(strings.Split(ct.Value(), ";")[0]), "application/sdp") {
		res := bad(sip.StatusUnsupportedMediaType, "Unsupported Media Type")
		res.AppendHeader(sip.NewHeader("Accept", "application/sdp"))
		return res
	}
	if res := s.checkOffer(req, body); res != nil {
		return res
	}
	return nil
}

// checkOffer refuses an SDP offer the box cannot answer: 400 when it does
// not parse, 488 when it offers no G.711 audio over plain RTP.
func (s *Server) checkOffer(req *sip.Request, body []byte) *sip.Response {
	sd := sdp.SessionDescription{}
	if err := sdp.Unmarshal(body, &sd); err != nil {
		return sip.NewResponseFromRequest(req, sip.StatusBadRequest, "Bad SDP", nil)
	}
	md, err := sd.MediaDescription("audio")
	if err != nil {
		return notAcceptable(req, "no audio stream offered")
	}
	ci, err := sd.ConnectionInformation()
	if err != nil || ci.IP == nil {
		return sip.NewResponseFromRequest(req, sip.StatusBadRequest, "Bad SDP Connection", nil)
	}
	if md.Proto != "RTP/AVP" {
		return notAcceptable(req, "only RTP/AVP is supported")
	}
	for _, f := range md.Formats {
		if f == "0" || f == "8" {
			return nil
		}
	}
	for _, a := range sd.Values("a") {
		l := strings.ToLower(a)
		if strings.HasPrefix(l, "rtpmap:") && (strings.Contains(l, " pcmu/8000") || strings.Contains(l, " pcma/8000")) {
			return nil
		}
	}
	return notAcceptable(req, "PCMU or PCMA required")
}

func notAcceptable(req *sip.Request, why string) *sip.Response {
	res := sip.NewResponseFromRequest(req, sip.StatusNotAcceptableHere, "Not Acceptable Here", nil)
	res.AppendHeader(sip.NewHeader("Warning", `304 stackbone "`+why+`"`))
	return res
}

// onHold reports whether an SDP offer puts the call on hold: the box
// should not send (sendonly or inactive) or the address is 0.0.0.0.
func onHold(body []byte) bool {
	sd := sdp.SessionDescription{}
	if err := sdp.Unmarshal(body, &sd); err != nil {
		return false
	}
	switch sd.MediaDirection() {
	case sdp.ModeSendonly, sdp.ModeInactive:
		return true
	}
	if ci, err := sd.ConnectionInformation(); err == nil && ci.IP != nil && ci.IP.Equal(net.IPv4zero) {
		return true
	}
	return false
}

// onUpdate answers UPDATE (RFC 3311), which peers use to refresh the
// session timer without touching media.
func (s *Server) onUpdate(req *sip.Request, tx sip.ServerTransaction) {
	c := s.lookup(req)
	if c == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
		return
	}
	if len(req.Body()) > 0 {
		_ = tx.Respond(notAcceptable(req, "media changes by re-INVITE only"))
		return
	}
	res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil)
	addAnswerHeaders(s, req, res, true)
	if err := tx.Respond(res); err == nil {
		c.refreshedNow()
	}
}
