package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stackbone/box/config"
)

func TestRoomsValidation(t *testing.T) {
	good := `rooms:
  livekit: {url: "wss://lk.example.net", publicURL: "wss://media.example.net", apiKey: APIkey, apiSecretEnv: LK_SECRET}
  embedded: {interfaces: [eth0], ips: [10.0.0.5, "fd00::5"], publicIPs: [203.0.113.7, "2001:db8::7"], udpPort: 7882}
  maxRooms: 10
  joinTimeout: 90s
  mediaTimeout: 20s
`
	c, err := config.Parse([]byte(good))
	if err != nil {
		t.Fatalf("good config refused: %v", err)
	}
	if !c.Rooms.LiveKit.Configured() || c.Rooms.JoinTimeout != 90*time.Second || c.Rooms.Embedded.UDPPort != 7882 ||
		len(c.Rooms.Embedded.IPs) != 2 || c.Rooms.Embedded.PublicIPs[0] != "203.0.113.7" || c.Rooms.Embedded.Interfaces[0] != "eth0" {
		t.Fatalf("rooms: %+v", c.Rooms)
	}
	if err := c.ApplyEnv(func(k string) string {
		if k == "LK_SECRET" {
			return "s3cret"
		}
		return ""
	}); err != nil || c.Rooms.LiveKit.APISecret != "s3cret" {
		t.Fatalf("secret from the environment: %q %v", c.Rooms.LiveKit.APISecret, err)
	}
	// Nothing configured: embedded rooms with the defaults.
	empty, err := config.Parse([]byte("agents: {}\n"))
	if err != nil || empty.Rooms.LiveKit.Configured() {
		t.Fatalf("empty config: %+v %v", empty.Rooms, err)
	}
	for name, y := range map[string]string{
		"bad scheme":         "rooms: {livekit: {url: \"ftp://x\", apiKey: k, apiSecret: s}}\n",
		"no host":            "rooms: {livekit: {url: \"ws://\", apiKey: k, apiSecret: s}}\n",
		"no key":             "rooms: {livekit: {url: \"ws://127.0.0.1:7880\", apiSecret: s}}\n",
		"no secret":          "rooms: {livekit: {url: \"ws://127.0.0.1:7880\", apiKey: k}}\n",
		"key without url":    "rooms: {livekit: {apiKey: k, apiSecret: s}}\n",
		"bad public url":     "rooms: {livekit: {url: \"ws://127.0.0.1:7880\", publicURL: \"nope\", apiKey: k, apiSecret: s}}\n",
		"ip not an IP":       "rooms: {embedded: {ips: [localhost]}}\n",
		"bad public ip":      "rooms: {embedded: {publicIPs: [box.example.net]}}\n",
		"bad public pair":    "rooms: {embedded: {publicIPs: [203.0.113.7/eth0]}}\n",
		"two public v4":      "rooms: {embedded: {publicIPs: [203.0.113.7, 203.0.113.8]}}\n",
		"bad interface":      "rooms: {embedded: {interfaces: [\"eth0 eth1\"]}}\n",
		"old host key":       "rooms: {embedded: {host: 127.0.0.1}}\n",
		"low udp port":       "rooms: {embedded: {udpPort: 80}}\n",
		"negative max rooms": "rooms: {maxRooms: -1}\n",
		"short join timeout": "rooms: {joinTimeout: 1s}\n",
		"unitless timeout":   "rooms: {mediaTimeout: 30}\n",
		"unknown key":        "rooms: {livekit: {url: \"ws://127.0.0.1:7880\", apiKey: k, apiSecret: s, token: x}}\n",
	} {
		_, err := config.Parse([]byte(y))
		if !errors.Is(err, config.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
			continue
		}
		if name != "unknown key" && name != "old host key" && name != "unitless timeout" && !strings.Contains(err.Error(), "rooms:") {
			t.Errorf("%s: error does not name the section: %v", name, err)
		}
	}
}
