package recordings

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4/pkg/media/oggwriter"

	"github.com/stackbone/box/internal/opus"
)

// Formats of a recording's file.
const (
	// FormatOgg is two-channel Opus in Ogg (builds with libopus).
	FormatOgg = "ogg"
	// FormatWAV is two-channel 16-bit PCM (builds without libopus).
	FormatWAV = "wav"
)

// ContentType is the MIME type of a recording of format.
func ContentType(format string) string {
	if format == FormatOgg {
		return "audio/ogg"
	}
	return "audio/wav"
}

// file is a recording being written to its spool file, one 20 ms stereo
// frame at a time.
type file interface {
	write(interleaved []int16) error
	close() error
}

// createFile opens the spool file at path in the best format this build
// has: Opus when it has libopus, else WAV.
func createFile(path string, rate int) (file, string, error) {
	if codec, err := opus.NewStereo(rate); err == nil {
		w, err := oggwriter.New(path, uint32(rate), 2)
		if err != nil {
			return nil, "", fmt.Errorf("recordings: %w", err)
		}
		return &oggFile{w: w, codec: codec, step: uint32(48000 / 50)}, FormatOgg, nil
	} else if !errors.Is(err, opus.ErrUnavailable) {
		return nil, "", err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, "", fmt.Errorf("recordings: %w", err)
	}
	w := &wavFile{f: f, rate: rate}
	if err := w.header(); err != nil {
		f.Close()
		return nil, "", err
	}
	return w, FormatWAV, nil
}

// oggFile writes Opus packets into Ogg pages; the packets are stamped on
// Opus's 48 kHz clock, 20 ms apart.
type oggFile struct {
	w     *oggwriter.OggWriter
	codec opus.Codec
	seq   uint16
	ts    uint32
	step  uint32
}

func (o *oggFile) write(interleaved []int16) error {
	pkt, err := o.codec.Encode(interleaved)
	if err != nil {
		return err
	}
	o.seq++
	o.ts += o.step
	return o.w.WriteRTP(&rtp.Packet{Header: rtp.Header{Version: 2, SequenceNumber: o.seq, Timestamp: o.ts}, Payload: pkt})
}

func (o *oggFile) close() error { return o.w.Close() }

// wavFile writes a RIFF WAVE file whose sizes are filled in on close.
type wavFile struct {
	f    *os.File
	rate int
	data uint32
	buf  []byte
}

func (w *wavFile) header() error {
	h := make([]byte, 44)
	copy(h[0:], "RIFF")
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 2) // channels
	binary.LittleEndian.PutUint32(h[24:], uint32(w.rate))
	binary.LittleEndian.PutUint32(h[28:], uint32(w.rate*4))
	binary.LittleEndian.PutUint16(h[32:], 4)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	_, err := w.f.Write(h)
	return err
}

func (w *wavFile) write(interleaved []int16) error {
	w.buf = w.buf[:0]
	for _, s := range interleaved {
		w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(s))
	}
	n, err := w.f.Write(w.buf)
	w.data += uint32(n)
	return err
}

func (w *wavFile) close() error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], 36+w.data)
	_, err1 := w.f.WriteAt(b[:], 4)
	binary.LittleEndian.PutUint32(b[:], w.data)
	_, err2 := w.f.WriteAt(b[:], 40)
	return errors.Join(err1, err2, w.f.Close())
}
