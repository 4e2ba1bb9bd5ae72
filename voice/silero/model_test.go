package silero

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// reference is testdata/reference.json, written by scripts/silero/convert
// with the ONNX model run by onnxruntime.
type reference struct {
	Clips []struct {
		File   string    `json:"file"`
		Rate   int       `json:"rate"`
		Window int       `json:"window"`
		Probs  []float32 `json:"probs"`
	} `json:"clips"`
}

// readWAV reads a 16-bit mono PCM WAV as samples in [-1, 1), as the
// conversion script does.
func readWAV(t testing.TB, path string) (rate int, samples []float32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatalf("%s: not a WAV", path)
	}
	for p := 12; p+8 <= len(b); {
		id, n := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:]))
		switch id {
		case "fmt ":
			if binary.LittleEndian.Uint16(b[p+8:]) != 1 || binary.LittleEndian.Uint16(b[p+10:]) != 1 || binary.LittleEndian.Uint16(b[p+22:]) != 16 {
				t.Fatalf("%s: not 16-bit mono PCM", path)
			}
			rate = int(binary.LittleEndian.Uint32(b[p+12:]))
		case "data":
			samples = make([]float32, n/2)
			for i := range samples {
				samples[i] = float32(int16(binary.LittleEndian.Uint16(b[p+8+2*i:]))) / 32768
			}
			return rate, samples
		}
		p += 8 + n + n&1
	}
	t.Fatalf("%s: no data", path)
	return 0, nil
}

// TestMatchesONNX: the Go inference gives the ONNX model's probability on
// every window of the recorded clips (speech with pauses, clean and on a
// noisy line, at both rates) within 1e-4.
func TestMatchesONNX(t *testing.T) {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	rates := map[int]bool{}
	for _, clip := range ref.Clips {
		t.Run(clip.File, func(t *testing.T) {
			rate, samples := readWAV(t, filepath.Join("testdata", clip.File))
			m, err := New(rate)
			if err != nil {
				t.Fatal(err)
			}
			if rate != clip.Rate || m.WindowSize() != clip.Window || m.SampleRate() != rate {
				t.Fatalf("rate %d window %d, reference says %d and %d", rate, m.WindowSize(), clip.Rate, clip.Window)
			}
			if want := len(samples) / clip.Window; len(clip.Probs) != want || want == 0 {
				t.Fatalf("%d reference windows for %d", len(clip.Probs), want)
			}
			var worst float64
			speech := 0
			for i, want := range clip.Probs {
				got := m.Prob(samples[i*clip.Window : (i+1)*clip.Window])
				d := math.Abs(float64(got - want))
				worst = max(worst, d)
				if d > 1e-4 {
					t.Errorf("window %d: %.6f, the ONNX model %.6f", i, got, want)
				}
				if want > 0.5 {
					speech++
				}
			}
			// A clip whose reference never says speech would test little.
			if speech == 0 || speech == len(clip.Probs) {
				t.Fatalf("%d of %d reference windows are speech", speech, len(clip.Probs))
			}
			rates[rate] = true
			t.Logf("%d windows, largest difference %.2g", len(clip.Probs), worst)
		})
	}
	if !rates[8000] || !rates[16000] {
		t.Fatalf("reference covers rates %v, want 8000 and 16000", rates)
	}
}

// TestReset: after Reset a model answers as a new one.
func TestReset(t *testing.T) {
	_, samples := readWAV(t, "testdata/noisy8k.wav")
	m, err := New(8000)
	if err != nil {
		t.Fatal(err)
	}
	w := m.WindowSize()
	run := func() []float32 {
		var out []float32
		for i := 0; (i+1)*w <= len(samples) && i < 60; i++ {
			out = append(out, m.Prob(samples[i*w:(i+1)*w]))
		}
		return out
	}
	first := run()
	m.Reset()
	again := run()
	for i := range first {
		if first[i] != again[i] {
			t.Fatalf("window %d: %v after Reset, %v at first", i, again[i], first[i])
		}
	}
}

func TestRates(t *testing.T) {
	for _, rate := range []int{0, 11025, 24000, 48000} {
		if _, err := New(rate); !errors.Is(err, ErrRate) {
			t.Errorf("New(%d): %v, want ErrRate", rate, err)
		}
	}
	if _, err := decode([]byte("SILERO5\x00\x01\x00\x00\x00")); !errors.Is(err, ErrWeights) {
		t.Errorf("a truncated file: %v, want ErrWeights", err)
	}
}

// TestNoAllocation: a window costs no memory; a call runs 25 or more of
// them a second.
func TestNoAllocation(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		m, err := New(rate)
		if err != nil {
			t.Fatal(err)
		}
		w := make([]float32, m.WindowSize())
		if n := testing.AllocsPerRun(20, func() { m.Prob(w) }); n != 0 {
			t.Errorf("%d Hz: %v allocations per window", rate, n)
		}
	}
}

func benchmarkRate(b *testing.B, rate int) {
	_, samples := readWAV(b, filepath.Join("testdata", map[int]string{8000: "noisy8k.wav", 16000: "noisy16k.wav"}[rate]))
	m, err := New(rate)
	if err != nil {
		b.Fatal(err)
	}
	w := m.WindowSize()
	n := len(samples) / w
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for i := 0; b.Loop(); i++ {
		j := i % n
		m.Prob(samples[j*w : (j+1)*w])
	}
	// The process's CPU time too: on a loaded machine the wall clock
	// counts the time other processes had the core.
	cpu := float64(cpuTime(b)-cpu0) / float64(b.N)
	window := time.Duration(w) * time.Second / time.Duration(rate)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/window")
	b.ReportMetric(cpu, "cpu-ns/window")
	b.ReportMetric(cpu*float64(20*time.Millisecond)/float64(window), "cpu-ns/20ms")
	b.ReportMetric(100*cpu/float64(window), "%core")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkSilero8k(b *testing.B)  { benchmarkRate(b, 8000) }
func BenchmarkSilero16k(b *testing.B) { benchmarkRate(b, 16000) }
