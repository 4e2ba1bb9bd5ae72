package voice

import (
	"strings"
	"time"
)

// Background voices: other people talking near the caller, a television,
// babble in a café. The Silero model hears them as speech, and once they
// are about as loud as the caller's quieter words no level gate tells them
// apart, so an utterance goes on after the caller's last word for as long
// as they do and the turn never ends. What tells them apart is the caller's
// words: an utterance longer than backgroundAfter is transcribed again
// each time the agent's longest endpointing delay (maxEndpointDelay,
// 1.5 s by default) has passed since the last transcript came, and when two
// in a row have the same words (the caller added none for that long while
// the sound went on: as good as the silence that would have ended the
// turn), the turn ends there, its reason "background". An utterance with no
// words at all in both is the background alone, and is let go of as a
// noise. With a live speech-to-text stream the words are its interims, and
// no request is made. An utterance of a caller who talks for long costs a
// transcription request per delay past backgroundAfter.
const backgroundAfter = 4 * time.Second

// endBackground: the caller's words stopped while the sound went on.
const endBackground = "background"

// background follows the words of a long utterance (see above).
type background struct {
	at    time.Time    // when the next check starts
	check *speculation // the check's transcription in flight (HTTP)
	text  string       // the last check's words
	known bool         // a check answered
}

// reset starts over for an utterance that began at now.
func (b *background) reset(now time.Time) {
	b.drop()
	*b = background{at: now.Add(backgroundAfter)}
}

// drop lets go of a check in flight.
func (b *background) drop() {
	if b.check != nil {
		b.check.cancel()
		b.check = nil
	}
}

// backgroundOnly checks the words of the utterance in progress when a
// check is due and reports, with them, whether they are what the last
// check found: the sound goes on, the caller's words do not.
func (l *listener) backgroundOnly(now time.Time) (text string, over bool) {
	b := &l.bg
	if b.at.IsZero() || now.Before(b.at) {
		return "", false
	}
	if scr := l.c.scr; scr != nil && !scr.over.Load() {
		// Who answered is being screened: a machine's greeting is long,
		// and the screener's own limits end it.
		return "", false
	}
	var known bool
	if l.live != nil {
		// The interims so far, whether or not they reach the last
		// voiced frame: what matters is whether they still grow.
		text, _ = l.live.words(l.voicedAt)
		known = true
	} else {
		if b.check == nil {
			b.check = l.c.speculate(l.inTurn(), l.det.Snapshot(), l.wake)
			return "", false
		}
		select {
		case <-b.check.done:
		default:
			return "", false // the transcriber has not answered yet
		}
		text, known = b.check.text, b.check.err == nil
		b.check = nil
	}
	text = strings.TrimSpace(text)
	over = known && b.known && text == b.text
	b.at = now.Add(l.ep.max)
	if known {
		b.text, b.known = text, true
	}
	return text, over
}

// endOnBackground ends the utterance whose words stopped (backgroundOnly):
// as a turn of those words, or as a noise when it had none; false when the
// call ended while the turn was handed over.
func (l *listener) endOnBackground(text string, now time.Time) bool {
	if text == "" {
		l.bg.drop()
		l.det.Cut()
		l.noise()
		return true
	}
	return l.cut(now, endBackground)
}

// overlapWords are the words of the caller's sound over the agent, by
// transcribing it while it goes on: with HTTP transcription nothing else
// tells words from other voices before the caller pauses. From
// overlapCheckAfter of voiced sound on, the audio so far is transcribed
// again each overlapCheckEvery of it while the agent is paused, each
// overlapCheckLater once it went on: words make the agent yield sooner
// than MinVoiced would (no pause needed); none, once ResumeAfter passed,
// let it go on under a sound that is no caller's.
type overlapWords struct {
	check *speculation
	next  time.Duration // the voiced time at which the next check starts
	text  string        // the last check's words
	known bool          // a check answered
}

const (
	overlapCheckAfter = 300 * time.Millisecond
	overlapCheckEvery = 300 * time.Millisecond
	overlapCheckLater = time.Second
)

// follow reads the check in flight and starts the next one when due.
func (w *overlapWords) follow(l *listener, ov *overlap, speaking bool, voiced time.Duration) {
	if w.check != nil {
		select {
		case <-w.check.done:
			if w.check.err == nil {
				w.text, w.known = w.check.text, true
			}
			w.check = nil
		default:
		}
	}
	if w.check != nil || !speaking || voiced < max(overlapCheckAfter, w.next) {
		return
	}
	w.check = l.c.speculate(l.inTurn(), l.det.Snapshot(), l.wake)
	if ov.paused() {
		w.next = voiced + overlapCheckEvery
	} else {
		w.next = voiced + overlapCheckLater
	}
}

// drop lets go of a check in flight.
func (w *overlapWords) drop() {
	if w.check != nil {
		w.check.cancel()
		w.check = nil
	}
}
