// Package opus encodes and decodes Opus audio: the mono audio of LiveKit
// rooms and the two-channel audio of call recordings, 20 ms frames of
// 16-bit PCM at the call's sample rate (8, 12, 16, 24 or 48 kHz; libopus
// resamples inside the codec).
//
// The codec is cgo over libopus (gopkg.in/hraban/opus.v2) and is compiled
// only with the build tag libopus (Debian: libopus-dev, libopusfile-dev,
// pkg-config), so the rest of the box builds with a plain `go build`.
// Without the tag, New returns ErrUnavailable.
//
//	codec, err := opus.New(16000)       // ErrUnavailable without -tags libopus
//	pkt, err := codec.Encode(pcm)        // 320 samples in, one Opus packet out
//	pcm, err = codec.Decode(pkt)         // one packet in, PCM at 16 kHz out
package opus

import "errors"

// ErrUnavailable: the box was built without the libopus tag.
var ErrUnavailable = errors.New("opus: this build has no Opus codec: build with -tags libopus (needs libopus-dev, libopusfile-dev, pkg-config)")

// Codec is one call's Opus encoder and decoder; it is not safe for
// concurrent use of the same direction (one goroutine encodes, one decodes).
type Codec interface {
	// Encode compresses one 20 ms frame.
	Encode(pcm []int16) ([]byte, error)
	// Decode expands one packet to PCM at the codec's rate.
	Decode(packet []byte) ([]int16, error)
}

// Available reports whether this build has the codec.
func Available() bool { return available }
