package sip

import (
	"errors"
	"fmt"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"
)

// errNoLateAnswer: an INVITE without an offer was answered with the box's
// offer and the ACK brought no usable answer (RFC 3261 section 13.3.1
// requires one).
var errNoLateAnswer = errors.New("sip: the ACK to a late offer carried no usable SDP answer")

// lateOffer is a call answered with the box's offer, waiting for the answer
// in the ACK.
type lateOffer struct {
	answer chan []byte // the ACK's body; one
}

// takeLateAnswer notes the SDP answer of the ACK to a late-offer 200
// before diago applies it.
func (c *call) takeLateAnswer(req *sip.Request) {
	lo := c.late.Load()
	if lo == nil || !c.late.CompareAndSwap(lo, nil) {
		return
	}
	lo.answer <- append([]byte(nil), req.Body()...)
}

// answerLate answers an INVITE without an offer: the box's offer goes in
// the 200, the answer comes with the ACK. It returns the media and the
// answer.
//
// diago v0.42's AnswerLate applies the ACK's answer on a fork of the media
// session (started and monitored), then starts the monitor of the session
// it began with, which never got a remote address, and returns that error
// with the media. So an error is the call's failure only when the media did
// not get the answer's address.
func (s *Server) answerLate(c *call, d *diago.DialogServerSession) (*diago.DialogMedia, []byte, error) {
	lo := &lateOffer{answer: make(chan []byte, 1)}
	c.late.Store(lo)
	defer c.late.Store(nil)
	med, err := d.AnswerLate()
	var answer []byte
	select {
	case answer = <-lo.answer:
	default:
		// AnswerLate returns once diago read the ACK, after the middleware
		// noted it; nothing here means no ACK came.
	}
	if med == nil {
		return nil, nil, err
	}
	ms := med.MediaSession()
	if len(answer) == 0 || ms == nil || ms.Raddr.IP == nil {
		med.Close()
		if d.Context().Err() == nil {
			bye(d.Hangup)
		}
		if err != nil && len(answer) > 0 {
			return nil, nil, fmt.Errorf("%w: %v", errNoLateAnswer, err)
		}
		return nil, nil, errNoLateAnswer
	}
	if err != nil {
		c.log.Debug("sip: late offer answered (diago's stale monitor)", "error", err)
	}
	return med, answer, nil
}
