package sip

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/pace"
	"github.com/stackbone/box/voice"
)

// call is one SIP call leg the server carries, inbound or outbound. It is
// the voice.Transport of its controller call: it reports what happened on
// the SIP side (End) and ends the SIP side when the controller says so
// (Hangup); the controller decides the outcome.
type call struct {
	s         *Server
	sipCallID string
	direction string
	log       *slog.Logger

	// remote is host:port of the trunk side, where numbers are transferred.
	remote string

	mu    sync.Mutex
	ctl   *voice.Call
	leg   leg
	media *rtpMedia
	timer sessionTimer

	// late is set while an answered late offer waits for its ACK.
	late atomic.Pointer[lateOffer]
	// invited is when an inbound call's INVITE arrived (setup is timed to
	// its 200 OK).
	invited time.Time
	// rtpPort is the shared RTP port the call's answers name (0: the
	// port diago gave it).
	rtpPort atomic.Int32

	refreshed chan struct{}
	ended     chan struct{}
	endOnce   sync.Once
}

// leg is what the call does on its SIP dialog.
type leg struct {
	hangup   func(ctx context.Context) error
	reinvite func(ctx context.Context) error
	refer    func(ctx context.Context, to sip.Uri, onNotify func(code int)) error
	// done ends when the dialog ended (BYE either way, CANCEL).
	done <-chan struct{}
}

func (c *call) setLeg(l leg) {
	c.mu.Lock()
	c.leg = l
	c.mu.Unlock()
}

func (c *call) getLeg() leg {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leg
}

func (s *Server) newCall(sipCallID, direction string) *call {
	return &call{
		s: s, sipCallID: sipCallID, direction: direction,
		log:       s.log.With("sipCallId", sipCallID, "direction", direction),
		refreshed: make(chan struct{}, 1), ended: make(chan struct{}),
	}
}

func (c *call) setController(ctl *voice.Call) {
	c.mu.Lock()
	c.ctl = ctl
	c.mu.Unlock()
}

func (c *call) controller() *voice.Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctl
}

func (c *call) setMedia(m *rtpMedia) {
	c.mu.Lock()
	c.media = m
	c.mu.Unlock()
}

func (c *call) getMedia() *rtpMedia {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.media
}

func (c *call) isEnded() bool {
	select {
	case <-c.ended:
		return true
	default:
		return false
	}
}

// report tells the controller what ended the call on the SIP side; the
// controller decides and completes. Before the controller exists there is
// nothing to tell.
func (c *call) report(outcome voice.Outcome, reason string) {
	if ctl := c.controller(); ctl != nil {
		ctl.End(outcome, reason)
	}
	c.log.Info("sip: call end reported", "outcome", outcome)
}

// stop ends the SIP side once: a call being set up stops ringing or
// opening, the media stops, and an answered call gets BYE.
func (c *call) stop() {
	c.endOnce.Do(func() {
		close(c.ended)
		if m := c.getMedia(); m != nil {
			m.stop()
		}
		if l := c.getLeg(); l.hangup != nil {
			bye(l.hangup)
		}
	})
}

// WriteFrame sends agent audio (voice.Transport); before the answer there
// is nowhere to send it.
func (c *call) WriteFrame(pcm []int16) error {
	if m := c.getMedia(); m != nil {
		return m.WriteFrame(pcm)
	}
	return nil
}

// Batch is what the call's frames are queued in (voice.Batcher): the
// shared RTP port's socket, nil on a port of its own.
func (c *call) Batch() pace.Flusher {
	if m := c.getMedia(); m != nil {
		return m.Batch()
	}
	return nil
}

// ReadBy says whether the shared RTP port's readers have handed on every
// packet that arrived by t (voice.SharedReader); true on a port of its own.
func (c *call) ReadBy(t time.Time) bool {
	if m := c.getMedia(); m != nil && m.route != nil {
		return m.route.ReadBy(t)
	}
	return true
}

// Talkspurt marks the next frame as a talkspurt's first
// (voice.Talkspurter).
func (c *call) Talkspurt() {
	if m := c.getMedia(); m != nil {
		m.Talkspurt()
	}
}

// Hangup ends the SIP side (voice.Transport), once the controller decided
// the call ended.
func (c *call) Hangup(context.Context) error {
	c.stop()
	return nil
}

var numberRe = regexp.MustCompile(`^\+?[0-9*#]{1,32}$`)

// Transfer hands the call to target with a blind transfer (REFER): a SIP
// URI, or a number sent to the trunk the call came through. It returns nil
// once the other side reported the transfer succeeded (NOTIFY 2xx) or
// hung up after accepting it; the controller then ends the call as
// transferred.
// A refused or failed transfer returns ErrTransferFailed and the call goes
// on.
func (c *call) Transfer(ctx context.Context, target string) error {
	l := c.getLeg()
	if l.refer == nil || c.isEnded() {
		return voice.ErrNoTransfer
	}
	to, err := c.transferURI(target)
	if err != nil {
		return err
	}
	notify := make(chan int, 8)
	err = l.refer(ctx, to, func(code int) {
		select {
		case notify <- code:
		default:
		}
	})
	if err != nil {
		if res := dialogResponse(err); res != nil {
			return fmt.Errorf("%w: REFER answered %d %s", ErrTransferFailed, res.StatusCode, res.Reason)
		}
		return fmt.Errorf("%w: %v", ErrTransferFailed, err)
	}
	c.log.Info("sip: transfer accepted", "target", to.String())
	wait := time.NewTimer(30 * time.Second)
	defer wait.Stop()
	for {
		select {
		case code := <-notify:
			if code < 200 {
				continue
			}
			if code >= 300 {
				return fmt.Errorf("%w: the transfer target answered %d", ErrTransferFailed, code)
			}
		case <-l.done:
			// The other side took the call over and hung up on us.
		case <-wait.C:
			return fmt.Errorf("%w: no result within 30 s", ErrTransferFailed)
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
}

func (c *call) transferURI(target string) (sip.Uri, error) {
	var u sip.Uri
	t := strings.TrimSpace(target)
	if strings.HasPrefix(t, "sip:") || strings.HasPrefix(t, "sips:") {
		if err := sip.ParseUri(t, &u); err != nil {
			return u, fmt.Errorf("%w: bad target %q", ErrTransferFailed, target)
		}
		return u, nil
	}
	n := config.NormalizeNumber(t)
	if !numberRe.MatchString(n) || c.remote == "" {
		return u, fmt.Errorf("%w: target %q is neither a SIP URI nor a number", ErrTransferFailed, target)
	}
	err := sip.ParseUri("sip:"+n+"@"+c.remote, &u)
	return u, err
}

// refreshedNow records a session refresh (re-INVITE or UPDATE answered 2xx).
func (c *call) refreshedNow() {
	select {
	case c.refreshed <- struct{}{}:
	default:
	}
}

// watch enforces the session timer (RFC 4028) until the call ends: a
// refresh that fails, or a session the other side let expire, ends the call
// as failed.
func (c *call) watch() {
	c.mu.Lock()
	st := c.timer
	c.mu.Unlock()
	if st.interval == 0 {
		return
	}
	var refresh, expire <-chan time.Time
	var refreshT, expireT *time.Timer
	if st.weRefresh {
		refreshT = time.NewTimer(st.interval / 2)
		defer refreshT.Stop()
		refresh = refreshT.C
	} else {
		expireT = time.NewTimer(st.deadline())
		defer expireT.Stop()
		expire = expireT.C
	}
	for {
		select {
		case <-c.ended:
			return
		case <-c.refreshed:
			if expireT != nil {
				expireT.Reset(st.deadline())
			}
		case <-refresh:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := c.getLeg().reinvite(ctx)
			cancel()
			if err != nil && !c.isEnded() {
				c.log.Info("sip: session refresh failed", "error", err)
				c.report(voice.OutcomeFailed, "the SIP session refresh failed")
				return
			}
			refreshT.Reset(st.interval / 2)
		case <-expire:
			c.log.Info("sip: session expired without a refresh", "interval", st.interval)
			c.report(voice.OutcomeFailed, "the SIP session expired without a refresh")
			return
		}
	}
}
