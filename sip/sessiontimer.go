package sip

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"
)

// sessionTimer is a negotiated RFC 4028 session timer.
type sessionTimer struct {
	// interval is the session interval; 0 means no session timer.
	interval time.Duration
	// refresher is "uac" or "uas" as the dialog's INVITE saw them.
	refresher string
	// weRefresh says the box sends the refreshes (re-INVITE at half the
	// interval); otherwise it ends the call when no refresh arrives.
	weRefresh bool
}

// deadline is how long the box waits for the other side's refresh before
// it ends the session (RFC 4028 section 10: the interval minus the lesser
// of 32 s and a third of it).
func (t sessionTimer) deadline() time.Duration {
	return t.interval - min(32*time.Second, t.interval/3)
}

// headers are the Session-Expires (and Require) of a 2xx answering a
// request that negotiated or refreshed the timer.
func (t sessionTimer) headers() []sip.Header {
	if t.interval <= 0 {
		return nil
	}
	h := []sip.Header{sip.NewHeader("Session-Expires",
		strconv.Itoa(int(t.interval/time.Second))+";refresher="+t.refresher)}
	if t.refresher == "uac" {
		h = append(h, sip.NewHeader("Require", "timer"))
	}
	return h
}

// errIntervalTooSmall: a Session-Expires below the box's Min-SE (422).
var errIntervalTooSmall = errors.New("session interval too small")

// sessionExpires reads a Session-Expires header (full or compact form):
// the interval and the refresher parameter. ok is false when absent.
func sessionExpires(req interface{ GetHeader(string) sip.Header }) (d time.Duration, refresher string, ok bool, err error) {
	h := req.GetHeader("Session-Expires")
	if h == nil {
		h = req.GetHeader("x")
	}
	if h == nil {
		return 0, "", false, nil
	}
	parts := strings.Split(h.Value(), ";")
	secs, err := strconv.ParseUint(strings.TrimSpace(parts[0]), 10, 32)
	if err != nil || secs == 0 {
		return 0, "", true, fmt.Errorf("bad Session-Expires %q", h.Value())
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "refresher") {
			refresher = strings.ToLower(strings.TrimSpace(v))
			if refresher != "uac" && refresher != "uas" {
				return 0, "", true, fmt.Errorf("bad refresher %q", v)
			}
		}
	}
	return time.Duration(secs) * time.Second, refresher, true, nil
}

// hasOption reports whether a Supported or Require header lists option.
func hasOption(req interface{ GetHeaders(string) []sip.Header }, names []string, option string) bool {
	for _, name := range names {
		for _, h := range req.GetHeaders(name) {
			for _, o := range strings.Split(h.Value(), ",") {
				if strings.EqualFold(strings.TrimSpace(o), option) {
					return true
				}
			}
		}
	}
	return false
}

var (
	supportedNames = []string{"Supported", "k"}
	requireNames   = []string{"Require"}
)

// negotiateTimer is the box's answer (as UAS) to an INVITE's session timer
// request: the interval is the box's unless the caller asks less (not below
// Min-SE), the refresher the caller's choice, else the caller when it
// supports timers, else the box.
func (s *Server) negotiateTimer(req *sip.Request) (sessionTimer, error) {
	if s.cfg.SessionTimer < 0 {
		return sessionTimer{}, nil
	}
	asked, refresher, present, err := sessionExpires(req)
	if err != nil {
		return sessionTimer{}, err
	}
	if present && asked < s.minSE {
		return sessionTimer{}, errIntervalTooSmall
	}
	t := sessionTimer{interval: s.cfg.SessionTimer}
	if present && asked < t.interval {
		t.interval = asked
	}
	if h := req.GetHeader("Min-SE"); h != nil {
		if secs, err := strconv.ParseUint(strings.TrimSpace(strings.Split(h.Value(), ";")[0]), 10, 32); err == nil {
			t.interval = max(t.interval, time.Duration(secs)*time.Second)
		}
	}
	uacTimer := hasOption(req, supportedNames, "timer") || hasOption(req, requireNames, "timer")
	switch {
	case refresher != "":
		t.refresher = refresher
	case uacTimer:
		t.refresher = "uac"
	default:
		t.refresher = "uas"
	}
	if t.refresher == "uac" && !uacTimer {
		t.refresher = "uas"
	}
	t.weRefresh = t.refresher == "uas"
	return t, nil
}
