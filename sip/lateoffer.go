package sip

import (
	"errors"
	"fmt"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"
)

// errNoLateAnswer: an INVITE without an offer was answered with the box's
// offer and the ACK brought no answer (RFC 3261 section 13.3.1 requires one).
var errNoLateAnswer = errors.New("sip: the ACK to a late offer carried no SDP answer")

// lateOffer is a call answered with the box's offer, waiting for the answer
// in the ACK.
type lateOffer struct {
	ack chan *sip.Request // the ACK, with the answer; one
}

// takeLateAnswer keeps the SDP answer of the ACK to a late-offer 200 from
// diago. diago v0.42 applies an answer arriving with the ACK before it
// starts the media session's monitor and then waits on that monitor to
// stop, so the ACK handler and AnswerLate wait on each other until the
// transaction times out. The box hands diago the ACK without its body and
// applies the answer once AnswerLate returned (answerLate).
func (c *call) takeLateAnswer(req *sip.Request) {
	lo := c.late.Load()
	if lo == nil || !c.late.CompareAndSwap(lo, nil) {
		return
	}
	ack := req.Clone()
	if len(req.Body()) > 0 {
		req.SetBody(nil)
	}
	lo.ack <- ack
}

// answerLate answers an INVITE without an offer: the box's offer goes in
// the 200, the answer comes with the ACK. It returns the media and the
// answer.
func (s *Server) answerLate(c *call, d *diago.DialogServerSession) (*diago.DialogMedia, []byte, error) {
	lo := &lateOffer{ack: make(chan *sip.Request, 1)}
	c.late.Store(lo)
	defer c.late.Store(nil)
	med, err := d.AnswerLate()
	if err != nil {
		return nil, nil, err
	}
	var ack *sip.Request
	select {
	case ack = <-lo.ack:
	default:
		// AnswerLate returns once the ACK was read, after the middleware
		// handed it over; nothing here means it never came.
	}
	if ack == nil || len(ack.Body()) == 0 {
		med.Close()
		bye(d.Hangup)
		return nil, nil, errNoLateAnswer
	}
	// ReadAck applies the answer now that the media session runs (and
	// hangs up when the answer is unusable).
	if err := d.ReadAck(ack, nil); err != nil {
		med.Close()
		return nil, nil, fmt.Errorf("sip: applying the answer from the ACK: %w", err)
	}
	return med, ack.Body(), nil
}
