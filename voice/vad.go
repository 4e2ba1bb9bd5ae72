package voice

import (
	"fmt"
	"math"
	"slices"

	"github.com/stackbone/box/config"
)

// VADConfig tunes voice activity detection. Zero fields take the defaults
// in their comments.
type VADConfig struct {
	// Detector tells speech frames from the rest: VADAuto (the default),
	// VADEnergy or VADSilero. An agent's voice.vad overrides it for its
	// calls.
	Detector string
	// MarginDB is how far above the noise floor a frame must be to count as
	// voiced (default 12 dB; energy detector).
	MarginDB float64
	// MinLevelDB is the quietest voiced frame in dBFS (default -45; energy
	// detector).
	MinLevelDB float64
	// SpeechStart is the Silero probability from which a frame starts
	// speech (default 0.5).
	SpeechStart float64
	// SpeechEnd is the Silero probability below which a frame of an
	// utterance in progress is silence (default 0.35): lower than
	// SpeechStart, so a word's quiet end under noise does not break it up.
	SpeechEnd float64
	// StartFrames voiced frames in a row start speech (default 3, 60 ms).
	StartFrames int
	// EndFrames unvoiced frames in a row end an utterance (default 30,
	// 600 ms): the endpointing delay.
	EndFrames int
	// MinSpeechFrames is the shortest utterance kept (default 10, 200 ms).
	MinSpeechFrames int
}

// Detectors (VADConfig.Detector, an agent's voice.vad).
const (
	// VADEnergy: a frame is speech when it is loud enough above the
	// line's noise floor. Cheap, and right on quiet lines.
	VADEnergy = config.VADEnergy
	// VADSilero: a frame is speech when the Silero VAD model says so
	// (package silero): right on noisy lines too, for about 0.5 % of a
	// core per call. At 8 and 16 kHz and their multiples.
	VADSilero = config.VADSilero
	// VADAuto: the energy detector while the line is quiet, the Silero
	// detector once its noise floor stays loud (autoVoicing).
	VADAuto = config.VADAuto
)

func (c *VADConfig) defaults() {
	if c.Detector == "" {
		c.Detector = VADAuto
	}
	if c.MarginDB == 0 {
		c.MarginDB = 12
	}
	if c.MinLevelDB == 0 {
		c.MinLevelDB = -45
	}
	if c.SpeechStart == 0 {
		c.SpeechStart = 0.5
	}
	if c.SpeechEnd == 0 {
		c.SpeechEnd = 0.35
	}
	if c.StartFrames == 0 {
		c.StartFrames = 3
	}
	if c.EndFrames == 0 {
		c.EndFrames = 30
	}
	if c.MinSpeechFrames == 0 {
		c.MinSpeechFrames = 10
	}
}

// vad finds utterances in a stream of frames: a detector (voicing) says
// which frames are speech, and vad turns runs of them into utterances with
// their audio.
type vad struct {
	cfg      VADConfig
	kind     voicing
	voiced   int // voiced frames in a row
	unvoiced int // unvoiced frames in a row while in speech
	speaking bool
	speechN  int // voiced frames of the current utterance
	buf      [][]int16
	pre      [][]int16 // frames before speech started, kept for onset
	free     [][]int16 // frames let go of, reused for the next ones kept
	heard    bool      // the last frame may hold speech (Heard)
}

// voicing tells speech frames from the rest: the part of voice activity
// detection that differs between detectors.
type voicing interface {
	// voiced reports whether the frame, at level lvl in dBFS, is speech;
	// speaking says an utterance is in progress (a detector may ask less
	// of a frame to stay in speech than to start it).
	voiced(pcm []int16, lvl float64, speaking bool) bool
	// heard reports whether a frame voiced says it is, at level lvl, may
	// hold speech: for the end of speech (Heard), which is later than the
	// last voiced frame where a word fades out quieter than voiced asks.
	heard(lvl float64, voiced bool) bool
}

// newVAD returns a detector of cfg.Detector for frames at rate; an error
// when that detector cannot run at rate (or is unknown).
func newVAD(cfg VADConfig, rate int) (*vad, error) {
	cfg.defaults()
	v := &vad{cfg: cfg}
	switch cfg.Detector {
	case VADEnergy:
		v.kind = &energyVoicing{margin: cfg.MarginDB, minLevel: cfg.MinLevelDB, floor: -60}
	case VADAuto:
		v.kind = newAutoVoicing(cfg, rate)
	case VADSilero:
		s, err := newSileroVoicing(rate, cfg.SpeechStart, cfg.SpeechEnd)
		if err != nil {
			return nil, err
		}
		v.kind = s
	default:
		return nil, fmt.Errorf("voice: unknown voice activity detector %q", cfg.Detector)
	}
	return v, nil
}

// energyVoicing counts a frame as speech when it is MarginDB above an
// adaptive noise floor (and above MinLevelDB), so steady line noise (hiss,
// hum) never counts as speech however loud it is, while speech above it
// does.
type energyVoicing struct {
	margin, minLevel float64
	floor            float64   // noise floor estimate, dBFS
	levels           []float64 // ring of recent frame levels
	next             int
	sorted           []float64 // the same levels, in order
}

func (e *energyVoicing) voiced(_ []int16, lvl float64, _ bool) bool {
	e.track(lvl)
	return lvl > e.floor+e.margin && lvl > e.minLevel
}

// heard: any frame loud enough to be speech, voiced or not.
func (e *energyVoicing) heard(lvl float64, _ bool) bool { return lvl > e.minLevel }

// vadEvent is what one frame changed.
type vadEvent int

// vad events.
const (
	vadNone vadEvent = iota
	// vadSpeechStart: speech began (StartFrames voiced frames).
	vadSpeechStart
	// vadSpeechEnd: an utterance ended; Utterance returns its audio.
	vadSpeechEnd
	// vadDiscard: speech ended too short to be an utterance (a click, a cough).
	vadDiscard
)

// preRollFrames is how much audio before the detector's start of speech
// an utterance keeps (160 ms).
const preRollFrames = 8

// floorWindow is how many frames of levels the noise floor looks back on.
const floorWindow = 100

// track updates the noise floor: the 10th percentile of the last two
// seconds of frame levels. Steady noise is always in that window and sets the
// floor; speech, which pauses between words, sits above it. A dropped packet
// (digital silence) is one low outlier the percentile ignores.
//
// The window is kept sorted as it slides (one level out, one in, each by
// binary search) rather than sorted again on every frame, which cost every
// call a sort of 100 levels 50 times a second.
func (e *energyVoicing) track(lvl float64) {
	if len(e.levels) < floorWindow {
		e.levels = append(e.levels, lvl)
	} else {
		old := e.levels[e.next]
		e.levels[e.next] = lvl
		e.next = (e.next + 1) % floorWindow
		i, _ := slices.BinarySearch(e.sorted, old)
		e.sorted = slices.Delete(e.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(e.sorted, lvl)
	e.sorted = slices.Insert(e.sorted, i, lvl)
	e.floor = e.sorted[len(e.sorted)/10]
}

// Level is a frame's RMS level in dBFS.
func Level(pcm []int16) float64 {
	if len(pcm) == 0 {
		return -120
	}
	// The squares summed as integers: each (s/32768)² is an exact float
	// and so is every partial sum of them (a multiple of 2^-30 under 2^23
	// for up to 2^23 samples), so this is the floating-point sum exactly,
	// without a conversion and a multiplication per sample.
	var sum int64
	for _, s := range pcm {
		v := int64(s)
		sum += v * v
	}
	rms := math.Sqrt(float64(sum) / (1 << 30) / float64(len(pcm)))
	if rms < 1e-6 {
		return -120
	}
	return 20 * math.Log10(rms)
}

// Process takes the next frame.
func (v *vad) Process(pcm []int16) vadEvent {
	lvl := Level(pcm)
	voiced := v.kind.voiced(pcm, lvl, v.speaking)
	v.heard = v.kind.heard(lvl, voiced)
	if a, ok := v.kind.(*autoVoicing); ok && v.speaking && a.tookOver() {
		v.speaking, v.voiced = false, 0
		v.buf = v.release(v.buf)
		return vadDiscard
	}
	// A copy only of what is kept: between utterances most frames are
	// silence, heard and let go.
	if !v.speaking {
		// The frames before speech starts are kept, the last
		// preRollFrames of them besides the voiced run: a word's quiet
		// onset, or a short first word ("A table...") before a gap, is
		// audio the detector did not count but a transcriber needs.
		v.pre = append(v.pre, v.keep(pcm))
		if voiced {
			v.voiced++
			if v.voiced >= v.cfg.StartFrames {
				v.speaking, v.unvoiced, v.speechN = true, 0, v.voiced
				v.buf = append(v.buf[:0], v.pre...)
				v.pre = v.pre[:0]
				return vadSpeechStart
			}
		} else {
			v.voiced = 0
		}
		if extra := len(v.pre) - preRollFrames - v.voiced; extra > 0 {
			v.release(v.pre[:extra])
			v.pre = append(v.pre[:0], v.pre[extra:]...)
		}
		return vadNone
	}
	v.buf = append(v.buf, v.keep(pcm))
	if voiced {
		v.unvoiced = 0
		v.speechN++
		return vadNone
	}
	v.unvoiced++
	if v.unvoiced < v.cfg.EndFrames {
		return vadNone
	}
	v.speaking, v.voiced = false, 0
	if v.speechN < v.cfg.MinSpeechFrames {
		v.buf = v.release(v.buf)
		return vadDiscard
	}
	return vadSpeechEnd
}

// Cut ends the utterance in progress now (the controller's endpointing
// decided the caller finished before EndFrames of silence) and returns its
// audio as Utterance does; ok is false when it was too short to keep (as
// vadDiscard).
func (v *vad) Cut() (pcm []int16, ok bool) {
	v.speaking, v.voiced = false, 0
	if v.speechN < v.cfg.MinSpeechFrames {
		v.buf = v.release(v.buf)
		return nil, false
	}
	return v.Utterance(), true
}

// Snapshot is the audio of the utterance in progress so far, trimmed as
// Utterance trims it, without ending it.
func (v *vad) Snapshot() []int16 {
	keep := len(v.buf) - v.unvoiced + min(v.unvoiced, 10)
	n := 0
	for _, f := range v.buf[:keep] {
		n += len(f)
	}
	out := make([]int16, 0, n)
	for _, f := range v.buf[:keep] {
		out = append(out, f...)
	}
	return out
}

// vadFreeFrames is how many let-go frames the VAD keeps for reuse (a
// second of audio): enough for most utterances to take no new memory.
const vadFreeFrames = 50

// keep is a copy of pcm for the VAD to hold, in a frame it let go of
// when it has one: the caller's frame is the caller's to reuse.
func (v *vad) keep(pcm []int16) []int16 {
	if n := len(v.free); n > 0 {
		f := v.free[n-1]
		v.free[n-1] = nil
		v.free = v.free[:n-1]
		if cap(f) >= len(pcm) {
			return append(f[:0], pcm...)
		}
	}
	return slices.Clone(pcm)
}

// release lets go of frames (up to vadFreeFrames kept for reuse) and
// returns the emptied slice.
func (v *vad) release(frames [][]int16) [][]int16 {
	for i, f := range frames {
		if len(v.free) < vadFreeFrames {
			v.free = append(v.free, f)
		}
		frames[i] = nil
	}
	return frames[:0]
}

// Silent is how many unvoiced frames in a row the utterance in progress
// ends with.
func (v *vad) Silent() int { return v.unvoiced }

// Heard reports whether the frame Process last took may hold speech: the
// end of speech that wire-to-wire times count from.
func (v *vad) Heard() bool { return v.heard }

// Speaking reports whether an utterance is in progress and how many voiced
// frames it has so far (for barge-in).
func (v *vad) Speaking() (bool, int) { return v.speaking, v.speechN }

// Utterance returns the audio of the utterance that just ended, trailing
// silence trimmed to 200 ms.
func (v *vad) Utterance() []int16 {
	out := v.Snapshot()
	v.buf = v.release(v.buf)
	return out
}
