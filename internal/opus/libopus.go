//go:build libopus

package opus

import (
	"fmt"

	hraban "gopkg.in/hraban/opus.v2"
)

const available = true

type codec struct {
	rate int
	ch   int // channels
	enc  *hraban.Encoder
	dec  *hraban.Decoder
	out  []byte
	pcm  []int16
}

// New returns a mono codec at rate.
func New(rate int) (Codec, error) {
	enc, err := hraban.NewEncoder(rate, 1, hraban.AppVoIP)
	if err != nil {
		return nil, fmt.Errorf("opus: encoder: %w", err)
	}
	dec, err := hraban.NewDecoder(rate, 1)
	if err != nil {
		return nil, fmt.Errorf("opus: decoder: %w", err)
	}
	// 120 ms is the longest Opus packet.
	return &codec{rate: rate, ch: 1, enc: enc, dec: dec, out: make([]byte, 1500), pcm: make([]int16, rate*120/1000)}, nil
}

func (c *codec) Encode(pcm []int16) ([]byte, error) {
	n, err := c.enc.Encode(pcm, c.out)
	if err != nil {
		return nil, fmt.Errorf("opus: encode: %w", err)
	}
	return append([]byte(nil), c.out[:n]...), nil
}

func (c *codec) Decode(packet []byte) ([]int16, error) {
	n, err := c.dec.Decode(packet, c.pcm)
	if err != nil {
		return nil, fmt.Errorf("opus: decode: %w", err)
	}
	return append([]int16(nil), c.pcm[:n*c.ch]...), nil
}

// NewStereo returns a two-channel codec at rate: Encode takes and Decode
// returns interleaved samples (left, right), 20 ms of each channel.
func NewStereo(rate int) (Codec, error) {
	enc, err := hraban.NewEncoder(rate, 2, hraban.AppVoIP)
	if err != nil {
		return nil, fmt.Errorf("opus: encoder: %w", err)
	}
	// Recordings of phone speech: complexity 5 costs two thirds of the
	// processor of the default (10) a frame and keeps the two channels
	// apart (lower ones let one speaker's voice bleed into the other's
	// channel).
	if err := enc.SetComplexity(5); err != nil {
		return nil, fmt.Errorf("opus: encoder: %w", err)
	}
	dec, err := hraban.NewDecoder(rate, 2)
	if err != nil {
		return nil, fmt.Errorf("opus: decoder: %w", err)
	}
	return &codec{rate: rate, ch: 2, enc: enc, dec: dec, out: make([]byte, 4000), pcm: make([]int16, 2*rate*120/1000)}, nil
}
