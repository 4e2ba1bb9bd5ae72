package voice

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/provider"
)

// Resampling audio that arrives in pieces gives what resampling the whole
// gives, however the pieces fall.
func TestStreamResamplerMatchesResample(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rates := range [][2]int{{24000, 8000}, {24000, 16000}, {24000, 48000}, {8000, 8000}} {
		for range 20 {
			in := make([]int16, rng.IntN(5000))
			for i := range in {
				in[i] = int16(rng.IntN(20000) - 10000)
			}
			want := Resample(in, rates[0], rates[1])
			rs := newStreamResampler(rates[0], rates[1])
			var got []int16
			for rest := in; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(700))
				got = append(got, rs.push(rest[:n])...)
				rest = rest[n:]
			}
			got = append(got, rs.flush()...)
			if !slices.Equal(got, want) {
				t.Fatalf("%v: streamed %d samples differ from the whole's %d", rates, len(got), len(want))
			}
		}
	}
}

// BenchmarkStreamResampler is the provider's 24 kHz speech brought to a
// phone call's 8 kHz as it arrives, per second of speech.
func BenchmarkStreamResampler(b *testing.B) {
	in := speechFrames(1000, 24000)
	b.ReportAllocs()
	for b.Loop() {
		rs := newStreamResampler(24000, 8000)
		for _, f := range in[:50] {
			_ = rs.push(f)
		}
		_ = rs.flush()
	}
}

// A streamed segment plays its audio as it arrives, plays silence (not
// speech) while the stream is behind, counts as heard only once sealed and
// played through, and a stream that failed is never heard.
func TestStreamedSegmentIsHeardOnlyOnceSealedAndPlayed(t *testing.T) {
	p := newPlayout(160)
	woken := 0
	p.wake = func() { woken++ }
	w := &countingWriter{}
	p.Start(1)
	s := p.Stream(1, Segment{Text: "Hello there."})
	if woken != 0 {
		t.Fatal("woken before any audio arrived")
	}
	p.Append(s, make([]int16, 200))
	if woken != 1 {
		t.Fatal("the first audio of a talkspurt did not wake the pacer")
	}
	for i, want := range []bool{true, true, false} {
		if speech, _, _ := p.Tick(w); speech != want {
			t.Fatalf("frame %d: speech %v, want %v", i, speech, want)
		}
	}
	if h := p.heard(true); h != "" {
		t.Fatalf("heard %q of an open segment", h)
	}
	p.Append(s, make([]int16, 100))
	p.Seal(s, false)
	f := p.Stream(1, Segment{Text: "Cut short."})
	p.Append(f, make([]int16, 320))
	p.Seal(f, true)
	p.Close(1)
	finished := false
	for range 10 {
		if _, finished, _ = p.Tick(w); finished {
			break
		}
	}
	if !finished {
		t.Fatal("the turn did not finish")
	}
	if h := p.Finish(); h != "Hello there." {
		t.Fatalf("heard %q, want only the sealed sentence", h)
	}
}

// A long first sentence breaks at a clause boundary; later ones do not.
func TestSplitterBreaksALongFirstSentenceAtAClause(t *testing.T) {
	var s sentenceSplitter
	got := s.Feed("Thank you for calling the front desk of the hotel, I can certainly help you with ")
	if len(got) != 1 || got[0] != "Thank you for calling the front desk of the hotel," {
		t.Fatalf("first pieces %q", got)
	}
	got = s.Feed("that booking, and everything else you may need for your stay with us today, really. Bye")
	if len(got) != 1 || got[0] != "I can certainly help you with that booking, and everything else you may need for your stay with us today, really." {
		t.Fatalf("next pieces %q", got)
	}
	if rest := s.Flush(); rest != "Bye" {
		t.Fatalf("rest %q", rest)
	}
}

// Speech streamed in pieces that split samples (odd byte counts) is read
// and resampled exactly as the whole response would be.
func TestSynthesizeStreamSplitSamples(t *testing.T) {
	whole := make([]int16, 9000)
	for i := range whole {
		whole[i] = int16((i*37)%20000 - 10000)
	}
	raw := make([]byte, 2*len(whole))
	for i, v := range whole {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(v))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/pcm")
		rest := raw
		for k := 0; len(rest) > 0; k++ {
			n := min(len(rest), []int{1, 3, 7, 1001, 2048, 513}[k%6])
			w.Write(rest[:n])
			w.(http.Flusher).Flush()
			rest = rest[n:]
		}
	}))
	defer srv.Close()
	reg := provider.NewRegistry(map[string]config.Provider{"openai": {BaseURL: srv.URL}}, nil)
	m, err := reg.Resolve("openai/tts-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []int{8000, 16000, providerTTSRate} {
		var got []int16
		if err := (ProviderTTS{Model: m}).SynthesizeStream(context.Background(), "hello", rate, func(pcm []int16) {
			got = append(got, pcm...)
		}); err != nil {
			t.Fatal(err)
		}
		if want := Resample(whole, providerTTSRate, rate); !slices.Equal(got, want) {
			t.Fatalf("at %d Hz: %d samples streamed differ from the whole's %d", rate, len(got), len(want))
		}
	}
}
