package rooms_test

import (
	"testing"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/rooms"
)

// The embedded peer, end to end in headless Chromium: with nothing but the
// box running, a browser call is heard, answered aloud and remembered.
func TestBrowserCallEmbedded(t *testing.T) {
	t.Parallel()
	b := newBox(t, config.Rooms{})
	if b.rooms.Backend() != rooms.BackendEmbedded {
		t.Fatalf("backend %s, want embedded when LiveKit is not configured", b.rooms.Backend())
	}
	browserCall(t, b, rooms.BackendEmbedded, 1.5)
}
