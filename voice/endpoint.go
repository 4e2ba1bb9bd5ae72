package voice

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/stackbone/box/config"
)

// Endpointing decides when a caller's turn has ended: after a short
// silence when what was said so far is complete, after a long one when
// the caller trailed off, after the VAD's delay when nothing is known of
// the words yet. What was said so far comes from the speculative
// transcript (HTTP speech-to-text) or the interim and final results of a
// streaming transcriber.
//
// The rules read the last sentence of the words so far (mode words, the
// default):
//   - a question ("...?") or a closing ("..., please.", "Thanks.",
//     "Bye.") is complete: the turn ends after minEndpointDelay (200 ms);
//   - a closed clause, a request of three words or more that is not an
//     opener ("I'd like to move my booking to Friday.", "Cancel my
//     booking for Saturday."), ends after ClosedClauseDelay (250 ms,
//     never under minEndpointDelay);
//   - an opener or a statement that only tells waits the sentence delay
//     (600 ms), since callers go on after it in a breath: a greeting
//     ("Hi, this is Ana."), a self-introduction ("My name is Ana
//     Lopez."), an announcement ("I have a question."), a short
//     acknowledgement ("Okay.", "Yes."), context ("We will arrive late
//     tonight.");
//   - an open one waits up to maxEndpointDelay (1.5 s): a trailing
//     conjunction, filler, article or preposition ("and", "um", "for"),
//     a comma or an ellipsis, or a number being dictated (the sentence
//     ends on two or more digits: "my number is 4 5 6");
//   - words with no closing mark from a transcriber that closes its
//     sentences (HTTP transcription) are a sentence cut off: they wait as
//     an open one; from a live stream's interims, which carry no marks,
//     or with no words known yet, the VAD's delay (600 ms).
//
// Mode cautious treats every statement as an opener (only questions end
// early: the rules before closed clauses were told apart), mode silence ignores the words (the VAD's delay
// for every turn).

// Default endpointing delays (config.AgentVoice.MinEndpointDelay and
// MaxEndpointDelay).
const (
	DefaultMinEndpointDelay = 200 * time.Millisecond
	DefaultMaxEndpointDelay = 1500 * time.Millisecond
)

// ClosedClauseDelay is the silence after a closed clause: a statement
// that reads finished and is no opener. It is a little longer than after
// a question, whose mark is the clearer sign of an end.
const ClosedClauseDelay = 250 * time.Millisecond

// speculateAfter is the silence after which the utterance so far is sent
// for transcription while endpointing goes on (HTTP speech-to-text only).
const speculateAfter = 120 * time.Millisecond

// sentenceDelay is the silence after an opener, or after any statement in
// mode cautious: callers often say two sentences with a breath between
// them, and a breath of espeak's 340 ms reaches the box over a LiveKit
// room as more than 450 ms of silence, so it waits as long as an
// utterance whose words are not known yet (the VAD's 600 ms).
const sentenceDelay = 600 * time.Millisecond

// endpointing holds an agent's delays and mode.
type endpointing struct {
	min, closed, sentence, normal, max time.Duration
	mode                               string
}

func newEndpointing(ag config.Agent, vadCfg VADConfig) endpointing {
	vadCfg.defaults()
	e := endpointing{min: DefaultMinEndpointDelay, max: DefaultMaxEndpointDelay,
		normal: time.Duration(vadCfg.EndFrames) * FrameDuration, mode: config.EndpointingWords}
	if v := ag.Voice; v != nil {
		if v.MinEndpointDelay > 0 {
			e.min = v.MinEndpointDelay
		}
		if v.MaxEndpointDelay > 0 {
			e.max = v.MaxEndpointDelay
		}
		if v.Endpointing != nil && v.Endpointing.Mode != "" {
			e.mode = v.Endpointing.Mode
		}
	}
	e.max = max(e.max, e.min)
	e.normal = min(max(e.normal, e.min), e.max)
	e.sentence = min(max(sentenceDelay, e.min), e.normal)
	e.closed = min(max(ClosedClauseDelay, e.min), e.sentence)
	return e
}

// Why a turn ended.
const (
	endComplete = "complete" // the words so far end a question or a closing
	endClosed   = "closed"   // the words so far end a closed clause
	endSentence = "sentence" // the words so far end an opener (any statement in mode cautious)
	endTrailing = "trailing" // the caller trailed off and the longest delay passed
	endSilence  = "silence"  // nothing decided it: the VAD's delay
	endTurn     = "turn"     // the speech-to-text provider's end of turn
)

// delay is the silence after which the turn ends, given what is known of
// its words (known false: nothing yet, or not of all the speech so far).
// punctuated says the words come from a transcriber that closes every
// sentence with its mark (HTTP transcription of the utterance so far):
// words without one are a sentence cut off, which waits as a trailing one
// does; a live stream's interims carry no marks, so theirs wait the VAD's
// delay.
func (e endpointing) delay(text string, known, punctuated bool) (time.Duration, string) {
	if !known || e.mode == config.EndpointingSilence {
		return e.normal, endSilence
	}
	class := classify(text)
	if class == "" && punctuated && e.mode == config.EndpointingWords && strings.TrimSpace(text) != "" {
		class = classTrailing
	}
	if e.mode == config.EndpointingCautious {
		// The rules before closed clauses were told from openers: only a
		// question ends early, every other statement waits.
		switch class {
		case classClosing, classClosed, classOpener:
			class = classOpener
		case classDictated:
			class = ""
			if strings.ContainsAny(text[len(text)-1:], ".!") {
				class = classOpener
			}
		}
	}
	switch class {
	case classQuestion, classClosing:
		return e.min, endComplete
	case classClosed:
		return e.closed, endClosed
	case classOpener:
		return e.sentence, endSentence
	case classTrailing, classDictated:
		return e.max, endTrailing
	}
	return e.normal, endSilence
}

// What the words so far end on (classify).
const (
	classQuestion = "question"
	classClosing  = "closing"
	classClosed   = "closed"
	classOpener   = "opener"
	classTrailing = "trailing"
	classDictated = "dictated"
)

// trailingWords are words a finished sentence does not end on: the caller
// is thinking or about to go on (conjunctions, fillers, articles,
// possessives, and the prepositions a transcriber leaves hanging most).
// Prepositions that end questions ("Where are you from?") are not here.
var trailingWords = map[string]bool{
	"and": true, "or": true, "but": true, "so": true, "because": true, "um": true, "uh": true, "er": true,
	"erm": true, "hmm": true, "mm": true, "the": true, "a": true, "an": true, "to": true, "of": true,
	"for": true, "with": true, "my": true, "your": true, "our": true, "if": true, "then": true, "which": true,
}

// closingWords end a statement that needs no more: thanks, a goodbye, a
// request's "please".
var closingWords = map[string]bool{
	"please": true, "thanks": true, "bye": true, "goodbye": true, "cheers": true,
}

// openers are how sentences that callers go on after begin: greetings,
// introductions, announcements of what comes next. Each is matched
// against the sentence's first words.
var openers = [][]string{
	{"hi"}, {"hello"}, {"hey"}, {"good", "morning"}, {"good", "afternoon"}, {"good", "evening"},
	{"this", "is"}, {"it's"}, {"it", "is"}, {"my", "name"}, {"i'm", "calling"}, {"i", "am", "calling"},
	{"i", "have", "a", "question"}, {"i've", "got", "a", "question"}, {"i", "have", "a", "problem"},
	{"quick", "question"}, {"i", "was", "wondering"}, {"i", "wanted", "to", "ask"}, {"one", "more", "thing"},
	{"here's", "the", "thing"}, {"let", "me", "explain"}, {"well"}, {"also"}, {"first"}, {"so"}, {"okay"},
	{"ok"}, {"yes"}, {"yeah"}, {"no"}, {"right"}, {"sure"},
}

// requests are what makes a statement a closed clause: the caller asks
// for something ("I'd like to book...", "Cancel my booking."). A
// statement that only tells ("I am interested in the AI master.", "We
// will arrive late.") is most often said before the request, so it waits
// as an opener does. Each is matched anywhere in the sentence.
var requests = [][]string{
	{"i", "would", "like"}, {"i'd", "like"}, {"we", "would", "like"}, {"we'd", "like"}, {"i", "want"},
	{"we", "want"}, {"i", "need"}, {"we", "need"}, {"i'd", "love"}, {"i", "would", "love"},
	{"can", "you"}, {"could", "you"}, {"would", "you"}, {"please"}, {"let", "me", "know"}, {"tell", "me"},
	{"book"}, {"cancel"}, {"change"}, {"move"}, {"send"}, {"reschedule"}, {"confirm"}, {"make", "it"},
}

// request says whether words ask for something.
func request(words []string) bool {
	for _, r := range requests {
		for i := 0; i+len(r) <= len(words); i++ {
			if slices.Equal(words[i:i+len(r)], r) {
				return true
			}
		}
	}
	return false
}

// numberWords are the words a dictated number is read in.
var numberWords = map[string]bool{
	"zero": true, "oh": true, "one": true, "two": true, "three": true, "four": true, "five": true,
	"six": true, "seven": true, "eight": true, "nine": true, "double": true, "triple": true,
}

// classify says what text, the caller's words so far, ends on: a
// question, a closing, a closed clause, an opener, a trailing word, a
// number being dictated, or none of these (""). A question or a statement
// must end on a word a sentence ends on.
func classify(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	if strings.HasSuffix(text, "...") || strings.HasSuffix(text, "…") {
		return classTrailing
	}
	words := sentenceWords(text)
	if len(words) == 0 {
		return ""
	}
	if trailingWords[words[len(words)-1]] {
		return classTrailing
	}
	switch text[len(text)-1] {
	case ',', ';', ':', '-':
		return classTrailing
	case '?':
		return classQuestion
	}
	if dictated(words) {
		return classDictated
	}
	switch text[len(text)-1] {
	case '.', '!':
		if closing(words) {
			return classClosing
		}
		if len(words) < 3 || opener(words) || !request(words) {
			return classOpener
		}
		return classClosed
	}
	return ""
}

// sentenceWords are the lower-cased words of text's last sentence.
func sentenceWords(text string) []string {
	body := strings.TrimRight(text, ".!?")
	if i := strings.LastIndexAny(body, ".!?"); i >= 0 {
		body = body[i+1:]
	}
	var out []string
	for _, f := range strings.Fields(body) {
		w := strings.ToLower(strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }))
		w = strings.ReplaceAll(w, "’", "'")
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// closing says whether words end a request or say goodbye.
func closing(words []string) bool {
	last := words[len(words)-1]
	if closingWords[last] {
		return true
	}
	return len(words) >= 2 && words[len(words)-2] == "thank" && last == "you"
}

// opener says whether words begin as a sentence callers go on after.
func opener(words []string) bool {
	for _, o := range openers {
		if len(words) >= len(o) && slices.Equal(words[:len(o)], o) {
			return true
		}
	}
	return false
}

// dictated says whether words end on a number being read out: two or
// more digits or number words in a row.
func dictated(words []string) bool {
	n := 0
	for i := len(words) - 1; i >= 0 && number(words[i]); i-- {
		n++
	}
	return n >= 2
}

func number(w string) bool {
	if numberWords[w] {
		return true
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return w != ""
}

// speculation is the transcription of an utterance so far, sent after a
// short silence while endpointing goes on: kept if the turn ends there,
// cancelled if the caller goes on.
type speculation struct {
	report  *engineReport // the engines of its transcription
	cancel  context.CancelFunc
	done    chan struct{} // closed once text and err are set
	text    string
	err     error
	started time.Time
}

// speculate starts the transcription of pcm; wake is called when it
// answers.
func (c *Call) speculate(ctx context.Context, pcm []int16, wake func()) *speculation {
	ctx, cancel := context.WithCancel(ctx)
	ctx, report := withReport(ctx, partSTT)
	s := &speculation{report: report, cancel: cancel, done: make(chan struct{}), started: c.clk.Now()}
	go func() {
		s.text, s.err = c.stt.Transcribe(ctx, pcm, c.info.SampleRate)
		// Its request is over: the call's context lets go of this one (a
		// context never cancelled stays among its parent's children, with
		// the request's, for as long as the call lasts).
		cancel()
		// Answered before the wake: a listener woken by it finds the
		// answer (it may get no other wake before the endpoint).
		close(s.done)
		wake()
	}()
	return s
}

// answer is the speculation's transcript once it answered without error.
func (s *speculation) answer() (string, bool) {
	select {
	case <-s.done:
		return s.text, s.err == nil
	default:
		return "", false
	}
}

// sttResult is the final transcript of an utterance from a live stream.
type sttResult struct {
	text string
	err  error
}

// liveSTT is the call's streaming transcription: caller audio goes out as
// the caller speaks, interim and final results come back and feed
// endpointing, and each endpoint's Finalize answers the turn's transcript.
// When the provider's own end-of-speech detection already settled every
// word up to past the caller's last voiced frame, the endpoint takes those
// words at once instead of waiting for the answer to its Finalize (which
// then covers only the silence after them, and is dropped).
type liveSTT struct {
	stream TranscriptStream
	wake   func()
	clk    Clock
	rate   int

	mu      sync.Mutex
	finals  []string  // finals of the utterance in progress, before its endpoint
	latest  string    // the interim of the words after those finals
	heardAt time.Time // when the last result arrived
	settled bool      // latest is words the provider settled...
	through time.Duration
	// ...through this much of the stream's audio; the audio sent, and
	// how much of it ran through the last voiced frame (samples).
	sent, voicedEnd int
	// turn is the provider's last turn signal of the utterance in
	// progress (TurnEager, TurnEnd; "" for none, or after TurnResumed).
	turn string
	// waiting are the endpoints awaiting their final, in order; nil for
	// one that took settled words (its final is dropped).
	waiting []chan sttResult
	err     error // the stream failed: the call goes on with Transcribe
}

func newLiveSTT(stream TranscriptStream, clk Clock, rate int, wake func()) *liveSTT {
	l := &liveSTT{stream: stream, wake: wake, clk: clk, rate: rate}
	go l.read()
	return l
}

// send passes a frame of caller audio; voiced says whether the VAD heard
// speech in it.
func (l *liveSTT) send(pcm []int16, voiced bool) {
	if err := l.stream.Send(pcm); err != nil {
		l.mu.Lock()
		l.fail(err)
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	l.sent += len(pcm)
	if voiced {
		l.voicedEnd = l.sent
	}
	l.mu.Unlock()
}

// read takes the stream's results until it ends.
func (l *liveSTT) read() {
	for ev := range l.stream.Results() {
		l.mu.Lock()
		heard := true
		switch {
		case ev.Err != nil:
			l.fail(ev.Err)
		case ev.Final && len(l.waiting) > 0:
			w := l.waiting[0]
			l.waiting = l.waiting[1:]
			if w == nil {
				// Its endpoint took the settled words: nothing new is
				// known of the utterance in progress.
				heard = false
				break
			}
			w <- sttResult{text: joinWords(append(l.finals, ev.Text))}
			l.finals = nil
			l.latest, l.settled = "", false
		case ev.Final:
			l.finals = append(l.finals, ev.Text)
			l.latest, l.settled = "", false
		case ev.Turn == TurnEnd && !ev.Settled:
			// The end of the turn, its words to follow (the Realtime
			// semantic VAD).
			l.turn = ev.Turn
		default:
			if ev.Turn != "" {
				l.turn = ev.Turn
				if ev.Turn == TurnResumed {
					l.turn = ""
				}
			}
			l.latest, l.settled, l.through = ev.Text, ev.Settled, ev.Through
		}
		if heard {
			l.heardAt = l.clk.Now()
		}
		l.mu.Unlock()
		l.wake()
	}
	l.mu.Lock()
	l.fail(ErrSpeechStream)
	l.mu.Unlock()
}

// fail (under l.mu) ends the stream's use: turns waiting for a final fall
// back to Transcribe.
func (l *liveSTT) fail(err error) {
	if l.err == nil {
		l.err = err
	}
	for _, w := range l.waiting {
		if w != nil {
			w <- sttResult{err: l.err}
		}
	}
	l.waiting = nil
}

// failed reports whether the stream is no longer usable.
func (l *liveSTT) failed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err != nil
}

// covered (under l.mu) reports whether the provider settled the words
// through the last voiced frame sent.
func (l *liveSTT) covered() bool {
	return l.settled && l.through > 0 && l.rate > 0 &&
		l.through >= time.Duration(l.voicedEnd)*time.Second/time.Duration(l.rate)
}

// words is what is known of the utterance so far, and whether it covers
// all the speech: it arrived after since (the start of the silence), or
// the provider settled it through the last voiced frame.
func (l *liveSTT) words(since time.Time) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	text := joinWords(append(append([]string(nil), l.finals...), l.latest))
	return text, text != "" && (!l.heardAt.Before(since) || l.covered())
}

// begin forgets a turn signal that came before the utterance that just
// began (a late end of the last one).
func (l *liveSTT) begin() {
	l.mu.Lock()
	l.turn = ""
	l.mu.Unlock()
}

// wentOn forgets an eager end of turn once the caller is heard again:
// the provider's TurnResumed comes later (it hears the audio after the
// box does), and until then the eager words must not start the answer
// a second time at the caller's next short silence.
func (l *liveSTT) wentOn() {
	l.mu.Lock()
	if l.turn == TurnEager {
		l.turn = ""
	}
	l.mu.Unlock()
}

// signal is the provider's turn signal of the utterance in progress:
// TurnEager, TurnEnd, or "" (none, or the caller resumed).
func (l *liveSTT) signal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.turn
}

// finalize asks for the final transcript of the utterance that just ended;
// the answer (or the stream's failure) arrives on the channel: at once
// when the provider already settled all of it.
func (l *liveSTT) finalize() <-chan sttResult {
	w := make(chan sttResult, 1)
	l.mu.Lock()
	if l.err != nil {
		w <- sttResult{err: l.err}
		l.mu.Unlock()
		return w
	}
	if l.covered() {
		w <- sttResult{text: joinWords(append(l.finals, l.latest))}
		l.finals = nil
		l.waiting = append(l.waiting, nil)
	} else {
		l.waiting = append(l.waiting, w)
	}
	l.latest, l.settled, l.turn = "", false, ""
	l.mu.Unlock()
	if err := l.stream.Finalize(); err != nil {
		l.mu.Lock()
		l.fail(err)
		l.mu.Unlock()
	}
	return w
}

func joinWords(parts []string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}
