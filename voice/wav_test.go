package voice

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// The WAV an utterance is sent as: the RIFF header of 16-bit mono PCM at
// the call's rate and the samples little-endian, field by field as
// encoding/binary writes them.
func TestEncodeWAV(t *testing.T) {
	pcm := make([]int16, 1601)
	for i := range pcm {
		pcm[i] = int16(12000 * math.Sin(float64(i)/7))
	}
	pcm[0], pcm[1] = math.MaxInt16, math.MinInt16
	for _, rate := range []int{8000, 16000, 48000} {
		var want bytes.Buffer
		data := uint32(len(pcm) * 2)
		want.WriteString("RIFF")
		for _, v := range []any{36 + data, [8]byte{'W', 'A', 'V', 'E', 'f', 'm', 't', ' '}, uint32(16), uint16(1), uint16(1),
			uint32(rate), uint32(rate * 2), uint16(2), uint16(16), [4]byte{'d', 'a', 't', 'a'}, data, pcm} {
			if err := binary.Write(&want, binary.LittleEndian, v); err != nil {
				t.Fatal(err)
			}
		}
		if got := encodeWAV(pcm, rate); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("rate %d: %d bytes, want %d; header % x, want % x", rate, len(got), want.Len(), got[:min(44, len(got))], want.Bytes()[:44])
		}
		// Into a reused buffer that held a longer utterance: the same
		// bytes, in its memory.
		used := bytes.Repeat([]byte{0xa5}, 2*want.Len())
		if got := appendWAV(used[:7], pcm, rate); !bytes.Equal(got, want.Bytes()) || &got[0] != &used[0] {
			t.Fatalf("rate %d, reused buffer: %d bytes, want %d, same memory %v", rate, len(got), want.Len(), &got[0] == &used[0])
		}
	}
	if got := encodeWAV(nil, 8000); len(got) != 44 || binary.LittleEndian.Uint32(got[40:]) != 0 {
		t.Fatalf("empty: % x", got)
	}
}

// go test -run '^$' -bench EncodeWAV ./voice: a 1.2 s utterance at 16 kHz.
func BenchmarkEncodeWAV(b *testing.B) {
	pcm := make([]int16, 16000*12/10)
	b.ReportAllocs()
	b.SetBytes(int64(len(pcm) * 2))
	for b.Loop() {
		encodeWAV(pcm, 16000)
	}
}
