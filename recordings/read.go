package recordings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/pion/webrtc/v4/pkg/media/oggreader"

	"github.com/stackbone/box/internal/opus"
)

// ReadChannels reads a recording's file back into its two channels (caller,
// agent) at rate, for tools that look into recordings.
func ReadChannels(data []byte, format string, rate int) (caller, agent []int16, err error) {
	var interleaved []int16
	switch format {
	case FormatWAV:
		if len(data) < 44 || string(data[0:4]) != "RIFF" || binary.LittleEndian.Uint16(data[22:]) != 2 {
			return nil, nil, errors.New("recordings: not a two-channel WAV file")
		}
		pcm := data[44:]
		interleaved = make([]int16, len(pcm)/2)
		for i := range interleaved {
			interleaved[i] = int16(binary.LittleEndian.Uint16(pcm[2*i:]))
		}
	case FormatOgg:
		if interleaved, err = readOgg(data, rate); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("recordings: unknown format %q", format)
	}
	caller, agent = make([]int16, len(interleaved)/2), make([]int16, len(interleaved)/2)
	for i := range caller {
		caller[i], agent[i] = interleaved[2*i], interleaved[2*i+1]
	}
	return caller, agent, nil
}

// readOgg decodes an Ogg Opus file written by this package: one 20 ms
// packet a page.
func readOgg(data []byte, rate int) ([]int16, error) {
	codec, err := opus.NewStereo(rate)
	if err != nil {
		return nil, err
	}
	r, _, err := oggreader.NewWith(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("recordings: %w", err)
	}
	var out []int16
	for {
		pkt, _, err := r.ParseNextPage()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("recordings: %w", err)
		}
		if len(pkt) == 0 || len(pkt) >= 8 && (string(pkt[:8]) == "OpusHead" || string(pkt[:8]) == "OpusTags") {
			continue
		}
		pcm, err := codec.Decode(pkt)
		if err != nil {
			return nil, err
		}
		out = append(out, pcm...)
	}
}
