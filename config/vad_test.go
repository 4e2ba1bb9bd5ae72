package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stackbone/box/config"
)

func TestVoiceVAD(t *testing.T) {
	for _, vad := range []string{"energy", "silero"} {
		c, err := config.Parse([]byte("agents:\n  support:\n    voice: {vad: " + vad + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Agents["support"].Voice.VAD; got != vad {
			t.Fatalf("parsed as %q, want %q", got, vad)
		}
	}
	_, err := config.Parse([]byte("agents:\n  support:\n    voice: {vad: webrtc}\n"))
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "voice.vad") {
		t.Fatalf("an unknown detector: %v", err)
	}
}
