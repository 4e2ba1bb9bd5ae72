package companding

import (
	"math"
	"testing"

	"github.com/zaf/g711"
)

// Every sample value encodes as the reference encoders do, in order.
func TestTablesMatchTheEncoders(t *testing.T) {
	pcm := make([]int16, 0, 65536)
	for i := range 65536 {
		pcm = append(pcm, int16(i-32768))
	}
	u, a := AppendUlaw(nil, pcm), AppendAlaw([]byte{0xff}, pcm)
	if len(u) != 65536 || len(a) != 65537 || a[0] != 0xff {
		t.Fatalf("lengths %d and %d", len(u), len(a))
	}
	for i, v := range pcm {
		if u[i] != g711.EncodeUlawFrame(v) || a[i+1] != g711.EncodeAlawFrame(v) {
			t.Fatalf("sample %d: µ-law %#x want %#x, A-law %#x want %#x", v, u[i], g711.EncodeUlawFrame(v), a[i+1], g711.EncodeAlawFrame(v))
		}
	}
}

// Every byte decodes as the reference decoders do, in order, after what
// was there.
func TestDecodingMatchesTheDecoders(t *testing.T) {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	u, a := AppendFromUlaw(nil, b), AppendFromAlaw([]int16{7}, b)
	if len(u) != 256 || len(a) != 257 || a[0] != 7 {
		t.Fatalf("lengths %d and %d", len(u), len(a))
	}
	for i, v := range b {
		if u[i] != g711.DecodeUlawFrame(v) || a[i+1] != g711.DecodeAlawFrame(v) {
			t.Fatalf("byte %#x: µ-law %d want %d, A-law %d want %d", v, u[i], g711.DecodeUlawFrame(v), a[i+1], g711.DecodeAlawFrame(v))
		}
	}
}

func frame() []int16 {
	p := make([]int16, 160)
	for i := range p {
		p[i] = int16(9000 * math.Sin(2*math.Pi*300*float64(i)/8000))
	}
	return p
}

// BenchmarkUlawFrame: one 20 ms frame at 8 kHz by table; .../reference by
// the per-sample encoder.
func BenchmarkUlawFrame(b *testing.B) {
	pcm, dst := frame(), make([]byte, 0, 160)
	b.Run("table", func(b *testing.B) {
		for range b.N {
			dst = AppendUlaw(dst[:0], pcm)
		}
	})
	b.Run("reference", func(b *testing.B) {
		for range b.N {
			dst = dst[:0]
			for _, v := range pcm {
				dst = append(dst, g711.EncodeUlawFrame(v))
			}
		}
	})
}

// BenchmarkFromUlawFrame: one 20 ms packet at 8 kHz decoded at once;
// .../reference a sample at a time.
func BenchmarkFromUlawFrame(b *testing.B) {
	enc, dst := AppendUlaw(nil, frame()), make([]int16, 0, 160)
	b.Run("table", func(b *testing.B) {
		for range b.N {
			dst = AppendFromUlaw(dst[:0], enc)
		}
	})
	b.Run("reference", func(b *testing.B) {
		for range b.N {
			dst = dst[:0]
			for _, v := range enc {
				dst = append(dst, g711.DecodeUlawFrame(v))
			}
		}
	})
}
