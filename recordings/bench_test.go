package recordings

import (
	"math"
	"path/filepath"
	"testing"
)

// BenchmarkTakeFrame is a recorded call's cost on its 20 ms schedule: the
// caller's frame and the agent's handed to the take (the encoder runs on
// its own goroutine: BenchmarkEncodeFrame).
func BenchmarkTakeFrame(b *testing.B) {
	s := &Service{cfg: Config{SpoolDir: b.TempDir()}}
	t := &Take{s: s, n: 160, queue: make(chan []int16, queueFrames)}
	go func() {
		for range t.queue {
		}
	}()
	f := make([]int16, 160)
	b.ReportAllocs()
	for b.Loop() {
		t.Caller(f)
		t.Agent(f)
	}
	close(t.queue)
}

// BenchmarkEncodeFrame is one 20 ms two-channel frame written to the spool
// file (Opus with libopus, else WAV).
func BenchmarkEncodeFrame(b *testing.B) {
	f, format, err := createFile(filepath.Join(b.TempDir(), "bench.part"), 8000)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("format %s", format)
	st := make([]int16, 320)
	for i := range 160 {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/8000))
		st[2*i], st[2*i+1] = v, v/2
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := f.write(st); err != nil {
			b.Fatal(err)
		}
	}
	_ = f.close()
}
