// Package espeak is the box's offline speech engine: espeak-ng (Debian's
// libespeak-ng1), loaded at run time without cgo, speaking with word
// timings, so a cut sentence can commit exactly the words the caller heard.
//
//	eng, err := espeak.Open("en-us")
//	seg, err := eng.Synthesize(ctx, "Hello there.", 8000) // seg.Words have sample spans
//
// The library is loaded with purego (dlopen) rather than cgo, so the box
// still builds with a plain `go build` on machines without espeak-ng; Open
// then returns ErrUnavailable.
package espeak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/stackbone/box/voice"
)

// ErrUnavailable: libespeak-ng could not be loaded or initialised.
var ErrUnavailable = errors.New("espeak: libespeak-ng is not available (install espeak-ng)")

// libNames are tried in order.
var libNames = []string{"libespeak-ng.so.1", "libespeak-ng.so"}

// espeak-ng constants (speak_lib.h).
const (
	audioOutputSynchronous = 2
	posCharacter           = 1
	charsUTF8              = 1
	eventListTerminated    = 0
	eventWord              = 1
)

// event mirrors espeak_EVENT on 64-bit platforms.
type event struct {
	Type          int32
	UniqueID      uint32
	TextPosition  int32
	Length        int32
	AudioPosition int32
	Sample        int32
	UserData      uintptr
	ID            [8]byte
}

// lib is the loaded library. libespeak-ng keeps global state and is not
// safe for concurrent synthesis, so one mutex serialises it for the
// process: the one place this package needs package-level state.
var lib struct {
	once     sync.Once
	err      error
	rate     int
	mu       sync.Mutex
	setVoice func(name string) int32
	synth    func(text string, size uintptr, pos uint32, posType int32, end uint32, flags uint32, id unsafe.Pointer, user uintptr) int32

	// Filled by the callback during one synthesis (under mu).
	pcm   []int16
	words []event
}

func load() error {
	lib.once.Do(func() {
		var h uintptr
		var err error
		for _, n := range libNames {
			if h, err = purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
				break
			}
		}
		if err != nil {
			lib.err = fmt.Errorf("%w: %v", ErrUnavailable, err)
			return
		}
		var initialize func(output int32, buflength int32, path unsafe.Pointer, options int32) int32
		var setCallback func(cb uintptr)
		purego.RegisterLibFunc(&initialize, h, "espeak_Initialize")
		purego.RegisterLibFunc(&setCallback, h, "espeak_SetSynthCallback")
		purego.RegisterLibFunc(&lib.setVoice, h, "espeak_SetVoiceByName")
		purego.RegisterLibFunc(&lib.synth, h, "espeak_Synth")
		rate := initialize(audioOutputSynchronous, 200, nil, 0)
		if rate <= 0 {
			lib.err = fmt.Errorf("%w: espeak_Initialize returned %d", ErrUnavailable, rate)
			return
		}
		lib.rate = int(rate)
		setCallback(purego.NewCallback(callback))
	})
	return lib.err
}

// callback receives audio and events; it runs inside espeak_Synth, which
// holds lib.mu.
func callback(wav *int16, n int32, events *event) int32 {
	if wav != nil && n > 0 {
		lib.pcm = append(lib.pcm, unsafe.Slice(wav, n)...)
	}
	for ev := events; ev != nil && ev.Type != eventListTerminated; ev = (*event)(unsafe.Add(unsafe.Pointer(ev), unsafe.Sizeof(event{}))) {
		if ev.Type == eventWord {
			lib.words = append(lib.words, *ev)
		}
	}
	return 0
}

// Engine speaks with one espeak-ng voice.
type Engine struct {
	voice string
}

// Open loads the library (once) and checks the voice; "" is en-us.
func Open(voiceName string) (*Engine, error) {
	if err := load(); err != nil {
		return nil, err
	}
	if voiceName == "" {
		voiceName = "en-us"
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if rc := lib.setVoice(voiceName); rc != 0 {
		return nil, fmt.Errorf("espeak: unknown voice %q", voiceName)
	}
	return &Engine{voice: voiceName}, nil
}

// Synthesize implements voice.Synthesizer: the sentence's audio at rate and
// each word's span of samples. A word ends where the next begins (or at the
// end of the audio), which never makes a word count as heard early.
func (e *Engine) Synthesize(ctx context.Context, text string, rate int) (voice.Segment, error) {
	if err := ctx.Err(); err != nil {
		return voice.Segment{}, err
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return voice.Segment{}, errors.New("espeak: nothing to say")
	}
	lib.mu.Lock()
	lib.pcm, lib.words = nil, nil
	lib.setVoice(e.voice)
	rc := lib.synth(text, uintptr(len(text)+1), 0, posCharacter, 0, charsUTF8, nil, 0)
	pcm, words, srcRate := lib.pcm, lib.words, lib.rate
	lib.pcm, lib.words = nil, nil
	lib.mu.Unlock()
	if rc != 0 {
		return voice.Segment{}, fmt.Errorf("espeak: synthesis failed (%d)", rc)
	}
	out := voice.Resample(pcm, srcRate, rate)
	runes := []rune(text)
	seg := voice.Segment{Text: text, PCM: out}
	for i, w := range words {
		start := int(int64(w.AudioPosition) * int64(rate) / 1000)
		end := len(out)
		if i+1 < len(words) {
			end = int(int64(words[i+1].AudioPosition) * int64(rate) / 1000)
		}
		from := int(w.TextPosition) - 1
		to := from + int(w.Length)
		if from < 0 || to > len(runes) || from >= to {
			continue
		}
		seg.Words = append(seg.Words, voice.Word{Text: string(runes[from:to]), Start: min(start, len(out)), End: min(max(end, start), len(out))})
	}
	return seg, nil
}
