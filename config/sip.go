package config

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultSIPAddr is where the box listens for SIP (UDP and TCP) when
// nothing says otherwise.
const DefaultSIPAddr = "127.0.0.1:5060"

// Defaults of the SIP section, applied by package sip where a field is 0.
const (
	DefaultSIPMaxCalls        = 200
	DefaultSIPMaxCallDuration = time.Hour
	DefaultSIPMediaTimeout    = 30 * time.Second
	DefaultSIPSessionTimer    = 30 * time.Minute
	// MinSIPSessionTimer is RFC 4028's smallest session interval (Min-SE).
	MinSIPSessionTimer = 90 * time.Second
)

// SIP holds the SIP listener, call limits and trunks (package sip).
type SIP struct {
	// Addr is host:port for UDP and TCP alike (default DefaultSIPAddr);
	// STACKBONE_SIP_ADDR overrides it. Port 0 picks a free port.
	Addr string `yaml:"addr"`
	// ExternalHost is the address written into Contact headers and SDP
	// when Addr binds every interface (0.0.0.0); empty uses Addr's host.
	ExternalHost string `yaml:"externalHost"`
	// RTPPortMin and RTPPortMax bound the UDP ports of call media (RTP on
	// even ports, RTCP on the next). Both 0: any free port.
	RTPPortMin int `yaml:"rtpPortMin"`
	// RTPPortMax is the highest port of call media (see RTPPortMin); set
	// with it, at least two ports above it, at most 65535.
	RTPPortMax int `yaml:"rtpPortMax"`
	// RTPPort is the UDP port that carries the RTP of every call whose
	// trunk accepts a shared port (RTCP on the next), read and sent in
	// batches with the other calls' packets: the box's cheapest media path.
	// 0 (default) takes rtpPortMin when a range is set, else a free pair;
	// -1 gives every call a port pair of its own.
	RTPPort int `yaml:"rtpPort"`
	// MaxCalls is how many calls (ringing or answered) the SIP side carries
	// at once; more are refused with 503 (default DefaultSIPMaxCalls).
	MaxCalls int `yaml:"maxCalls"`
	// MaxCallDuration ends a call that lasts longer (default
	// DefaultSIPMaxCallDuration).
	MaxCallDuration time.Duration `yaml:"maxCallDuration"`
	// MediaTimeout ends a call when no RTP arrived for this long while not
	// on hold (default DefaultSIPMediaTimeout).
	MediaTimeout time.Duration `yaml:"mediaTimeout"`
	// SessionTimer is the RFC 4028 session interval the box asks for and
	// accepts at most (default DefaultSIPSessionTimer, at least
	// MinSIPSessionTimer); a negative value turns session timers off.
	SessionTimer time.Duration `yaml:"sessionTimer"`
	// Trunks are the carriers or PBXs the box talks to.
	Trunks Trunks `yaml:"trunks"`
}

// Trunks are the inbound and outbound SIP trunks.
type Trunks struct {
	// Inbound trunks are tried in order; the first whose sources (and
	// credentials) accept an INVITE takes it.
	Inbound []InboundTrunk `yaml:"inbound"`
	// Outbound trunks place calls; a dial that names no trunk uses the
	// first.
	Outbound []OutboundTrunk `yaml:"outbound"`
}

// InboundTrunk says who may call the box and which agent answers.
type InboundTrunk struct {
	// Name identifies the trunk in call records.
	Name string `yaml:"name"`
	// Sources are accepted source addresses: IPs or CIDRs. Empty accepts any
	// source, which needs Username (digest authentication).
	Sources []string `yaml:"sources"`
	// Username and Password (or PasswordEnv, an environment variable) make
	// the trunk require digest authentication.
	Username string `yaml:"username"`
	// Password of the digest authentication; prefer PasswordEnv in files.
	Password string `yaml:"password"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"passwordEnv"`
	// Realm of the digest challenge (default "stackbone").
	Realm string `yaml:"realm"`
	// Routes send dialled numbers to agents, first match wins.
	Routes []Route `yaml:"routes"`
	// DefaultAgent answers a dialled number that no route matches; empty
	// refuses it with 404.
	DefaultAgent string `yaml:"defaultAgent"`
	// PricePerMinute is what the carrier charges for a minute of an
	// answered call on the trunk, in the config's currency (unset: its
	// minutes are not priced).
	PricePerMinute *float64 `yaml:"pricePerMinute"`
	// OwnRTPPort gives each of the trunk's calls an RTP port pair of its
	// own instead of the shared port (sip.rtpPort): for a carrier that
	// does not send a call's RTP from the address its SDP names, or tells
	// calls apart by the box's port.
	OwnRTPPort bool `yaml:"ownRtpPort"`
}

// Route sends a dialled number to an agent.
type Route struct {
	// Number is the dialled number: exact ("+15550100"), a prefix ending in
	// "*" ("+1555*"), or "*" for every number. Spaces, dashes, dots and
	// brackets are ignored.
	Number string `yaml:"number"`
	// Agent answers the call.
	Agent string `yaml:"agent"`
}

// OutboundTrunk is where the box sends the calls it places.
type OutboundTrunk struct {
	// Name is what a dial request's trunk names.
	Name string `yaml:"name"`
	// Proxy is host:port of the carrier or PBX that receives the INVITEs.
	Proxy string `yaml:"proxy"`
	// Transport is udp (default) or tcp.
	Transport string `yaml:"transport"`
	// Username and Password (or PasswordEnv) answer the proxy's digest
	// challenge.
	Username string `yaml:"username"`
	// Password answers the digest challenge; prefer PasswordEnv in files.
	Password string `yaml:"password"`
	// PasswordEnv names the environment variable holding the password.
	PasswordEnv string `yaml:"passwordEnv"`
	// CallerNumber is the box's own number, sent as the caller (From).
	CallerNumber string `yaml:"callerNumber"`
	// PricePerMinute is what the carrier charges for a minute of an
	// answered call on the trunk, in the config's currency (unset: its
	// minutes are not priced).
	PricePerMinute *float64 `yaml:"pricePerMinute"`
}

var (
	trunkNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	routeRe     = regexp.MustCompile(`^(\*|\+?[0-9*#]*[0-9#]\*?)$`)
	callerRe    = regexp.MustCompile(`^\+?[0-9A-Za-z._-]{1,64}$`)
)

// NormalizeNumber strips the separators people write into phone numbers
// (spaces, dashes, dots, brackets), keeping a leading + and the digits.
func NormalizeNumber(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		switch r {
		case ' ', '-', '.', '(', ')', '/':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s SIP) validate(agents map[string]Agent) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, "sip: "+fmt.Sprintf(format, args...)) }
	if s.Addr != "" {
		if err := validHostPort(s.Addr, true); err != nil {
			add("addr %q: %v", s.Addr, err)
		}
	}
	if s.RTPPort < -1 || s.RTPPort > 65534 || (s.RTPPort > 0 && s.RTPPort < 1024) {
		add("rtpPort must be -1 (a port per call), 0 (chosen) or a port in 1024-65534")
	}
	if (s.RTPPortMin == 0) != (s.RTPPortMax == 0) {
		add("rtpPortMin and rtpPortMax go together")
	} else if s.RTPPortMin != 0 && (s.RTPPortMin < 1024 || s.RTPPortMax > 65535 || s.RTPPortMax-s.RTPPortMin < 2) {
		add("the RTP port range must lie in 1024-65535 and hold at least one RTP/RTCP pair")
	}
	if s.MaxCalls < 0 {
		add("maxCalls must not be negative")
	}
	if s.MaxCallDuration != 0 && s.MaxCallDuration < 10*time.Second {
		add("maxCallDuration must be at least 10s (write units: 1h, 90m)")
	}
	if s.MediaTimeout != 0 && s.MediaTimeout < time.Second {
		add("mediaTimeout must be at least 1s (write units: 30s)")
	}
	if s.SessionTimer > 0 && s.SessionTimer < MinSIPSessionTimer {
		add("sessionTimer must be at least %s, or negative to turn it off", MinSIPSessionTimer)
	}
	seen := map[string]bool{}
	for i, t := range s.Trunks.Inbound {
		where := fmt.Sprintf("trunks.inbound[%d]", i)
		if !trunkNameRe.MatchString(t.Name) {
			add("%s: name %q must match %s", where, t.Name, trunkNameRe)
		} else if seen[t.Name] {
			add("%s: name %q is used twice", where, t.Name)
		}
		seen[t.Name] = true
		if len(t.Sources) == 0 && t.Username == "" {
			add("%s: needs sources or a username (digest), or anyone could call", where)
		}
		for _, src := range t.Sources {
			if _, err := ParseSource(src); err != nil {
				add("%s: source %q: %v", where, src, err)
			}
		}
		if t.Username != "" && t.Password == "" && t.PasswordEnv == "" {
			add("%s: username needs password or passwordEnv", where)
		}
		if len(t.Routes) == 0 && t.DefaultAgent == "" {
			add("%s: needs routes or a defaultAgent", where)
		}
		for j, r := range t.Routes {
			if !routeRe.MatchString(NormalizeNumber(r.Number)) {
				add("%s.routes[%d]: number %q must be a number, a prefix ending in *, or *", where, j, r.Number)
			}
			if _, ok := agents[r.Agent]; !ok {
				add("%s.routes[%d]: agent %q is not declared", where, j, r.Agent)
			}
		}
		if t.DefaultAgent != "" {
			if _, ok := agents[t.DefaultAgent]; !ok {
				add("%s: defaultAgent %q is not declared", where, t.DefaultAgent)
			}
		}
	}
	seen = map[string]bool{}
	for i, t := range s.Trunks.Outbound {
		where := fmt.Sprintf("trunks.outbound[%d]", i)
		if !trunkNameRe.MatchString(t.Name) {
			add("%s: name %q must match %s", where, t.Name, trunkNameRe)
		} else if seen[t.Name] {
			add("%s: name %q is used twice", where, t.Name)
		}
		seen[t.Name] = true
		if err := validHostPort(t.Proxy, false); err != nil {
			add("%s: proxy %q: %v", where, t.Proxy, err)
		}
		switch t.Transport {
		case "", "udp", "tcp":
		default:
			add("%s: transport %q must be udp or tcp", where, t.Transport)
		}
		if t.Username != "" && t.Password == "" && t.PasswordEnv == "" {
			add("%s: username needs password or passwordEnv", where)
		}
		if t.CallerNumber != "" && !callerRe.MatchString(t.CallerNumber) {
			add("%s: callerNumber %q is not a number or SIP user", where, t.CallerNumber)
		}
	}
	return problems
}

// ParseSource reads an inbound trunk source: an IP address or a CIDR.
func ParseSource(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("not a CIDR")
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("not an IP address or CIDR")
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

func validHostPort(hp string, portZeroOK bool) error {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return fmt.Errorf("must be host:port")
	}
	if host == "" {
		return fmt.Errorf("needs a host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || (n == 0 && !portZeroOK) {
		return fmt.Errorf("bad port")
	}
	return nil
}

// applyEnv resolves STACKBONE_SIP_ADDR, the default address and the trunks'
// password variables.
func (s *SIP) applyEnv(getenv func(string) string) error {
	if v := getenv("STACKBONE_SIP_ADDR"); v != "" {
		if err := validHostPort(v, true); err != nil {
			return fmt.Errorf("%w: STACKBONE_SIP_ADDR %q: %v", ErrInvalid, v, err)
		}
		s.Addr = v
	}
	if s.Addr == "" {
		s.Addr = DefaultSIPAddr
	}
	for i, t := range s.Trunks.Inbound {
		if t.Password == "" && t.PasswordEnv != "" {
			s.Trunks.Inbound[i].Password = getenv(t.PasswordEnv)
		}
	}
	for i, t := range s.Trunks.Outbound {
		if t.Password == "" && t.PasswordEnv != "" {
			s.Trunks.Outbound[i].Password = getenv(t.PasswordEnv)
		}
	}
	return nil
}
