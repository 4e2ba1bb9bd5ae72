package sip

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/voice"
)

// transferLeg is a warm transfer's second line: the person's audio comes in
// as frames, the box writes the briefing and then the caller's audio to it.
type transferLeg struct {
	s      *Server
	c      *call
	m      *rtpMedia
	frames chan []int16
	done   <-chan struct{}
	hangup func(context.Context) error
	once   sync.Once
}

// DialLeg rings to through trunk ("" for the first outbound trunk) for a
// warm transfer and returns the answered line (voice.LegDialer). A callee
// that is busy, declines or does not answer before ctx ends is
// voice.ErrLegNotAnswered.
func (s *Server) DialLeg(ctx context.Context, trunkName, to string) (voice.Leg, error) {
	trunk, err := s.outboundTrunk(trunkName)
	if err != nil {
		return nil, err
	}
	to = config.NormalizeNumber(to)
	if !numberRe.MatchString(to) {
		return nil, fmt.Errorf("%w %q", ErrInvalidNumber, to)
	}
	c := s.newCall(uuid.NewString(), "transfer")
	if !s.admit(c) {
		return nil, fmt.Errorf("%w (%d calls)", ErrAtCapacity, s.cfg.MaxCalls)
	}
	d, opts, err := s.outboundDialog(trunk, to, c.sipCallID)
	if err != nil {
		s.release(c)
		return nil, err
	}
	med, err := d.Invite(ctx, opts)
	if err == nil {
		err = d.Ack(ctx)
	}
	if err != nil {
		d.Close()
		s.release(c)
		if res := dialogResponse(err); res != nil {
			return nil, fmt.Errorf("%w: %d %s", voice.ErrLegNotAnswered, res.StatusCode, res.Reason)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: no answer", voice.ErrLegNotAnswered)
		}
		return nil, err
	}
	l := &transferLeg{s: s, c: c, frames: make(chan []int16, 50), done: d.Context().Done(), hangup: d.Hangup}
	l.m = newRTPMedia(med, l, c.log)
	c.log.Info("sip: transfer leg answered", "trunk", trunk.Name)
	go func() {
		<-d.Context().Done()
		l.m.stop()
		d.Close()
		s.release(c)
	}()
	return l, nil
}

func (l *transferLeg) WriteFrame(pcm []int16) error { return l.m.WriteFrame(pcm) }
func (l *transferLeg) Frames() <-chan []int16       { return l.frames }
func (l *transferLeg) Done() <-chan struct{}        { return l.done }

// Hangup sends BYE once.
func (l *transferLeg) Hangup(context.Context) error {
	l.once.Do(func() {
		l.m.stop()
		bye(l.hangup)
	})
	return nil
}

// Hear queues the person's audio for the caller; a full queue drops the
// oldest frame rather than holding the RTP reader.
func (l *transferLeg) Hear(pcm []int16) {
	f := append([]int16(nil), pcm...)
	for {
		select {
		case l.frames <- f:
			return
		default:
		}
		select {
		case <-l.frames:
		default:
		}
	}
}

func (l *transferLeg) DTMF(rune) {}
func (l *transferLeg) Hold(bool) {}
func (l *transferLeg) Alive()    {}
