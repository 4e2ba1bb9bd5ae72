package rooms_test

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pion/webrtc/v4"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/freeport"
	"github.com/stackbone/box/postgres/pgtest"
	"github.com/stackbone/box/rooms"
)

// The embedded peer, end to end in headless Chromium as it ships (no
// loopback flag, so it offers the machine's own addresses): with nothing
// but the box running, a browser on the same machine is heard, answered
// aloud and remembered.
func TestBrowserCallEmbedded(t *testing.T) {
	t.Parallel()
	b := newBox(t, config.Rooms{})
	if b.rooms.Backend() != rooms.BackendEmbedded {
		t.Fatalf("backend %s, want embedded when LiveKit is not configured", b.rooms.Backend())
	}
	browserCall(t, b, rooms.BackendEmbedded, 1.5)
}

// answerCandidates opens a room on b, offers it a PCMU audio section and
// returns the candidates in the box's answer as "address port type".
func answerCandidates(t *testing.T, b *box) []string {
	t.Helper()
	var room rooms.View
	if st, code := b.do("POST", "/api/voice/rooms", `{"agent":"frontdesk"}`, &room); st != 201 {
		t.Fatalf("open: %d %s", st, code)
	}
	pc, err := webrtc.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio); err != nil {
		t.Fatal(err)
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		SDP string `json:"sdp"`
	}
	if st, code := b.do("POST", room.Join.OfferURL, map[string]string{"type": "offer", "sdp": offer.SDP}, &ans); st != 200 {
		t.Fatalf("offer: %d %s", st, code)
	}
	var addrs []string
	for _, line := range strings.Split(ans.SDP, "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "a=candidate:")); strings.HasPrefix(line, "a=candidate:") && len(f) > 7 {
			// foundation component transport priority address port typ TYPE
			addrs = append(addrs, f[4]+" "+f[5]+" "+f[7])
		}
	}
	return addrs
}

// What the box tells the browser to use: by default every up interface's
// addresses, loopback too (a browser as it ships uses the machine's own
// address); with ips, only those; with publicIPs, the public address in
// place of the local one (a box behind a one-to-one NAT).
func TestEmbeddedCandidates(t *testing.T) {
	t.Parallel()
	nonLoopback := func() []string {
		var out []string
		ifaces, _ := net.Interfaces()
		for _, ifc := range ifaces {
			if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
				continue
			}
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
					out = append(out, n.IP.String())
				}
			}
		}
		return out
	}
	has := func(got []string, addr string) bool {
		for _, g := range got {
			if strings.HasPrefix(g, addr+" ") {
				return true
			}
		}
		return false
	}

	b0 := newBox(t, config.Rooms{})
	// The machine's addresses before and after the answer: another test's
	// network namespace may add a link or take one away meanwhile, and
	// only an address there all along must be in the answer.
	before := nonLoopback()
	def := answerCandidates(t, b0)
	after := nonLoopback()
	if !has(def, "127.0.0.1") {
		t.Errorf("default answer %q: no loopback candidate for callers on this machine", def)
	}
	for _, a := range before {
		if !slices.Contains(after, a) {
			continue
		}
		if !has(def, a) {
			t.Errorf("default answer %q: no candidate on the machine's address %s, which a browser as it ships uses", def, a)
		}
	}

	only := answerCandidates(t, newBox(t, config.Rooms{Embedded: config.EmbeddedRooms{IPs: []string{"127.0.0.1"}}}))
	if len(only) == 0 {
		t.Fatal("ips [127.0.0.1]: no candidates")
	}
	for _, c := range only {
		if !strings.HasPrefix(c, "127.0.0.1 ") {
			t.Errorf("ips [127.0.0.1]: candidate %q", c)
		}
	}

	// Names that match nothing here would leave every call without media:
	// the service refuses to start.
	for _, e := range []config.EmbeddedRooms{{Interfaces: []string{"nosuchif0"}}, {IPs: []string{"192.0.2.254"}}} {
		if _, err := rooms.New(rooms.Config{Manager: b0.calls, Rooms: config.Rooms{Embedded: e}, Logger: pgtest.Logger(t)}); err == nil {
			t.Errorf("rooms started with %+v", e)
		}
	}

	port := freeport.Get(t, freeport.UDP)
	one := answerCandidates(t, newBox(t, config.Rooms{Embedded: config.EmbeddedRooms{IPs: []string{"127.0.0.1"}, UDPPort: port}}))
	if len(one) == 0 {
		t.Fatal("udpPort: no candidates")
	}
	for _, c := range one {
		if c != "127.0.0.1 "+strconv.Itoa(port)+" host" {
			t.Errorf("udpPort %d: candidate %q", port, c)
		}
	}

	pub := answerCandidates(t, newBox(t, config.Rooms{Embedded: config.EmbeddedRooms{IPs: []string{"127.0.0.1"}, PublicIPs: []string{"203.0.113.7"}}}))
	if len(pub) == 0 {
		t.Fatal("publicIPs: no candidates")
	}
	for _, c := range pub {
		if f := strings.Fields(c); f[0] != "203.0.113.7" || f[2] != "host" {
			t.Errorf("publicIPs [203.0.113.7]: candidate %q, want the public address as a host candidate only", c)
		}
	}
}
