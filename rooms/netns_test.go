package rooms_test

import (
	"errors"
	"net/http"
	"os"
	"testing"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/netns"
	"github.com/stackbone/box/rooms"
)

// A browser on another machine: Chromium as it ships (no loopback or mDNS
// flags) runs in a network namespace of its own, joined to the box's by a
// veth pair on a private /24, as a laptop on the box's LAN would be. The
// box gathers its candidates on its end of that link only
// (rooms.embedded.interfaces), so the call connects only if the browser's
// host candidates and the box's meet across the link; the whole scenario
// (heard, answered aloud, remembered) then runs over it.
//
// The page reaches the browser on the namespace's own loopback (a secure
// context, as https would be for a box on a server), so no flag has to
// make a plain-http origin one.
func TestBrowserCallFromAnotherMachine(t *testing.T) {
	t.Parallel()
	need(t, "chromium", "chromium")
	ns, err := netns.Create()
	if err != nil {
		if errors.Is(err, netns.ErrUnavailable) && os.Getenv("CI") != "true" {
			t.Skipf("a browser on another machine needs a network namespace: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	b := newBox(t, config.Rooms{Embedded: config.EmbeddedRooms{Interfaces: []string{ns.HostIf}}})
	ln, err := ns.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: b.handler}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	b.ns, b.pageURL = ns, "http://"+ln.Addr().String()
	t.Logf("box on %s (%s), browser on %s (%s) in namespace %s", ns.HostIP, ns.HostIf, ns.PeerIP, ns.PeerIf, ns.Name)
	browserCall(t, b, rooms.BackendEmbedded, 1.5)
}
