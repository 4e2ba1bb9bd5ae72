package voice

import (
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/benbjohnson/clock"

	"github.com/stackbone/box/config"
)

// Interruptions: the caller's sound while the agent speaks. In the default
// mode (config.InterruptionWords) the playout pauses at the caller's first
// sound (the VAD's start of speech, 60 ms) and the agent's turn waits:
//
//   - words arrive that are not backchannels (MinWords of them, from the
//     live stream's interims or the speculative transcription of the
//     overlap), or the caller stays voiced for MinVoiced with nothing of it
//     known to be a backchannel, or for half that with a word known that
//     is none ("Sorry, can you..."): the agent yields. Its answer is cut where
//     the caller heard it stop (the pause) and the caller's utterance is
//     their turn, as any other;
//   - the caller is quiet again and what they said is only backchannels
//     ("mm-hm", "yeah", "right") or nothing (a cough, a click, a noise
//     burst), or no words came within ResumeAfter of the pause: the
//     playout resumes where it paused, and the sound is no turn (it is not
//     answered, and not in the heard transcript). Words that are more than
//     backchannels arriving later in the same utterance still make the
//     agent yield. Fewer of them than MinWords ("No," "Wait,") hold the
//     pause through a quiet moment, since the caller is most likely going
//     on; the utterance's end settles them.
//
// Each overlap is recorded on the agent's turn (its metrics'
// "interruptions": yielded, resumed or ignored, with the pause's length).
// Mode immediate is the older rule: ImmediateAfter of voiced sound stops
// the agent for good, whatever it was.

// Default interruption settings (config.Interruption).
const (
	DefaultInterruptionMinWords       = 2
	DefaultInterruptionMinVoiced      = 900 * time.Millisecond
	DefaultInterruptionResumeAfter    = time.Second
	DefaultInterruptionImmediateAfter = 300 * time.Millisecond
)

// defaultBackchannels are the words and phrases that never interrupt the
// agent, in English, Spanish, French, German, Italian and Portuguese.
var defaultBackchannels = []string{
	// English
	"mm", "mmm", "hm", "hmm", "mhm", "mm-hm", "mm-hmm", "mmhm", "mmhmm", "uh-huh", "uh huh", "uhuh", "uh", "um", "ah", "oh",
	"aha", "yeah", "yea", "yes", "yep", "yup", "ya", "okay", "ok", "right", "alright", "all right", "sure", "i see", "got it",
	"cool", "great", "good", "fine", "true", "exactly", "indeed", "really", "wow", "nice", "perfect", "sounds good",
	"oh okay", "ah okay", "uh-hum",
	// Spanish
	"sí", "si", "vale", "claro", "ajá", "aja", "ya", "bueno", "vale vale", "entiendo", "perfecto", "de acuerdo", "eh",
	// French
	"oui", "ouais", "d'accord", "bon", "ah bon", "voilà", "je vois", "bien",
	// German
	"ja", "genau", "stimmt", "gut", "alles klar", "ach so", "jaja",
	// Italian
	"sì", "certo", "esatto", "va bene", "capito",
	// Portuguese
	"sim", "tá", "ta", "certo", "beleza", "entendi", "pois é",
}

// interruption is an agent's resolved interruption settings.
type interruption struct {
	immediate      bool
	minWords       int
	minVoiced      time.Duration
	resumeAfter    time.Duration
	immediateAfter time.Duration
	backchannels   [][]string // each a phrase's words, longest first
}

func newInterruption(ag config.Agent) interruption {
	in := interruption{minWords: DefaultInterruptionMinWords, minVoiced: DefaultInterruptionMinVoiced,
		resumeAfter: DefaultInterruptionResumeAfter, immediateAfter: DefaultInterruptionImmediateAfter}
	list := defaultBackchannels
	if v := ag.Voice; v != nil && v.Interruption != nil {
		i := v.Interruption
		in.immediate = i.Mode == config.InterruptionImmediate
		if i.MinWords > 0 {
			in.minWords = i.MinWords
		}
		if i.MinVoiced > 0 {
			in.minVoiced = i.MinVoiced
		}
		if i.ResumeAfter > 0 {
			in.resumeAfter = i.ResumeAfter
		}
		if i.ImmediateAfter > 0 {
			in.immediateAfter = i.ImmediateAfter
		}
		if len(i.Backchannels) > 0 {
			list = i.Backchannels
		}
	}
	for _, b := range list {
		if w := tokens(b); len(w) > 0 {
			in.backchannels = append(in.backchannels, w)
		}
	}
	// Longest first: "all right" is matched before "right".
	for i := 1; i < len(in.backchannels); i++ {
		for j := i; j > 0 && len(in.backchannels[j]) > len(in.backchannels[j-1]); j-- {
			in.backchannels[j], in.backchannels[j-1] = in.backchannels[j-1], in.backchannels[j]
		}
	}
	return in
}

// tokens are text's words, lower-cased, without the punctuation around
// them (a hyphen or an apostrophe inside a word stays: "mm-hm", "d'accord").
func tokens(text string) []string {
	var out []string
	for _, f := range strings.Fields(strings.ToLower(text)) {
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// substantive counts the words of text that are not backchannels.
func (in interruption) substantive(text string) int {
	words := tokens(text)
	n := 0
next:
	for i := 0; i < len(words); {
		for _, b := range in.backchannels {
			if i+len(b) <= len(words) && equalWords(words[i:i+len(b)], b) {
				i += len(b)
				continue next
			}
		}
		n++
		i++
	}
	return n
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// overlapQuietFrames is how long the caller must be quiet (100 ms) before a
// paused agent may go on.
const overlapQuietFrames = 5

// Outcomes of an overlap, as the turn's metrics record them.
const (
	overlapYielded = "yielded" // the agent stopped: the caller took the turn
	overlapResumed = "resumed" // the agent paused and went on where it paused
	overlapIgnored = "ignored" // mode immediate: too short to stop the agent
)

// overlap is the caller's utterance over an agent's turn. The listener
// owns it until the utterance ends; one handed to its turn to settle
// (pending words) is shared with a resume timer, under mu.
type overlap struct {
	t       *turn // the agent's turn it is over
	voiced  int   // the caller's voiced frames since it began
	seen    int   // the most words that are no backchannels known of it
	yielded bool
	heard   overlapWords // its words by its own transcription (HTTP)

	mu       sync.Mutex
	pausedAt time.Time    // when the playout paused (zero: it is not paused)
	pausedMs int64        // the pause's length, once it resumed
	timer    *clock.Timer // resumes the agent if the words are late
}

// paused reports whether the overlap holds the agent's playout.
func (o *overlap) paused() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.pausedAt.IsZero()
}

// recordOverlap adds the overlap's outcome to its agent turn's metrics,
// with the words' count (never the words).
func (c *Call) recordOverlap(o *overlap, outcome string, words int) {
	entry := map[string]any{"outcome": outcome, "voicedMs": int64(o.voiced) * FrameDuration.Milliseconds(), "words": words}
	o.mu.Lock()
	if o.pausedMs > 0 {
		entry["pausedMs"] = o.pausedMs
	}
	o.mu.Unlock()
	c.mu.Lock()
	o.t.interruptions = append(o.t.interruptions, entry)
	c.mu.Unlock()
}

// agentTurn is the agent's turn being spoken (or about to be), nil when
// none.
func (c *Call) agentTurn() *turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.speaking
}

// pause holds the agent's playout for an overlap.
func (c *Call) pause(o *overlap) {
	c.playout.Pause()
	o.mu.Lock()
	o.pausedAt = c.clk.Now()
	o.mu.Unlock()
}

// resume lets the paused playout go on where it stopped and records the
// overlap as resumed (words: how many words of it were not backchannels).
func (c *Call) resume(o *overlap, words int) {
	o.mu.Lock()
	if o.pausedAt.IsZero() {
		o.mu.Unlock()
		return
	}
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	o.pausedMs = c.clk.Since(o.pausedAt).Milliseconds()
	o.pausedAt = time.Time{}
	o.mu.Unlock()
	if c.agentTurn() == o.t {
		c.playout.Resume()
	}
	c.recordOverlap(o, overlapResumed, words)
}

// waitForWords keeps the agent paused while the words of an overlap that
// ended are transcribed, at most until ResumeAfter from the pause.
func (c *Call) waitForWords(o *overlap, in interruption) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pausedAt.IsZero() {
		return // it went on already: the words can still make it yield
	}
	wait := max(in.resumeAfter-c.clk.Since(o.pausedAt), 0)
	o.timer = c.clk.AfterFunc(wait, func() { c.resume(o, 0) })
}

// settleOverlap decides, on its transcript, an overlap whose utterance
// ended before its words were known: enough words that are not
// backchannels make the agent yield and the utterance is the caller's
// turn (true); otherwise the agent goes on where it paused and the
// utterance is no turn (false).
func (c *Call) settleOverlap(o *overlap, text string) bool {
	in := newInterruption(c.agent)
	w := in.substantive(text)
	if w < in.minWords {
		c.resume(o, w)
		return false
	}
	o.mu.Lock()
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	o.mu.Unlock()
	o.yielded = true
	if c.agentTurn() == o.t {
		c.recordOverlap(o, overlapYielded, w)
		c.bargeIn()
	}
	return true
}
