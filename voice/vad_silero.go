package voice

import (
	"fmt"

	"github.com/stackbone/box/voice/silero"
)

// sileroVoicing counts a frame as speech by the Silero VAD model's
// probability. The model reads 32 ms windows and the calls' frames are
// 20 ms, so frames fill a window and each frame is judged by the last
// window completed (at most 32 ms behind). Rates that are multiples of
// the model's are brought down to it by averaging.
type sileroVoicing struct {
	m           *silero.Model
	decim       int       // input samples per model sample
	sum, summed int       // the average being taken
	win         []float32 // the window being filled
	n           int
	p           float32 // the probability of the last window
	start, end  float32
	// peak gates the model: a frame is speech only within
	// sileroBelowPeakDB of the loudest speech the caller made lately.
	// Babble (other voices on the line, a television) is speech to the
	// model, but quieter than the caller; without the gate it held turns
	// open for good.
	peak float64
	// sinceLoud counts the frames since the last that passed the gate:
	// inside an utterance the model's speech under it still counts for
	// sileroQuietTailFrames (a word's quiet end, espeak's final "s" 27 dB
	// under its vowels), so the gate ends what babble there is at most
	// that much after the caller's last word.
	sinceLoud int
}

// The level gate of the Silero detector: a frame must be at most
// sileroBelowPeakDB under the caller's speech peak, which falls by
// sileroPeakDecayDB a frame (1 dB a second) so a caller who turns quieter
// is heard again. Before the caller spoke the gate is open.
const (
	sileroBelowPeakDB = 18
	sileroPeakDecayDB = 0.02
	sileroPeakUnheard = -120.0
	sileroPeakLeast   = -60.0
	// sileroQuietTailFrames is how long (300 ms) speech under the gate
	// still counts inside an utterance.
	sileroQuietTailFrames = 15
)

// sileroRate reports whether the model runs at rate: 8 or 16 kHz, or a
// multiple brought down to one of them.
func sileroRate(rate int) bool { return rate > 0 && rate%8000 == 0 }

func newSileroVoicing(rate int, start, end float64) (*sileroVoicing, error) {
	modelRate, decim := rate, 1
	switch {
	case rate == 8000 || rate == 16000:
	case rate > 0 && rate%16000 == 0:
		modelRate, decim = 16000, rate/16000
	case rate > 0 && rate%8000 == 0:
		modelRate, decim = 8000, rate/8000
	}
	m, err := silero.New(modelRate)
	if err != nil {
		return nil, fmt.Errorf("voice: silero at %d Hz: %w", rate, err)
	}
	return &sileroVoicing{m: m, decim: decim, win: make([]float32, m.WindowSize()),
		start: float32(start), end: float32(end), peak: sileroPeakUnheard}, nil
}

func (s *sileroVoicing) voiced(pcm []int16, lvl float64, speaking bool) bool {
	for _, v := range pcm {
		if s.decim > 1 {
			s.sum += int(v)
			if s.summed++; s.summed < s.decim {
				continue
			}
			v = int16(s.sum / s.decim)
			s.sum, s.summed = 0, 0
		}
		s.win[s.n] = float32(v) / 32768
		if s.n++; s.n == len(s.win) {
			s.p = s.m.Prob(s.win)
			s.n = 0
		}
	}
	threshold := s.start
	if speaking {
		threshold = s.end
	}
	loud := lvl >= s.peak-sileroBelowPeakDB
	voiced := s.p >= threshold && (loud || (speaking && s.sinceLoud < sileroQuietTailFrames))
	if voiced && loud {
		s.peak, s.sinceLoud = max(s.peak, lvl), 0
	} else {
		s.sinceLoud++
		if s.peak > sileroPeakLeast {
			s.peak -= sileroPeakDecayDB
		}
	}
	return voiced
}

// heard: the model hears speech, not loudness, so a noisy line's frames
// are not the caller's voice however loud they are (and babble quieter
// than the caller is not theirs either).
func (s *sileroVoicing) heard(_ float64, voiced bool) bool { return voiced }
