package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Defaults of the rooms section, applied by package rooms where a field is 0.
const (
	DefaultRoomsMaxRooms     = 50
	DefaultRoomsJoinTimeout  = time.Minute
	DefaultRoomsMediaTimeout = 30 * time.Second
	// DefaultRoomsMaxCallDuration is a browser call's longest length.
	DefaultRoomsMaxCallDuration = time.Hour
)

// Rooms holds browser test calls (package rooms): POST /api/voice/rooms.
// With livekit.url set the media goes through a LiveKit server; otherwise
// the box itself is the browser's WebRTC peer (embedded), so `stackbone
// dev` offers browser calls with nothing else running.
type Rooms struct {
	// LiveKit is the LiveKit server that carries rooms, if any.
	LiveKit LiveKit `yaml:"livekit"`
	// Embedded tunes the box's own WebRTC peer, used when LiveKit is not
	// configured.
	Embedded EmbeddedRooms `yaml:"embedded"`
	// MaxRooms is how many rooms are open at once (default
	// DefaultRoomsMaxRooms); the voice call limit applies as well.
	MaxRooms int `yaml:"maxRooms"`
	// JoinTimeout ends a room the browser did not join in time (default
	// DefaultRoomsJoinTimeout).
	JoinTimeout time.Duration `yaml:"joinTimeout"`
	// MediaTimeout ends a call when no caller audio arrived for this long
	// (default DefaultRoomsMediaTimeout).
	MediaTimeout time.Duration `yaml:"mediaTimeout"`
	// MaxCallDuration ends a browser call that lasts longer (default
	// DefaultRoomsMaxCallDuration; phone calls have sip.maxCallDuration).
	MaxCallDuration time.Duration `yaml:"maxCallDuration"`
}

// LiveKit is a LiveKit server (self-hosted or cloud).
type LiveKit struct {
	// URL is where the box reaches the server: ws://, wss://, http:// or
	// https:// with a host. Empty: no LiveKit, rooms are embedded.
	URL string `yaml:"url"`
	// PublicURL is what browsers connect to, when it differs from URL.
	PublicURL string `yaml:"publicURL"`
	// APIKey and APISecret (or APISecretEnv, an environment variable) sign
	// the access tokens and the room service calls.
	APIKey string `yaml:"apiKey"`
	// APISecret is the key's secret; prefer APISecretEnv in files.
	APISecret string `yaml:"apiSecret"`
	// APISecretEnv names the environment variable holding the secret.
	APISecretEnv string `yaml:"apiSecretEnv"`
}

// Configured reports whether rooms go through LiveKit.
func (l LiveKit) Configured() bool { return l.URL != "" }

// EmbeddedRooms tunes the embedded WebRTC peer: where it gathers its ICE
// candidates and which address it tells the browser to use.
//
// A browser as it ships gathers no loopback candidates and hides its own
// host addresses behind mDNS names (`….local`), so by default the peer
// gathers on every address of every interface that is up (loopback as
// well, for callers on this machine that do use it) and resolves the
// browser's mDNS names. A browser on the same machine then meets the box on
// the machine's own address; a browser elsewhere on the network on the
// address of the interface it reaches.
type EmbeddedRooms struct {
	// Interfaces names the network interfaces whose addresses carry media
	// (eth0, ens5); empty: every interface that is up.
	Interfaces []string `yaml:"interfaces"`
	// IPs narrows the candidates to these local addresses; empty: every
	// address of the interfaces above. [127.0.0.1] keeps calls on this
	// machine, for browsers started with a loopback flag and Go callers.
	IPs []string `yaml:"ips"`
	// PublicIPs is the address browsers must use when the box sits behind
	// a one-to-one NAT (a cloud server's public IP in front of its private
	// one): the peer advertises it in place of its local addresses. One
	// address per family (an IPv4 and an IPv6), or "public/local" pairs to
	// map each local address. It needs the media to reach the box on the
	// same port, so it is usually set with UDPPort and that port opened.
	PublicIPs []string `yaml:"publicIPs"`
	// UDPPort carries every embedded room's media on one UDP port (on each
	// address) when set; 0 uses a free port per room.
	UDPPort int `yaml:"udpPort"`
	// NoMDNS stops the peer from resolving the browser's mDNS host
	// candidates (it then sends no multicast queries); a browser that hides
	// its addresses can then only connect through a TURN relay or its
	// other candidates.
	NoMDNS bool `yaml:"noMDNS"`
}

func (r Rooms) validate() []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, "rooms: "+fmt.Sprintf(format, args...)) }
	lk := r.LiveKit
	if lk.URL != "" {
		if err := validServerURL(lk.URL); err != nil {
			add("livekit.url %q: %v", lk.URL, err)
		}
		if lk.APIKey == "" {
			add("livekit.url needs livekit.apiKey")
		}
		if lk.APISecret == "" && lk.APISecretEnv == "" {
			add("livekit.url needs livekit.apiSecret or livekit.apiSecretEnv")
		}
	} else if lk.APIKey != "" || lk.APISecret != "" || lk.APISecretEnv != "" || lk.PublicURL != "" {
		add("livekit settings need livekit.url")
	}
	if lk.PublicURL != "" {
		if err := validServerURL(lk.PublicURL); err != nil {
			add("livekit.publicURL %q: %v", lk.PublicURL, err)
		}
	}
	for _, ip := range r.Embedded.IPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			add("embedded.ips: %q must be an IP address", ip)
		}
	}
	for _, name := range r.Embedded.Interfaces {
		if name == "" || strings.ContainsAny(name, " /\x00") || len(name) > 15 {
			add("embedded.interfaces: %q is not an interface name", name)
		}
	}
	var v4, v6 int
	for _, p := range r.Embedded.PublicIPs {
		pub, local, pair := strings.Cut(p, "/")
		a, err := netip.ParseAddr(pub)
		if err != nil || (pair && !validAddr(local)) {
			add("embedded.publicIPs: %q must be an IP address or public/local addresses", p)
			continue
		}
		if !pair && a.Is4() {
			v4++
		} else if !pair {
			v6++
		}
	}
	if v4 > 1 || v6 > 1 {
		add("embedded.publicIPs: one address per family, or public/local pairs")
	}
	if p := r.Embedded.UDPPort; p != 0 && (p < 1024 || p > 65535) {
		add("embedded.udpPort must be 0 or in 1024-65535")
	}
	if r.MaxRooms < 0 {
		add("maxRooms must not be negative")
	}
	if r.JoinTimeout != 0 && r.JoinTimeout < 5*time.Second {
		add("joinTimeout must be at least 5s (write units: 1m, 90s)")
	}
	if r.MediaTimeout != 0 && r.MediaTimeout < time.Second {
		add("mediaTimeout must be at least 1s (write units: 30s)")
	}
	if r.MaxCallDuration != 0 && r.MaxCallDuration < 10*time.Second {
		add("maxCallDuration must be at least 10s (write units: 1h, 90m)")
	}
	return problems
}

func validAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func validServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("must be a URL with a host")
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
		return nil
	}
	return fmt.Errorf("scheme must be ws, wss, http or https")
}

// applyEnv resolves the LiveKit secret from its variable.
func (r *Rooms) applyEnv(getenv func(string) string) {
	if r.LiveKit.APISecret == "" && r.LiveKit.APISecretEnv != "" {
		r.LiveKit.APISecret = getenv(r.LiveKit.APISecretEnv)
	}
}
