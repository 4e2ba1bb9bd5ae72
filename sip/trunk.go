package sip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"

	"github.com/stackbone/box/config"
)

// inboundTrunk is a config.InboundTrunk with its sources parsed.
type inboundTrunk struct {
	config.InboundTrunk
	sources []netip.Prefix
}

func newInboundTrunk(t config.InboundTrunk) (*inboundTrunk, error) {
	it := &inboundTrunk{InboundTrunk: t}
	for _, src := range t.Sources {
		p, err := config.ParseSource(src)
		if err != nil {
			return nil, fmt.Errorf("sip: trunk %s: source %q: %w", t.Name, src, err)
		}
		it.sources = append(it.sources, p)
	}
	if it.Realm == "" {
		it.Realm = "stackbone"
	}
	return it, nil
}

// accepts reports whether a request from addr may use the trunk (before
// any digest check).
func (t *inboundTrunk) accepts(addr netip.Addr) bool {
	if len(t.sources) == 0 {
		return true
	}
	for _, p := range t.sources {
		if p.Contains(addr.Unmap()) {
			return true
		}
	}
	return false
}

// route returns the agent for a dialled number, or "".
func (t *inboundTrunk) route(number string) string {
	n := config.NormalizeNumber(number)
	for _, r := range t.Routes {
		pat := config.NormalizeNumber(r.Number)
		switch {
		case pat == "*":
			return r.Agent
		case strings.HasSuffix(pat, "*"):
			if strings.HasPrefix(n, strings.TrimSuffix(pat, "*")) {
				return r.Agent
			}
		case pat == n:
			return r.Agent
		}
	}
	return t.DefaultAgent
}

// sourceAddr is the IP a request came from.
func sourceAddr(req *sip.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(req.Source())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap(), true
}

// authorization is the outcome of picking a trunk for an INVITE.
type authorization struct {
	trunk *inboundTrunk
	// res is the response to send instead of answering (401, 403), nil when
	// the trunk accepted the request.
	res *sip.Response
}

// authorize picks the first trunk that accepts the request's source and,
// where the trunk has credentials, checks the digest answer (challenging
// with 401 first). No trunk for the source: 403.
func (s *Server) authorize(req *sip.Request) authorization {
	addr, ok := sourceAddr(req)
	if !ok {
		return authorization{res: sip.NewResponseFromRequest(req, sip.StatusForbidden, "Forbidden", nil)}
	}
	var challenge *authorization
	for _, t := range s.inbound {
		if !t.accepts(addr) {
			continue
		}
		if t.Username == "" {
			return authorization{trunk: t}
		}
		auth := diago.DigestAuth{Username: t.Username, Password: t.Password, Realm: t.Realm, Expire: 30 * time.Second}
		res, err := s.digest.AuthorizeRequest(req, auth)
		if err == nil && res.StatusCode == sip.StatusOK {
			return authorization{trunk: t}
		}
		if challenge == nil {
			switch {
			case errors.Is(err, diago.ErrDigestAuthNoChallenge):
				// An answer to a challenge we no longer hold: challenge anew.
				fresh := req.Clone()
				fresh.RemoveHeader("Authorization")
				res, _ = s.digest.AuthorizeRequest(fresh, auth)
			case req.GetHeader("Authorization") != nil:
				// A wrong answer: refuse rather than challenge again.
				res = sip.NewResponseFromRequest(req, sip.StatusForbidden, "Forbidden", nil)
			}
			challenge = &authorization{trunk: t, res: res}
		}
	}
	if challenge != nil {
		return *challenge
	}
	return authorization{res: sip.NewResponseFromRequest(req, sip.StatusForbidden, "Forbidden", nil)}
}

// outboundTrunk finds a trunk by name; "" is the first.
func (s *Server) outboundTrunk(name string) (config.OutboundTrunk, error) {
	if len(s.outbound) == 0 {
		return config.OutboundTrunk{}, ErrNoTrunk
	}
	if name == "" {
		return s.outbound[0], nil
	}
	for _, t := range s.outbound {
		if t.Name == name {
			return t, nil
		}
	}
	return config.OutboundTrunk{}, fmt.Errorf("%w: %q", ErrUnknownTrunk, name)
}
