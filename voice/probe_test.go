package voice

import (
	"encoding/base64"
	"testing"

	"github.com/zaf/g711"
)

// BenchmarkMachineProbe is the machine probe the benchmark page names
// each figure's machine by: a 20 ms 8 kHz frame encoded to µ-law sample
// by sample and framed as a Realtime input_audio_buffer.append message,
// the work LiveFrame's realtime-pcmu did until the box encoded by table
// (6 December 2026). It is frozen so figures taken before and after a
// change to the box compare: it uses none of the box's code, and must
// not change.
func BenchmarkMachineProbe(b *testing.B) {
	frame := speechFrames(20, 8000)[0]
	b.ReportAllocs()
	var out []byte
	for b.Loop() {
		raw := make([]byte, len(frame))
		for i, v := range frame {
			raw[i] = g711.EncodeUlawFrame(v)
		}
		const head, tail = `{"type":"input_audio_buffer.append","audio":"`, `"}`
		m := make([]byte, len(head)+base64.StdEncoding.EncodedLen(len(raw))+len(tail))
		n := copy(m, head)
		base64.StdEncoding.Encode(m[n:], raw)
		copy(m[n+base64.StdEncoding.EncodedLen(len(raw)):], tail)
		out = m
	}
	_ = out
}
