package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"time"
)

// Defaults of the rooms section, applied by package rooms where a field is 0.
const (
	// DefaultRoomsHost is where the embedded peer gathers and advertises
	// its ICE candidates.
	DefaultRoomsHost         = "127.0.0.1"
	DefaultRoomsMaxRooms     = 50
	DefaultRoomsJoinTimeout  = time.Minute
	DefaultRoomsMediaTimeout = 30 * time.Second
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
	// MaxRooms is how many rooms are open at once (default 50); the voice
	// call limit applies as well.
	MaxRooms int `yaml:"maxRooms"`
	// JoinTimeout ends a room the browser did not join in time (default 1m).
	JoinTimeout time.Duration `yaml:"joinTimeout"`
	// MediaTimeout ends a call when no caller audio arrived for this long
	// (default 30s).
	MediaTimeout time.Duration `yaml:"mediaTimeout"`
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
	APIKey       string `yaml:"apiKey"`
	APISecret    string `yaml:"apiSecret"`
	APISecretEnv string `yaml:"apiSecretEnv"`
}

// Configured reports whether rooms go through LiveKit.
func (l LiveKit) Configured() bool { return l.URL != "" }

// EmbeddedRooms tunes the embedded WebRTC peer.
type EmbeddedRooms struct {
	// Host is the IP address the peer's ICE candidates use (default
	// 127.0.0.1: a browser on the same machine).
	Host string `yaml:"host"`
	// UDPPort carries every embedded room's media on one UDP port when set;
	// 0 uses a free port per room.
	UDPPort int `yaml:"udpPort"`
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
	if h := r.Embedded.Host; h != "" {
		if _, err := netip.ParseAddr(h); err != nil {
			add("embedded.host %q must be an IP address", h)
		}
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
	return problems
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
