package voice

import (
	"slices"
	"strings"
	"sync"
)

// Word is one word of a segment with the span of samples that speaks it,
// as the speech engine reported. End is exclusive.
type Word struct {
	Text       string
	Start, End int
}

// Segment is one unit of agent speech queued for playout: usually one
// sentence, already at the call's sample rate.
type Segment struct {
	Text string
	PCM  []int16
	// Words are the engine's word timings; nil when the engine gave none.
	// Without them, a segment counts as heard only once all of it played.
	Words []Word
	// Unverifiable marks a fallback message or a fixed phrase: if its turn
	// is cut, none of it is committed, even parts that played.
	Unverifiable bool

	// open marks a segment whose audio is still arriving (streamed
	// synthesis): it has not played through until it is sealed and drained.
	open bool
}

// FrameWriter sends one frame of agent audio to the caller. The frame is
// the writer's only during the call: it copies what it keeps.
type FrameWriter interface {
	WriteFrame(pcm []int16) error
}

// Playout paces agent speech: each Tick writes exactly one frame (the next
// samples of the current segment, or silence) and advances the playout
// clock. What the caller heard is derived from that clock alone, so it can
// never include a sample that was not written.
//
// Tick is driven by a real-time ticker in calls and by the test directly,
// which makes interruption races deterministic. It is safe for concurrent
// use: the pipeline enqueues while the ticker plays.
type playout struct {
	frame int // samples per frame

	// wake, when set, is called (under mu; it must not block) when speech
	// becomes playable while the playout was idle (a new talkspurt), so
	// the pacer can start it at once on its own 20 ms grid instead of at
	// the next frame of the old one.
	wake func()

	mu      sync.Mutex
	turn    int        // the assistant turn being played, 0 for none
	queue   []*Segment // segments of that turn not yet started
	cur     *Segment   // the segment being played
	pos     int        // samples of cur already written
	played  []Segment  // segments of the turn that fully played
	done    bool       // the turn's producer finished enqueuing
	paused  bool       // the caller is talking over the turn: hold its place
	keying  int        // keypad tones are sounding in place of the frames
	silence []int16
	speech  []int16 // the frame Tick writes of a segment (Tick's alone)
}

// NewPlayout plays frames of frameSamples samples (160 for 20 ms at 8 kHz).
func newPlayout(frameSamples int) *playout {
	return &playout{frame: frameSamples, silence: make([]int16, frameSamples), speech: make([]int16, frameSamples)}
}

// starved reports (under p.mu) whether nothing is playable right now: the
// current segment, if any, has played all the audio that arrived so far,
// and no queued one has audio yet.
func (p *playout) starved() bool {
	if p.cur != nil && p.pos < len(p.cur.PCM) {
		return false
	}
	for _, s := range p.queue {
		if len(s.PCM) > 0 {
			return false
		}
	}
	return true
}

// signal wakes the pacer (under p.mu) when speech arrived for a starved
// playout.
func (p *playout) signal(wasStarved bool) {
	if !wasStarved || p.starved() || p.wake == nil {
		return
	}
	p.wake()
}

// Start begins assistant turn id; segments enqueued for another turn are
// ignored. A turn still playing must be finished with Finish or Interrupt
// first.
func (p *playout) Start(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turn, p.queue, p.cur, p.pos, p.played, p.done, p.paused = id, nil, nil, 0, nil, false, false
}

// Pause holds the playout where it is: silence plays and the turn keeps
// its place (and cannot finish) until Resume, Interrupt or the next Start.
func (p *playout) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

// Resume goes on from where Pause held the playout.
func (p *playout) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		return
	}
	p.paused = false
	if p.wake != nil && !p.starved() {
		p.wake() // a talkspurt again, on its own grid
	}
}

// holdForKeys holds the playout's place while keypad tones take the
// frames (the transport sends them in place of the silence it writes), so
// no speech is counted as heard that the tones covered; release with
// releaseKeys.
func (p *playout) holdForKeys() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keying++
}

func (p *playout) releaseKeys() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keying--
	if p.keying == 0 && !p.paused && p.wake != nil && !p.starved() {
		p.wake()
	}
}

// Enqueue adds a segment to turn id.
func (p *playout) Enqueue(id int, s Segment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != p.turn || p.done {
		return
	}
	was := p.starved()
	p.queue = append(p.queue, &s)
	p.signal(was)
}

// Stream adds a segment to turn id whose audio arrives later (Append, then
// Seal), so its first bytes play while the rest is still being
// synthesised. It returns nil when the segment is not for the turn playing;
// Append and Seal ignore nil.
func (p *playout) Stream(id int, s Segment) *Segment {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id != p.turn || p.done {
		return nil
	}
	s.open = true
	p.queue = append(p.queue, &s)
	return &s
}

// Append adds audio to a streamed segment.
func (p *playout) Append(s *Segment, pieces ...[]int16) {
	n := 0
	for _, pcm := range pieces {
		n += len(pcm)
	}
	if s == nil || n == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.starved()
	s.PCM = slices.Grow(s.PCM, n)
	for _, pcm := range pieces {
		s.PCM = append(s.PCM, pcm...)
	}
	p.signal(was)
}

// Seal says a streamed segment has all its audio. failed means its audio
// stopped short (the synthesis failed): the caller cannot have heard the
// sentence whole, so its text is dropped and it never commits.
func (p *playout) Seal(s *Segment, failed bool) {
	if s == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s.open = false
	if failed {
		s.Text, s.Words = "", nil
	}
}

// Close says turn id will get no more segments.
func (p *playout) Close(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if id == p.turn {
		p.done = true
	}
}

// Tick writes one frame and reports whether it carried speech, and whether
// the current turn has now completely played (closed and drained). One
// goroutine at a time ticks (the call's pacer).
func (p *playout) Tick(w FrameWriter) (speech, finished bool, err error) {
	p.mu.Lock()
	out := p.silence
	if p.paused || p.keying > 0 {
		p.mu.Unlock()
		return false, false, w.WriteFrame(out)
	}
	for {
		if p.cur != nil && !p.cur.open && p.pos >= len(p.cur.PCM) {
			// A streamed segment sealed after its audio had all played.
			p.played = append(p.played, *p.cur)
			p.cur, p.pos = nil, 0
		}
		if p.cur != nil || len(p.queue) == 0 {
			break
		}
		p.cur, p.pos, p.queue = p.queue[0], 0, p.queue[1:]
	}
	// A streamed segment whose audio is behind the playout plays silence
	// until more arrives.
	if p.cur != nil && p.pos < len(p.cur.PCM) {
		speech = true
		end := min(p.pos+p.frame, len(p.cur.PCM))
		out = p.speech
		clear(out[copy(out, p.cur.PCM[p.pos:end]):])
		p.pos = end
		if p.pos >= len(p.cur.PCM) && !p.cur.open {
			p.played = append(p.played, *p.cur)
			p.cur, p.pos = nil, 0
		}
	}
	finished = p.turn != 0 && p.done && p.cur == nil && len(p.queue) == 0
	p.mu.Unlock()
	if err := w.WriteFrame(out); err != nil {
		return speech, finished, err
	}
	return speech, finished, nil
}

// Playing reports whether speech is queued or being played.
func (p *playout) Playing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cur != nil || len(p.queue) > 0
}

// Heard is what the caller heard of the current turn so far, by the rules
// of the heard transcript: every segment that fully played, then, in a
// segment cut short, the words whose timings the playout reached. When cut
// is true (the turn is being interrupted) and any segment of the turn is
// unverifiable, nothing is heard.
func (p *playout) heard(cut bool) string {
	var parts []string
	unverifiable := false
	for _, s := range p.played {
		unverifiable = unverifiable || s.Unverifiable
		parts = append(parts, strings.TrimSpace(s.Text))
	}
	if p.cur != nil {
		unverifiable = unverifiable || p.cur.Unverifiable
		var words []string
		for _, w := range p.cur.Words {
			if w.End > p.pos {
				break
			}
			words = append(words, w.Text)
		}
		if len(words) > 0 {
			parts = append(parts, strings.Join(words, " "))
		}
	}
	if cut {
		for _, s := range p.queue {
			unverifiable = unverifiable || s.Unverifiable
		}
		if unverifiable {
			return ""
		}
	}
	return strings.Join(nonEmpty(parts), " ")
}

// Interrupt stops the current turn at once (barge-in, hang-up): the queue
// is dropped, nothing more of the turn will play, and it returns what the
// caller heard of it.
func (p *playout) Interrupt() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.heard(true)
	p.turn, p.queue, p.cur, p.pos, p.played, p.done, p.paused = 0, nil, nil, 0, nil, false, false
	return h
}

// Finish ends a turn that played to its end and returns its text.
func (p *playout) Finish() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.heard(false)
	p.turn, p.queue, p.cur, p.pos, p.played, p.done, p.paused = 0, nil, nil, 0, nil, false, false
	return h
}

func nonEmpty(in []string) []string {
	out := in[:0]
	for _, s := range in {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
